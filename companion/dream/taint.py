"""Taint: which lines of a journal day or a transcript message are a source (issue #40).

A source is the person's own words or the agent's own conclusion. Text the agent quotes or
relays is never a source, whatever marker it carries and in whatever language, because the
rule looks at where the text sits, never at the words:

- block quotes: a line starting with `>` (nested, callouts `> [!note]`), and the lazy
  continuation lines of a quoted paragraph, as Markdown reads them;
- code: fenced and indented code blocks (`companion.vault.code.mask_blocks`);
- HTML `<blockquote>` ... `</blockquote>`;
- a whole line in quotation marks (`"..."`, `“...”`, `«...»`, `„...“`);
- forwarded and quoted email: from a separator (`---------- Forwarded message ---------`,
  `-----Original Message-----`, `Begin forwarded message:` and their Spanish, French,
  German, Italian and Portuguese forms), an attribution (`On ... wrote:`, `El ... escribió:`,
  `Le ... a écrit :`, `Am ... schrieb ...:`) or a mail header block (`From:` then `Sent:` /
  `Date:` / `To:` / `Subject:`, in those languages) to the next heading or the end;
- in an assistant message, a line that restates a tool result the message answers (a web page,
  an email, a file, any tool's output, answered earlier in the same turn): its text is in the
  result, or at least 70% of its informative word stems are. The agent's own conclusion, in its
  own words, stays a source; so does anything the person writes outside the shapes above.

`line_taint` is the one decision, used for journal days (`companion.dream.read.journal_entries`)
and for messages (`gate_messages`, from `read_transcripts`): both distillers then see only
sources. What was refused and would have been a candidate (a marked line, an item of a Learned
or Decided section) is kept as a `Refused`, reported as a `quoted` skip with its reason and
counted in the Dreaming lines.
"""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from companion.dream.blocks import Ref
from companion.dream.markers import match_marker
from companion.dream.model import Message
from companion.dream.text import fold, squash, stem, words
from companion.vault.code import mask_blocks

REASONS = {
    "quote": "in a block quote: quoted text is not a source",
    "code": "in a code block: not a source",
    "html": "in an HTML block quote: quoted text is not a source",
    "quotation": "in quotation marks: quoted text is not a source",
    "forwarded": "in a forwarded or quoted email: not a source",
    "web": "quoted from a web page: not a source",
    "email": "quoted from an email: not a source",
    "file": "quoted from a file: not a source",
    "tool": "quoted from a tool result: not a source",
}
RELAY_SHARE = 0.7  # share of a line's word stems in a tool result that makes it a restatement
MEMORY_TOOL = "memory"  # its answers say whether a write happened, nothing to relay

_QUOTE = re.compile(r"^[ \t]*>")
_QUOTE_PREFIX = re.compile(r"^(?:[ \t]*>)+[ \t]?")
_HEADING = re.compile(r"^[ \t]{0,3}#{1,6}(?:[ \t]|$)")
# A line that starts another block, so it cannot continue a quoted paragraph lazily.
_BLOCK_START = re.compile(
    r"^[ \t]{0,3}(?:[-*+][ \t]|\d{1,9}[.)][ \t]|#{1,6}(?:[ \t]|$)|`{3,}|~{3,}|<"
    r"|(?:(?:\*[ \t]*){3,}|(?:-[ \t]*){3,}|(?:_[ \t]*){3,})$)"
)
_HTML_OPEN = re.compile(r"<blockquote\b[^>]*>", re.IGNORECASE)
_HTML_CLOSE = re.compile(r"</blockquote\s*>", re.IGNORECASE)
_BULLET = re.compile(r"^[ \t]*(?:[-*+]|\d{1,9}[.)])[ \t]+(?:\[[ xX]\][ \t]+)?")
_QUOTATION = re.compile(
    r"^(?:\"[^\"]+\"|“[^“”]+[”“]|„[^„“”]+[“”]|«[^«»]+»|‘[^‘’]+’|'[^']+')[ \t]*[.,;:!]?[ \t]*$"
)
# Forwarded-message and original-message separators, folded (accents dropped, lower case).
_SEPARATORS = (
    "forwarded message",
    "original message",
    "begin forwarded message",
    "mensaje reenviado",
    "mensaje original",
    "inicio del mensaje reenviado",
    "message transfere",
    "message d'origine",
    "message original",
    "debut du message reexpedie",
    "debut du message transfere",
    "weitergeleitete nachricht",
    "ursprungliche nachricht",
    "originalnachricht",
    "anfang der weitergeleiteten nachricht",
    "messaggio inoltrato",
    "messaggio originale",
    "inizio messaggio inoltrato",
    "mensagem encaminhada",
    "mensagem original",
    "inicio da mensagem reencaminhada",
)
_SEPARATOR = re.compile(r"^[ \t]*[-_=*]*[ \t]*(?P<p>[^-_=*:]{6,60}?)[ \t]*:?[ \t]*[-_=*]*[ \t]*$")
_ATTRIBUTION = re.compile(
    r"^[ \t]*(?:on|el|le|am|il|em|op)\b.{3,240}\b"
    r"(?:wrote|escribio|a ecrit|schrieb|ha scritto|scrisse|escreveu|schreef)\b[^:\n]{0,80}:[ \t]*$"
)
_HEADER_FROM = re.compile(r"^[ \t]*(?:from|de|von|da|van)[ \t]*:", re.IGNORECASE)
_HEADER_NEXT = re.compile(
    r"^[ \t]*(?:sent|date|to|cc|subject|enviado|fecha|para|asunto|envoye|a|objet|gesendet"
    r"|datum|an|betreff|inviato|oggetto|data|assunto|enviada)[ \t]*:",
)
_JSON_START = ("{", "[", '"')
_CAMEL = re.compile(r"([a-z0-9])([A-Z])")
_NAME_WORD = re.compile(r"[a-z]+")
_EMAIL_WORDS = frozenset({"inbox", "imap", "smtp", "outlook", "himalaya", "message", "messages"})
_WEB_WORDS = frozenset(
    {"web", "fetch", "browse", "browser", "http", "https", "url", "search", "crawl", "scrape",
     "navigate", "curl", "wget", "page", "website"}
)  # fmt: skip
_FILE_WORDS = frozenset(
    {"read", "file", "files", "open", "view", "cat", "grep", "glob", "pdf", "doc", "docs",
     "document", "drive", "notion", "ls"}
)  # fmt: skip

Result = tuple[str, str]  # (family: web, email, file or tool; the result's text)


@dataclass(frozen=True)
class Refused:
    """A line that would have been a candidate but is quoted or relayed: never a source."""

    ref: Ref
    text: str  # the line as written
    why: str  # a key of REASONS
    kind: str  # the candidate it would have been: knowledge, decision, status

    @property
    def reason(self) -> str:
        return REASONS[self.why]


# --- the one decision -------------------------------------------------------------------------


def line_taint(text: str, results: Sequence[Result] = ()) -> list[str | None]:
    """For each line of `text` (split on "\\n"), why it is not a source (a key of `REASONS`),
    or None when it is one. `results` are the tool results an assistant message answers: a
    line restating one of them is relayed (its family: web, email, file, tool)."""
    lines = text.split("\n")
    why: list[str | None] = [None] * len(lines)
    masked = mask_blocks(text).split("\n")
    in_quote = False  # a quoted paragraph is open: a plain next line continues it lazily
    html = 0
    forwarded = False
    folded = [fold(ln) for ln in lines]
    for i, line in enumerate(lines):
        blank = not line.strip()
        if _HEADING.match(line) and masked[i].strip() and html == 0:
            forwarded = False  # a forwarded block runs to the next heading
        if not blank and not masked[i].strip():
            why[i] = "code"
        elif _QUOTE.match(line):
            why[i] = "quote"
        elif in_quote and not blank and not _BLOCK_START.match(line):
            why[i] = "quote"  # a lazy continuation of the quoted paragraph
        if _QUOTE.match(line):
            rest = _QUOTE_PREFIX.sub("", line)
            in_quote = bool(rest.strip()) and not _BLOCK_START.match(rest)
        elif blank or why[i] != "quote":
            in_quote = False
        opens, closes = len(_HTML_OPEN.findall(line)), len(_HTML_CLOSE.findall(line))
        if (html > 0 or opens) and why[i] is None and not blank:
            why[i] = "html"
        html = max(0, html + opens - closes)
        if not forwarded and not blank and why[i] is None:
            start = _starts_forward(folded, i)
            if start == "line":  # an attribution over `>` lines: only the line itself
                why[i] = "forwarded"
            else:
                forwarded = bool(start)
        if forwarded and why[i] is None and not blank:
            why[i] = "forwarded"
        if why[i] is None and not blank and _QUOTATION.match(_BULLET.sub("", line, count=1)):
            why[i] = "quotation"
    if results:
        for i, line in enumerate(lines):
            if why[i] is None and line.strip():
                why[i] = relayed_from(line, results)
    return why


def _starts_forward(folded: Sequence[str], i: int) -> str | bool:
    """Whether line `i` starts a forwarded or quoted email: True (to the next heading),
    "line" (an attribution whose quote is made of `>` lines), or False."""
    line = folded[i]
    m = _SEPARATOR.match(line)
    if (
        m
        and m.group("p").strip() in _SEPARATORS
        and (line.lstrip().startswith(("-", "_", "=", "*")) or line.rstrip().endswith(":"))
    ):
        return True
    if _ATTRIBUTION.match(line):
        nxt = next((ln for ln in folded[i + 1 :] if ln.strip()), "")
        return "line" if _QUOTE.match(nxt) else True
    if _HEADER_FROM.match(line):
        following = [ln for ln in folded[i + 1 : i + 5] if ln.strip()][:3]
        return any(_HEADER_NEXT.match(ln) for ln in following)
    return False


def relayed_from(line: str, results: Sequence[Result]) -> str | None:
    """The family of the first tool result that `line` restates, or None: the line's text
    (after any bullet and marker) is in the result, or most of its word stems are."""
    mk = match_marker(line)
    body = mk.text if mk is not None else _BULLET.sub("", _QUOTE_PREFIX.sub("", line), count=1)
    q = squash(body).rstrip(" .;,:!")
    stems = {stem(w) for w in words(body)}
    for family, text in results:
        if len(q) >= 12 and q in squash(text):
            return family
        if len(stems) >= 3:
            have = {stem(w) for w in words(text)}
            if len(stems & have) / len(stems) >= RELAY_SHARE:
                return family
    return None


# --- tool results -----------------------------------------------------------------------------


def tool_family(name: str) -> str:
    """web, email, file or tool, from the words of a tool's name (`web_extract`, `WebFetch`,
    `mcp__gmail__read_email`, `read_file`, `terminal`...)."""
    parts = set(_NAME_WORD.findall(_CAMEL.sub(r"\1 \2", name).casefold()))
    if parts & _EMAIL_WORDS or any("mail" in p for p in parts):
        return "email"
    if parts & _WEB_WORDS:
        return "web"
    if parts & _FILE_WORDS:
        return "file"
    return "tool"


def result_text(raw: str) -> str:
    """A tool result's text: a JSON answer's strings, one per line; else the raw text."""
    s = raw.strip()
    if s.startswith(_JSON_START):
        try:
            value = json.loads(s)
        except (json.JSONDecodeError, ValueError):
            return raw
        return "\n".join(_strings(value))
    return raw


def _strings(value: Any) -> Iterable[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for v in value.values():
            yield from _strings(v)
    elif isinstance(value, list):
        for v in value:
            yield from _strings(v)


# --- messages ---------------------------------------------------------------------------------


def gate_messages(messages: Sequence[Message]) -> tuple[list[Message], list[Refused]]:
    """`messages` (in order, tool results paired with their calls) with every line that is not
    a source blanked, and the marked lines that were refused. In each session a turn starts at
    the person's message; an assistant message answers the tool results of the turn's earlier
    calls (the memory tool's status aside)."""
    out: list[Message] = []
    refused: list[Refused] = []
    turn: dict[tuple[str, str], list[Result]] = {}
    for msg in messages:
        key = (msg.source, msg.session)
        if msg.role == "user" and msg.text.strip():
            turn[key] = []
        results = turn.setdefault(key, []) if msg.role == "assistant" else []
        text = msg.text
        if msg.role in ("user", "assistant") and text.strip():
            why = line_taint(text, results)
            if any(why):
                lines = text.split("\n")
                for line, w in zip(lines, why, strict=True):
                    mk = match_marker(line) if w else None
                    if w and mk is not None:
                        kind = "knowledge" if mk.kind == "always" else mk.kind
                        refused.append(Refused(msg.ref(), line.strip(), w, kind))
                text = "\n".join("" if w else ln for ln, w in zip(lines, why, strict=True))
                msg = dataclasses.replace(msg, text=text)
        if msg.role == "assistant":
            for call in msg.tool_calls:
                if call.result and call.name != MEMORY_TOOL:
                    turn[key].append((tool_family(call.name), result_text(call.result)))
        out.append(msg)
    return out, refused
