"""Parse one Markdown note: frontmatter, body, headings, links, tags and block ids.

Obsidian semantics, as far as they matter to a vault checker:
- Frontmatter is YAML between a first line `---` and the next `---` line. YAML that
  does not parse, or that is not a mapping, is not frontmatter: the whole note is read as body
  and a warning says so. `tags` (or the legacy `tag`) and `date` are understood; every other key
  is kept as parsed.
- Wikilinks: `[[Note]]`, `[[Note|alias]]`, `[[Note#Heading]]`, `[[Note#^block]]` (also the
  short form `[[Note^block]]`), `[[#Heading]]` (same note), `![[embed]]`, and `\\|` as the
  alias separator inside tables. Internal Markdown links `[text](Note.md)` and images
  `![alt](img.png)` count too (percent-decoded); URLs with a scheme do not.
- Nothing inside code is a link, tag, heading or block id: fenced and indented code blocks
  and inline code spans, with CommonMark's rules (see `code.py`). A code span inside a link
  does not hide it (``[[#`move`|move]]``), and a heading may be written in code
  (``### `hasTag()` ``).
- Tags: frontmatter `tags` (list or comma/space separated string) and inline `#tag` preceded by
  whitespace or the start of a line, made of letters, digits, `_`, `-` and `/`, not all digits.
  Stored without `#`, deduplicated case-insensitively (first spelling kept).
- Links in frontmatter string values (Obsidian properties such as `related: "[[Note]]"`) count.
- Obsidian comments (`%% ... %%`) and HTML comments are ordinary text here.

Line numbers are 1-based lines of the whole file. Parsing never raises on bad input.
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass, field
from pathlib import PurePath, PurePosixPath
from typing import Any, NamedTuple
from urllib.parse import unquote

from companion.vault.code import inline_masks, mask_blocks

_yaml: Any = None  # imported on first use: a warm `vault check` parses nothing


def _yaml_module() -> Any:
    global _yaml
    if _yaml is None:
        import yaml

        _yaml = yaml
    return _yaml


# Bumped whenever parsing changes what it extracts, so cached results are rebuilt.
PARSER_VERSION = 2


class Link(NamedTuple):
    """One link as written. `target` is the path part (may be "" for `[[#Heading]]`),
    `subpath` the part after `#` (a heading, `H1#H2`, or `^blockid`), `markdown` is True for
    `[text](target)` links."""

    target: str
    subpath: str
    alias: str | None
    embed: bool
    line: int
    raw: str
    markdown: bool = False

    @property
    def heading(self) -> str | None:
        if self.subpath and not self.subpath.startswith("^"):
            return self.subpath
        return None

    @property
    def block(self) -> str | None:
        return self.subpath[1:] if self.subpath.startswith("^") else None


class Heading(NamedTuple):
    level: int
    text: str
    line: int


@dataclass
class Note:
    """A parsed note. `body` is the text after the frontmatter, with `\\n` line ends;
    `body_line` is the file line on which it starts."""

    path: str
    frontmatter: dict[str, Any]
    body: str
    body_line: int = 1
    headings: list[Heading] = field(default_factory=list)
    links: list[Link] = field(default_factory=list)
    tags: list[str] = field(default_factory=list)
    block_ids: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    date: dt.date | None = None

    @property
    def title(self) -> str:
        """The note's name as Obsidian shows it: the file name without `.md`."""
        name = self.path.rpartition("/")[2]
        return name[:-3] if name[-3:].lower() == ".md" else name

    @property
    def embeds(self) -> list[Link]:
        return [link for link in self.links if link.embed]


# --- regular expressions -------------------------------------------------------------------

_FM_END = re.compile(r"^---[ \t]*$", re.M)
_FM_START = re.compile(r"---[ \t]*\n")
# Patterns start with a literal so the regex engine can skip ahead; what precedes a match
# (`!` of an embed, the whitespace before a tag) is checked by hand.
_WIKILINK = re.compile(r"\[\[([^\[\]\n]+)\]\]")
_MDLINK = re.compile(
    r"\[([^\[\]\n]*)\]\(\s*(<[^<>\n]+>|[^\s()<>]+)(?:[ \t]+(?:\"[^\"\n]*\"|'[^'\n]*'))?[ \t]*\)"
)
_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.\-]*:|^//")
_HEADING = re.compile(r"#(#{0,5})[ \t]+([^\n]*)")
_TAG = re.compile(r"#([\w/\-]+)")
_BLOCK_ID = re.compile(r"\^([A-Za-z0-9\-]+)[ \t]*$", re.M)


def split_frontmatter(text: str) -> tuple[str | None, int, int, str | None]:
    """(yaml_text or None, body offset, body first line, warning) for `\\n`-normalised text."""
    if not text.startswith("---"):
        return None, 0, 1, None
    m = _FM_START.match(text)
    if not m:
        return None, 0, 1, None
    end = _FM_END.search(text, m.end())
    if end is None:
        return None, 0, 1, "frontmatter has no closing '---' line: read as body"
    yaml_text = text[m.end() : end.start()]
    body_start = end.end() + 1 if end.end() < len(text) else end.end()
    body_line = text.count("\n", 0, body_start) + 1
    return yaml_text, body_start, body_line, None


def load_frontmatter(yaml_text: str) -> tuple[dict[str, Any] | None, str | None]:
    """(mapping, None) or (None, warning). Any failure of the YAML parser is a warning: the
    note comes from a file anyone may have written."""
    if not yaml_text.strip():
        return {}, None
    yaml = _yaml_module()
    # the C loader is ~10x faster, with the same safe semantics as yaml.safe_load
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    try:
        data = yaml.load(yaml_text, Loader=loader)  # noqa: S506 - a safe loader
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark
        where = f" (line {mark.line + 2})" if mark is not None else ""  # +1: the '---' line
        return None, f"frontmatter is not valid YAML{where}: read as body"
    except Exception as exc:  # noqa: BLE001 - recursion, bad dates, anything: report, go on
        return None, f"frontmatter is not valid YAML ({type(exc).__name__}): read as body"
    if data is None:
        return {}, None
    if not isinstance(data, dict):
        return None, f"frontmatter is a YAML {type(data).__name__}, not a mapping: read as body"
    return data, None


def frontmatter_tags(fm: dict[str, Any]) -> list[str]:
    raw = fm.get("tags", fm.get("tag"))
    if raw is None:
        return []
    items: list[Any]
    if isinstance(raw, str):
        items = re.split(r"[,\s]+", raw)
    elif isinstance(raw, list | tuple):
        items = list(raw)
    else:
        items = [raw]
    out = []
    for item in items:
        if isinstance(item, bool) or not isinstance(item, str | int | float):
            continue
        tag = str(item).strip().lstrip("#").strip()
        if tag:
            out.append(tag)
    return out


def frontmatter_date(fm: dict[str, Any]) -> dt.date | None:
    value = fm.get("date")
    if isinstance(value, dt.datetime):
        return value.date()
    if isinstance(value, dt.date):
        return value
    if isinstance(value, str):
        try:
            return dt.date.fromisoformat(value.strip()[:10])
        except ValueError:
            return None
    return None


def _split_wikilink(inner: str) -> tuple[str, str, str | None]:
    """`Note#Heading|alias` -> ("Note", "Heading", "alias")."""
    if "|" not in inner and "#" not in inner and "^" not in inner:
        return inner.strip(), "", None
    alias = None
    bar = inner.find("|")
    if bar >= 0:
        alias = inner[bar + 1 :]
        inner = inner[:bar]
        if inner.endswith("\\"):  # `[[Note\|alias]]` inside a table
            inner = inner[:-1]
    target, _, subpath = inner.partition("#")
    if not subpath and "^" in target:  # the short form [[Note^block]]
        target, _, block = target.partition("^")
        subpath = "^" + block
    return target.strip(), subpath.strip(), alias


def _dedupe_ci(items: list[str]) -> list[str]:
    seen: set[str] = set()
    out = []
    for item in items:
        k = item.casefold()
        if k not in seen:
            seen.add(k)
            out.append(item)
    return out


def extract_links(masked: str, line0: int = 1) -> list[Link]:
    """Wikilinks and internal Markdown links in code-masked text (`mask_code`), in order of
    appearance."""
    links: list[Link] = []
    starts: list[int] = []
    if "[[" in masked:
        line, last = line0, 0
        count = masked.count
        for m in _WIKILINK.finditer(masked):
            start, end = m.span()
            target, subpath, alias = _split_wikilink(m[1])
            if not target and not subpath:
                continue
            embed = start > 0 and masked[start - 1] == "!"
            if embed:
                start -= 1
            line += count("\n", last, start)
            last = start
            links.append(Link(target, subpath, alias, embed, line, masked[start:end]))
            starts.append(start)
    if "](" in masked:
        n_wiki = len(links)
        line, last = line0, 0
        for m in _MDLINK.finditer(masked):
            dest = m[2]
            if dest.startswith("<"):
                dest = dest[1:-1]
            if _SCHEME.match(dest) or dest.startswith("#"):
                continue
            target, _, subpath = unquote(dest).partition("#")
            target = target.strip()
            if not target:
                continue
            start = m.start()
            embed = start > 0 and masked[start - 1] == "!"
            if embed:
                start -= 1
            line += masked.count("\n", last, start)
            last = start
            raw = masked[start : m.end()]
            links.append(Link(target, subpath.strip(), m[1] or None, embed, line, raw, True))
            starts.append(start)
        if n_wiki and len(links) > n_wiki:
            order = sorted(range(len(links)), key=starts.__getitem__)
            links = [links[i] for i in order]
    return links


def extract_tags(masked: str) -> list[str]:
    if "#" not in masked:
        return []
    out = []
    for m in _TAG.finditer(masked):
        start = m.start()
        if start and not masked[start - 1].isspace():
            continue
        tag = m[1].rstrip("/")
        if tag and not tag.isdigit():
            out.append(tag)
    return out


def _at_line_start(text: str, pos: int) -> bool:
    """True when only up to three spaces/tabs precede `pos` on its line."""
    i = pos
    while i > 0 and pos - i <= 3:
        c = text[i - 1]
        if c == "\n":
            return True
        if c not in " \t":
            return False
        i -= 1
    return i == 0 and pos <= 3


def extract_headings(masked: str, line0: int = 1) -> list[Heading]:
    out: list[Heading] = []
    if "#" not in masked:
        return out
    line, last = line0, 0
    for m in _HEADING.finditer(masked):
        start = m.start()
        if not _at_line_start(masked, start):
            continue
        text = m[2].strip()
        if text.endswith("#"):  # closing sequence: `## Title ##`
            stripped = text.rstrip("#")
            if not stripped or stripped[-1] in " \t":
                text = stripped.strip()
        if not text:
            continue
        line += masked.count("\n", last, start)
        last = start
        out.append(Heading(len(m[1]) + 1, text, line))
    return out


def extract_block_ids(masked: str) -> list[str]:
    """`^id` at the end of a line, after a space or right after a link or embed
    (`![[x.png]]^id`), in text with all code masked (`mask_all_code`)."""
    if "^" not in masked:
        return []
    return [
        m[1]
        for m in _BLOCK_ID.finditer(masked)
        if m.start() == 0
        or masked[m.start() - 1] in " \t\n"
        or masked.startswith("]]", m.start() - 2)
    ]


def normalise_newlines(text: str) -> str:
    if "\r" in text:
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    return text


def parse_note(text: str, path: str | PurePosixPath = "") -> Note:
    """Parse the text of one note. `path` is its vault-relative path (used for the title)."""
    path = path.as_posix() if isinstance(path, PurePath) else str(path)
    text = normalise_newlines(text)
    if text.startswith("\ufeff"):
        text = text[1:]
    warnings: list[str] = []
    fm: dict[str, Any] = {}
    yaml_text, body_start, body_line, warning = split_frontmatter(text)
    if warning:
        warnings.append(warning)
    if yaml_text is not None:
        data, warning = load_frontmatter(yaml_text)
        if data is None:
            warnings.append(warning or "frontmatter ignored")
            yaml_text, body_start, body_line = None, 0, 1
        else:
            fm = data
    body = text[body_start:]
    blocks = mask_blocks(body)  # headings may be written in code
    linked, plain = inline_masks(blocks)  # code in links kept; no tag or block id in any code
    links = extract_links(linked, body_line)
    if yaml_text and "[[" in yaml_text:
        links = extract_links(yaml_text, 2) + links
    tags = _dedupe_ci(frontmatter_tags(fm) + extract_tags(plain))
    block_ids = extract_block_ids(plain)
    return Note(
        path=path,
        frontmatter=fm,
        body=body,
        body_line=body_line,
        headings=extract_headings(blocks, body_line),
        links=links,
        tags=tags,
        block_ids=block_ids,
        warnings=warnings,
        date=frontmatter_date(fm),
    )
