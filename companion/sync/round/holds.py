"""What a human device keeps out of the vault until the person approves it.

An agent device holds the vault key, so the relay and the crypto cannot tell its writes from a
person's: only the kind its invite fixed can. An agent that reads the web can be talked into
writing anything, and some files are not notes. On a device of kind human, a remote change
written by an agent device is **held** (not applied, listed in `companion status`, the tray
menu and `companion held list`, applied or refused by the person with `companion held
accept|refuse`) when it:

1. changes what sync leaves out: `.companionignore` (an agent's `knowledge/` in it would cut
   the person's own devices off from each other for that folder);
2. changes the companion's settings in the vault: anything under `.companion/` except what
   agents legitimately write there, the dream's reports, ledger and proposals
   (`.companion/dreams/`), the agent's write log (`.companion/agent/`) and every device's key
   announcement (`.companion/keys/`: a claim, not trust, docs/trust.md §1). The person's
   roster (`.companion/roster/`) is held too, though trust never depends on that (an agent
   cannot make an entry verify); a future setting stored there is held from day one;
3. is inside an Obsidian config folder: `.obsidian/`, and any other top-level hidden folder
   with Obsidian's shape (`config_folders`: a person may point Obsidian at `.obsidian-mobile`
   or any dot-folder). Obsidian runs `plugins/*/main.js` once `community-plugins.json` lists
   it, applies CSS snippets and themes, rebinds keys from `hotkeys.json`, and the core and
   community plugins' settings (`daily-notes.json`, `templates.json`, Templater's
   `plugins/templater-obsidian/data.json`...) name the templates it runs. The whole folder
   is held; its per-device files (`workspace.json`) are ignored anyway;
4. is a script file (`SCRIPT_EXTENSIONS`, anywhere): Templater user scripts, Dataview's
   `dv.view`, CustomJS, QuickAdd macros and Datacore load JavaScript from vault files;
5. sets the executable bit (or is a new revision of a file that has it);
6. is a note (`.md`, `.canvas`) whose content holds code a plugin runs (`note_code`):
   Templater commands `<% ... %>`, `dataviewjs` / Datacore / JS Engine / Meta Bind / Buttons /
   Execute Code / RunJS blocks, inline DataviewJS `` `$= ...` ``, and `obsidian://` links to the
   plugins that run commands or code (Advanced URI, Actions URI, Shell commands, QuickAdd).
   Such a note is held, not rewritten: a neutralised copy would differ from the relay's and be
   pushed back as the person's own edit.
7. is outside the agent's scope (`companion.sync.round.scopes`): when the vault has a
   `.companion/scopes.json`, an agent's change outside the folders the person let that agent
   write waits too, with reason "is outside NAME's scope" (checked after 1-3, so the scopes
   file itself is held as a setting).

Matching is case-insensitive (`hold_fold`), as macOS, Windows and Android file systems open
names. Everything here is pure, and pinned for both clients (this one and the Obsidian
plugin's `src/sync/policy.ts`) by `tests/vectors/holds_v1.json`.

Refusing re-commits this device's own version (or a deletion, when it has none) on top, so
every device converges on the person's choice. Agent devices apply everything (they are
servers that need what the person approved); a human device's changes are never held.
`sync.hold_agent_changes = false` turns holding off; `sync.hold_patterns` adds paths
(gitignore syntax) to the built-in rules, never removes any.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from pathspec import GitIgnoreSpec

if TYPE_CHECKING:
    from companion.config import Config
    from companion.sync.round.scopes import Scopes

from companion.sync.local.pathsafe import fold
from companion.sync.remote.vault import HUMAN, RemoteChange

SYNC_RULES = "changes what sync leaves out (.companionignore)"
SETTINGS = "changes the companion's settings in the vault"
CONFIG = "changes Obsidian's plugins, themes or settings"
SCRIPT = "is a script that Obsidian plugins run"
EXECUTABLE = "sets the executable bit"
NOTE_CODE = "holds code a plugin runs"  # + ": <what>"
UNCHECKED = "is a note whose content could not be checked for code"
LISTED = "is on this device's list of held paths (sync.hold_patterns)"

IGNORE_FILE = ".companionignore"
COMPANION_DIR = ".companion"
# what agents write there: dream reports, the write log, their own key announcements
AGENT_FOLDERS = (".companion/dreams/", ".companion/agent/", ".companion/keys/")
OBSIDIAN_DIR = ".obsidian"
# a file at one of these places inside a top-level hidden folder gives it Obsidian's shape
SHAPE_FILES = frozenset(
    {
        "app.json",
        "appearance.json",
        "community-plugins.json",
        "core-plugins.json",
        "core-plugins-migration.json",
        "daily-notes.json",
        "hotkeys.json",
        "templates.json",
    }
)
SHAPE_MANIFEST_IN = frozenset({"plugins", "themes"})  # plugins/<id>/manifest.json
SCRIPT_EXTENSIONS = (".js", ".mjs", ".cjs", ".jsx", ".ts", ".tsx")
NOTE_EXTENSIONS = (".md", ".canvas")
NOTE_CHECK_BYTES = 32 * 1024 * 1024  # a larger agent-written note is held unread


def hold_fold(s: str) -> str:
    """The case-insensitive key of a held path: `pathsafe.fold`, the one fold of both engines."""
    return fold(s)


def _top(folded: str) -> tuple[str, str] | None:
    i = folded.find("/")
    return None if i <= 0 else (folded[:i], folded[i + 1 :])


def _is_shape(rest: str) -> bool:
    if rest in SHAPE_FILES:
        return True
    parts = rest.split("/")
    shaped = len(parts) == 3 and parts[0] in SHAPE_MANIFEST_IN and parts[1] != ""
    return shaped and parts[2] == "manifest.json"


def config_folders(known: Iterable[str]) -> frozenset[str]:
    """The (folded) top-level folders that are, or look like, an Obsidian config folder:
    `.obsidian`, and every other top-level folder whose name starts with a dot (Obsidian takes
    only such a folder as its config folder) holding, among `known` (the vault's files and
    the incoming changes), one of `SHAPE_FILES` or a `plugins/*/manifest.json` /
    `themes/*/manifest.json`. `.companion` is the companion's own and never one."""
    out = {OBSIDIAN_DIR}
    for path in known:
        split = _top(hold_fold(path))
        if split is None:
            continue
        top, rest = split
        if top.startswith(".") and top != COMPANION_DIR and _is_shape(rest):
            out.add(top)
    return frozenset(out)


def path_reason(path: str, config_dirs: Collection[str] = frozenset({OBSIDIAN_DIR})) -> str | None:
    """Why an agent's change at `path` waits for the person, by its path alone (None: it does
    not). `config_dirs`: `config_folders` of what is known."""
    f = hold_fold(path)
    if f == IGNORE_FILE:
        return SYNC_RULES
    split = _top(f)
    if split is not None:
        top = split[0]
        if top == COMPANION_DIR:
            return None if f.startswith(AGENT_FOLDERS) else SETTINGS
        if top in config_dirs or top == OBSIDIAN_DIR:
            return CONFIG
    if f.endswith(SCRIPT_EXTENSIONS):
        return SCRIPT
    return None


def is_note(path: str) -> bool:
    """Notes Obsidian renders (and plugins read as code): their content is checked."""
    return hold_fold(path).endswith(NOTE_EXTENSIONS)


# --------------------------------------------------------------------- code inside notes

# ASCII-only case-insensitivity (re.A): the same as a JavaScript /i regex without the u flag
_FENCE = re.compile(
    r"(?:`{3,}|~{3,})[ \t]*"
    r"(dataviewjs|datacore(?:jsx?|tsx?)|js-engine|meta-bind-js-view|meta-bind-button|button"
    r"|(?:run|pre|post)-[a-z0-9+#_-]+)(?![a-z0-9_-])",
    re.I | re.A,
)
_RUNJS = re.compile(r"(?:`{3,}|~{3,})[^\r\n`~]*RunJS", re.I | re.A)
_INLINE_JS = re.compile(r"`+[ \t]*\$=", re.A)
_URI = re.compile(
    r"obsidian:(?://)?(advanced-uri|actions-uri|shell-commands|quickadd)(?![a-z0-9_-])",
    re.I | re.A,
)
_PERCENT = re.compile(r"%([0-9a-fA-F]{2})", re.A)
_ENTITY = re.compile(r"&#(?:[xX]([0-9a-fA-F]{1,6})|([0-9]{1,7}));?", re.A)
_ASCII_SHOWN = range(0x20, 0x7F)


def _decode_ascii(text: str) -> str:
    """Percent escapes and numeric character references of printable ASCII, decoded (the
    forms a link can hide `obsidian://` behind); everything else as it is."""

    def pct(m: re.Match[str]) -> str:
        n = int(m.group(1), 16)
        return chr(n) if n in _ASCII_SHOWN else m.group(0)

    def ent(m: re.Match[str]) -> str:
        n = int(m.group(1), 16) if m.group(1) else int(m.group(2))
        return chr(n) if n in _ASCII_SHOWN else m.group(0)

    return _ENTITY.sub(ent, _PERCENT.sub(pct, text))


def note_code(text: str) -> str | None:
    """What code a plugin would run in this note's text, or None. Whole-text checks (inside
    code fences too: Templater reads the raw file, and a fence is where DataviewJS lives)."""
    i = text.find("<%")
    if i >= 0 and text.find("%>", i + 2) >= 0:
        return "a Templater command (<% ... %>)"
    m = _FENCE.search(text)
    if m:
        return f"a {m.group(1).lower()} code block"
    if _RUNJS.search(text):
        return "a RunJS code block"
    if _INLINE_JS.search(text):
        return "an inline DataviewJS query (`$= ...`)"
    m = _URI.search(_decode_ascii(text))
    if m:
        return f"an obsidian://{m.group(1).lower()} link"
    return None


def content_reason(path: str, content: bytes | None) -> str | None:
    """Why an agent's version of note `path` waits for the person, by its content (None: it
    does not, or `path` is no note). `content` None: it could not be read, so it waits."""
    if not is_note(path):
        return None
    if content is None:
        return UNCHECKED
    what = note_code(content.decode("utf-8", errors="replace"))
    return None if what is None else f"{NOTE_CODE}: {what}"


# --------------------------------------------------------------------- the policy


@dataclass(frozen=True)
class HoldPolicy:
    """Pure: which remote changes this device holds for the person."""

    device_kind: str
    enabled: bool = True
    patterns: Sequence[str] = ()  # extra paths held (gitignore syntax, case-insensitive)
    scopes: Scopes | None = None  # the vault's scopes file (None: no scope rule)

    def __post_init__(self) -> None:
        spec = GitIgnoreSpec.from_lines([hold_fold(p) for p in self.patterns])
        object.__setattr__(self, "_spec", spec)

    @property
    def active(self) -> bool:
        return self.enabled and self.device_kind == HUMAN

    def applies(self, ch: RemoteChange) -> bool:
        """Whether `ch` is an agent's change this device may hold at all."""
        return self.active and ch.author_kind != HUMAN

    def needs_content(self, ch: RemoteChange) -> bool:
        """Whether deciding about `ch` needs its content (an agent's version of a note that
        its scope does not already hold)."""
        if not (self.applies(ch) and not ch.deleted and is_note(ch.path)):
            return False
        return self.scope_reason(ch) is None

    def with_scopes(self, scopes: Scopes | None) -> HoldPolicy:
        return self if scopes is self.scopes else replace(self, scopes=scopes)

    def scope_reason(self, ch: RemoteChange) -> str | None:
        """Rule 7: why `ch` is outside its author's scope (None: inside, or no scopes)."""
        if self.scopes is None:
            return None
        paths = [ch.path] + ([ch.meta.rename_from] if ch.meta.rename_from else [])
        return self.scopes.reason(ch.device_id, ch.author_name, paths)

    def reason(
        self,
        ch: RemoteChange,
        config_dirs: Collection[str] = frozenset({OBSIDIAN_DIR}),
        content: bytes | None = None,
        *,
        unchanged: bool = False,
    ) -> str | None:
        """Why `ch` must wait for the person, or None when it may be applied. `content`: its
        content, when `needs_content`; `unchanged`: this device already has those exact bytes
        (a rename, a re-commit), so there is nothing new to check in them."""
        if not self.applies(ch):
            return None
        paths = [ch.path] + ([ch.meta.rename_from] if ch.meta.rename_from else [])
        for p in paths:
            why = path_reason(p, config_dirs)
            if why is not None:
                return why
        spec: GitIgnoreSpec = self._spec  # type: ignore[attr-defined]
        if any(spec.match_file(hold_fold(p)) for p in paths):
            return LISTED
        why = self.scope_reason(ch)
        if why is not None:
            return why
        if ch.meta.executable and not ch.deleted:
            return EXECUTABLE
        if ch.deleted or unchanged:
            return None
        return content_reason(ch.path, content)


def policy_from_config(config: Config, device_kind: str) -> HoldPolicy:
    sync = config.settings.sync
    return HoldPolicy(
        device_kind=device_kind,
        enabled=sync.hold_agent_changes,
        patterns=tuple(sync.hold_patterns),
    )
