"""The configuration file: one TOML file, a fixed schema, clear errors.

The schema below is the single source of truth: defaults, types and documentation
(`companion config show --defaults` prints it; docs/configuration.md describes it). A bad file
is refused with an error that names the file, the key and the problem (exit status 2) instead
of being guessed at.
"""

from __future__ import annotations

import copy
import datetime as dt
import re
import tomllib
from collections.abc import Callable
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, Literal
from urllib.parse import urlsplit

from companion.errors import ConfigError
from companion.fileio import KEEP, write_text_atomic
from companion.paths import DevicePaths, device_paths

# ---- value rules shared by every reader (CLI, desktop app, scheduler, doctor) -----------------

_HHMM = re.compile(r"([01]?[0-9]|2[0-3]):([0-5][0-9])")  # ASCII digits only


def parse_hhmm(text: str) -> dt.time:
    """A time of day written H:MM or HH:MM on the 24-hour clock ("2:00" is "02:00").

    The one parser of configured times: the config schema, the settings window, the nightly
    schedule and the desktop dream clock all call it. Raises ValueError otherwise.
    """
    m = _HHMM.fullmatch(text.strip()) if isinstance(text, str) else None
    if m is None:
        raise ValueError(f"expected a time HH:MM on the 24-hour clock (e.g. 02:00), got {text!r}")
    return dt.time(int(m.group(1)), int(m.group(2)))


def hhmm_problem(value: str) -> str | None:
    try:
        parse_hhmm(value)
    except ValueError as exc:
        return str(exc)
    return None


def timezone_problem(value: str) -> str | None:
    """None for an IANA time zone name zoneinfo knows (Europe/Madrid, UTC), else why not."""
    from zoneinfo import ZoneInfo, ZoneInfoNotFoundError  # only when a time zone is set

    try:
        if value.strip() != value or not value:
            raise ValueError(value)
        ZoneInfo(value)
    except (ZoneInfoNotFoundError, ValueError, OSError):
        return f"unknown time zone {value!r} (use an IANA name such as Europe/Madrid)"
    return None


def url_problem(value: str) -> str | None:
    """None for an empty value or an http(s) URL with a host (and a valid port)."""
    if not value:
        return None
    bad = f"expected an http:// or https:// URL such as https://relay.example.org, got {value!r}"
    try:
        parts = urlsplit(value)
        parts.port  # noqa: B018 - raises ValueError on a bad port
    except ValueError:
        return bad
    if (
        parts.scheme not in ("http", "https")
        or not parts.hostname
        or any(c.isspace() for c in value)
    ):
        return bad
    return None


@dataclass(frozen=True)
class Key:
    type: type | tuple[type, ...]
    default: Any
    doc: str
    must_exist: bool = False  # a path that must exist when set
    choices: tuple[str, ...] | None = None
    minimum: float | None = None
    maximum: float | None = None
    # a rule beyond the type ("time", "timezone", "url"): `RULES[rule]` says what is wrong
    rule: str | None = None


def origins_problem(value: Any) -> str | None:
    """None for a list of web origins: scheme://host[:port], no path, no wildcard."""
    for item in value:
        bad = f"expected origins such as http://localhost:3000 (no path, no '*'), got {item!r}"
        if not isinstance(item, str) or "*" in item or any(c.isspace() for c in item):
            return bad
        try:
            parts = urlsplit(item)
            parts.port  # noqa: B018 - raises ValueError on a bad port
        except ValueError:
            return bad
        if not parts.scheme or not parts.netloc or parts.path.strip("/") or parts.query:
            return bad
    return None


RULES: dict[str, Callable[[Any], str | None]] = {
    "origins": origins_problem,
    "time": hhmm_problem,
    "timezone": timezone_problem,
    "url": url_problem,
}


def setting(
    type_: type | tuple[type, ...],
    default: Any,
    doc: str,
    **rules: Any,
) -> Any:
    """One key of the file: its TOML type, default, documentation and rules (a `Key`), kept
    in the dataclass field's metadata so the schema and the typed settings are one thing."""
    key = Key(type_, default, doc, **rules)
    value = tuple(default) if isinstance(default, list) else default
    return field(default=value, metadata={"key": key})


@dataclass(frozen=True)
class VaultSettings:
    """[vault]"""

    path: str = setting(
        str,
        "",
        "Default vault folder for commands and the desktop app.",
        must_exist=True,
    )
    max_file_mb: float = setting(
        (int, float),
        20,
        "Notes larger than this are skipped with a warning.",
        minimum=0,
    )
    human_edit_window_hours: float = setting(
        (int, float),
        24,
        "A note edited by a person this recently is never rewritten.",
        minimum=0,
    )


@dataclass(frozen=True)
class SyncSettings:
    """[sync]"""

    relay_url: str = setting(
        str,
        "",
        "Relay base URL, e.g. https://relay.example.org.",
        rule="url",
    )
    device_name: str = setting(
        str,
        "",
        "This device's name as other devices see it.",
    )
    kind: Literal["human", "agent"] = setting(
        str,
        "human",
        "Who edits this copy: human or agent.",
        choices=("human", "agent"),
    )
    ignore: tuple[str, ...] = setting(
        list,
        [],
        "Extra ignore patterns (gitignore syntax).",
    )
    mass_delete_ratio: float = setting(
        (int, float),
        0.5,
        "A round deleting more than this share of the vault asks first (and one deleting "
        "every file, whatever the vault's size).",
        minimum=0,
        maximum=1,
    )
    max_file_mb: float = setting(
        (int, float),
        200,
        "Files larger than this are not synced.",
        minimum=0,
    )
    paused: bool = setting(
        bool,
        False,
        "Pause syncing (desktop app).",
    )
    hold_agent_changes: bool = setting(
        bool,
        True,
        "On a human device, hold agent changes to sync rules, settings, Obsidian's config, "
        "scripts, exec bits and notes that are code, for approval.",
    )
    hold_patterns: tuple[str, ...] = setting(
        list,
        [],
        "More paths held for approval (gitignore syntax), added to the built-in rules.",
    )


@dataclass(frozen=True)
class DreamSettings:
    """[dream]"""

    time: str = setting(
        str,
        "02:00",
        "Nightly dream time, HH:MM (24-hour clock).",
        rule="time",
    )
    timezone: str = setting(
        str,
        "Europe/Madrid",
        "Time zone of the dream time (IANA name).",
        rule="timezone",
    )
    window_hours: int = setting(
        int,
        48,
        "Transcript window, 24 to 48 hours.",
        minimum=24,
        maximum=48,
    )
    distiller: Literal["rules", "llm"] = setting(
        str,
        "rules",
        "rules (offline) or llm.",
        choices=("rules", "llm"),
    )
    local_fallback: bool = setting(
        bool,
        True,
        "Dream locally when the server has not by the grace time.",
    )
    grace_minutes: int = setting(
        int,
        120,
        "How long after the dream time to wait for the server.",
        minimum=0,
    )
    max_removals: int = setting(
        int,
        10,
        "Most lines/entries one dream may remove.",
        minimum=0,
    )
    language: Literal["auto", "en", "es", "fr", "de", "pt", "it"] = setting(
        str,
        "auto",
        "Journal language: auto, en, es, fr, de, pt or it.",
        choices=("auto", "en", "es", "fr", "de", "pt", "it"),
    )
    sources: tuple[dict[str, Any], ...] = setting(
        list,
        [],
        "Transcript sources: tables with kind, path and an optional name (its provenance label).",
    )
    apply: Literal["auto", "propose-risky", "propose-all"] = setting(
        str,
        "propose-risky",
        "Which MEMORY.md / USER.md changes wait for you (`companion dream proposals`): auto "
        "(none), propose-risky (a fact only an assistant message says, any replacement or "
        "removal of an entry, what the guard is unsure of) or propose-all.",
        choices=("auto", "propose-risky", "propose-all"),
    )


@dataclass(frozen=True)
class MemorySettings:
    """[memory]"""

    hermes_home: str = setting(
        str,
        "",
        "Hermes home (default $HERMES_HOME or ~/.hermes).",
    )
    memory_char_limit: int = setting(
        int,
        2200,
        "Character budget of MEMORY.md.",
        minimum=1,
    )
    user_char_limit: int = setting(
        int,
        1375,
        "Character budget of USER.md.",
        minimum=1,
    )


@dataclass(frozen=True)
class LlmSettings:
    """[llm]"""

    base_url: str = setting(
        str,
        "",
        "OpenAI-compatible endpoint, e.g. http://127.0.0.1:11434/v1.",
        rule="url",
    )
    model: str = setting(
        str,
        "",
        "Model name at that endpoint.",
    )
    max_tokens: int = setting(
        int,
        20000,
        "Token budget per dream.",
        minimum=1,
    )
    timeout_s: float = setting(
        (int, float),
        60,
        "Time budget per dream, seconds.",
        minimum=1,
    )
    retries: int = setting(
        int,
        2,
        "Retries per request.",
        minimum=0,
    )


@dataclass(frozen=True)
class NotifySettings:
    """[notify]"""

    morning_time: str = setting(
        str,
        "08:00",
        "The night's dream report, landing before this time, is told at this time, HH:MM "
        "(one landing later, or a dream run by hand, is told when it lands).",
        rule="time",
    )
    dream_landed: bool = setting(
        bool,
        True,
        "Notify when the nightly dream lands.",
    )
    conflicts: bool = setting(
        bool,
        True,
        "Notify on conflict copies.",
    )
    mass_delete: bool = setting(
        bool,
        True,
        "Notify when the mass-deletion guard trips.",
    )
    offline_minutes: int = setting(
        int,
        30,
        "Notify when the relay is unreachable this long.",
        minimum=1,
    )
    secrets: bool = setting(
        bool,
        True,
        "Notify when a secret is found in a note.",
    )
    local_dream: bool = setting(
        bool,
        True,
        "Notify when a local fallback dream ran.",
    )


@dataclass(frozen=True)
class GuiSettings:
    """[gui]"""

    language: Literal["auto", "en", "es"] = setting(
        str,
        "auto",
        "Interface language: auto, en or es.",
        choices=("auto", "en", "es"),
    )
    start_at_login: bool = setting(
        bool,
        False,
        "Start the tray app at login.",
    )


@dataclass(frozen=True)
class SecretsSettings:
    """[secrets]"""

    allowlist: tuple[str, ...] = setting(
        list,
        [],
        "Regular expressions of values never reported as secrets.",
    )
    backend: Literal["keyring", "file"] = setting(
        str,
        "keyring",
        "Where secrets live: keyring, or file (headless, owner-only).",
        choices=("keyring", "file"),
    )


@dataclass(frozen=True)
class McpSettings:
    """[mcp]"""

    allowed_origins: tuple[str, ...] = setting(
        list,
        [],
        "Web page origins allowed to call `companion mcp --transport http`, e.g. "
        "http://localhost:3000 (none by default: a request with any other Origin is refused).",
        rule="origins",
    )
    require_token: bool = setting(
        bool,
        True,
        "Over HTTP, require the bearer token (`companion mcp token VAULT`).",
    )
    writes_per_minute: int = setting(
        int,
        30,
        "Most writes (notes, journal, memory) an agent makes through MCP in one minute; "
        "0: no limit.",
        minimum=0,
    )
    bytes_per_day: int = setting(
        int,
        10_000_000,
        "Most bytes of notes an agent writes through MCP in one UTC day; 0: no limit.",
        minimum=0,
    )
    new_notes_per_day: int = setting(
        int,
        200,
        "Most new notes an agent creates through MCP in one UTC day; 0: no limit.",
        minimum=0,
    )


@dataclass(frozen=True)
class Settings:
    """The whole configuration, typed: `config.settings.sync.mass_delete_ratio`.

    Built from the validated values (lists become tuples), so every value here already passed
    `value_problem`. Immutable: change a value with `Config.set`, then read `settings` again.
    """

    vault: VaultSettings = field(default_factory=VaultSettings)
    sync: SyncSettings = field(default_factory=SyncSettings)
    dream: DreamSettings = field(default_factory=DreamSettings)
    memory: MemorySettings = field(default_factory=MemorySettings)
    llm: LlmSettings = field(default_factory=LlmSettings)
    notify: NotifySettings = field(default_factory=NotifySettings)
    gui: GuiSettings = field(default_factory=GuiSettings)
    secrets: SecretsSettings = field(default_factory=SecretsSettings)
    mcp: McpSettings = field(default_factory=McpSettings)

    @classmethod
    def from_values(cls, values: dict[str, dict[str, Any]]) -> Settings:
        sections = {}
        for f in fields(cls):
            section_cls = _SECTIONS[f.name]
            table = {
                name: tuple(v) if isinstance(v, list) else v
                for name, v in values.get(f.name, {}).items()
            }
            sections[f.name] = section_cls(**table)
        return cls(**sections)


_SECTIONS: dict[str, type] = {
    "vault": VaultSettings,
    "sync": SyncSettings,
    "dream": DreamSettings,
    "memory": MemorySettings,
    "llm": LlmSettings,
    "notify": NotifySettings,
    "gui": GuiSettings,
    "secrets": SecretsSettings,
    "mcp": McpSettings,
}

# The schema (types, defaults, docs, rules) read off the dataclasses: the file, the CLI's
# `config show --defaults`, docs/configuration.md's test and the settings window use it.
SCHEMA: dict[str, dict[str, Key]] = {
    section: {f.name: f.metadata["key"] for f in fields(cls)} for section, cls in _SECTIONS.items()
}


def defaults() -> dict[str, dict[str, Any]]:
    return {s: {k: copy.deepcopy(v.default) for k, v in keys.items()} for s, keys in SCHEMA.items()}


def _type_name(t: type | tuple[type, ...]) -> str:
    names = {int: "integer", float: "number", str: "string", bool: "boolean", list: "list"}
    if isinstance(t, tuple):
        return " or ".join(names.get(x, x.__name__) for x in t)
    return names.get(t, t.__name__)


def value_problem(section: str, name: str, value: Any) -> str | None:
    """What is wrong with `value` for [section] name (None: fine). The single validation of a
    value: loading the file, `Config.set` and the settings window all ask this."""
    key = SCHEMA[section][name]
    # bool is a subclass of int: refuse true/false where a number is expected
    types = key.type if isinstance(key.type, tuple) else (key.type,)
    if isinstance(value, bool) and bool not in types:
        return f"expected {_type_name(key.type)}, got boolean {value!r}"
    if not isinstance(value, types):
        return f"expected {_type_name(key.type)}, got {type(value).__name__} {value!r}"
    if key.choices is not None and value not in key.choices:
        return f"{value!r} is not one of {', '.join(key.choices)}"
    number: Any = value  # a number when the key has a minimum or maximum (checked above)
    if key.minimum is not None and number < key.minimum:
        return f"{value!r} is below the minimum {key.minimum}"
    if key.maximum is not None and number > key.maximum:
        return f"{value!r} is above the maximum {key.maximum}"
    if key.rule is not None:
        problem = RULES[key.rule](value)
        if problem:
            return problem
    if key.must_exist and value and not Path(str(value)).expanduser().exists():
        return f"the path {value!r} does not exist"
    return None


def _check_value(file: Path, section: str, name: str, value: Any) -> None:
    problem = value_problem(section, name, value)
    if problem:
        raise ConfigError(f"{file}: [{section}] {name}: {problem}")


@dataclass(frozen=True)
class ConfigProblem:
    """One thing wrong with the file, found by a lenient load. `section`/`name` are None for
    the file as a whole (unreadable, not TOML), `name` None for a whole section."""

    section: str | None
    name: str | None
    value: Any
    message: str  # one line naming the file, the key and the problem


def validate(
    raw: dict[str, Any], file: Path, problems: list[ConfigProblem] | None = None
) -> dict[str, dict[str, Any]]:
    """Merge `raw` over the defaults, refusing unknown sections/keys and wrong types.

    With a `problems` list, nothing is raised: each problem is appended and the default is
    kept in its place (the desktop app shows them instead of refusing to start).
    """
    merged = defaults()

    def fail(section: str | None, name: str | None, value: Any, message: str) -> None:
        if problems is None:
            raise ConfigError(message)
        problems.append(ConfigProblem(section, name, value, message))

    for section, table in raw.items():
        if section not in SCHEMA:
            fail(
                section,
                None,
                table,
                f"{file}: unknown section [{section}] (known: {', '.join(SCHEMA)})",
            )
            continue
        if not isinstance(table, dict):
            fail(
                section,
                None,
                table,
                f"{file}: [{section}] must be a table, got {type(table).__name__}",
            )
            continue
        for name, value in table.items():
            key = SCHEMA[section].get(name)
            if key is None:
                fail(
                    section,
                    name,
                    value,
                    f"{file}: unknown key [{section}] {name} (known: {', '.join(SCHEMA[section])})",
                )
                continue
            problem = value_problem(section, name, value)
            if problem:
                fail(section, name, value, f"{file}: [{section}] {name}: {problem}")
                continue
            merged[section][name] = value
    return merged


@dataclass
class Config:
    """The validated configuration of one device, with its directories."""

    values: dict[str, dict[str, Any]]
    paths: DevicePaths
    file: Path
    # what a lenient load found wrong (the defaults stand in for those keys)
    problems: list[ConfigProblem] = field(default_factory=list)

    def get(self, section: str, name: str) -> Any:
        """One value by name (for code that picks keys at run time, like the settings window);
        everything else reads `settings`, which is typed."""
        return self.values[section][name]

    @property
    def settings(self) -> Settings:
        """The configuration as typed, immutable dataclasses, built from the current values
        (a few microseconds: never stale, whoever changed `values`)."""
        return Settings.from_values(self.values)

    def raw_value(self, section: str, name: str) -> Any:
        """The value as written in the file, even when it was refused (for the settings
        window, which shows it marked in red); else the value in use."""
        for p in self.problems:
            if (p.section, p.name) == (section, name):
                return p.value
        return self.get(section, name)

    def set(self, section: str, name: str, value: Any) -> None:
        _check_value(self.file, section, name, value)
        self.values[section][name] = value
        self.problems = [p for p in self.problems if (p.section, p.name) != (section, name)]

    def save(self) -> None:
        """Write the changed keys into the file as the person left it, atomically.

        The file is edited, not regenerated (tomlkit): the person's comments, blank lines, key
        order and the keys they wrote, even those equal to a default, stay as they were. A key
        that is not in the file is written only when it differs from its default; a value the
        file holds but that was refused (`problems`) stays as written until `set` replaces it.
        A file that could not be read as TOML is never overwritten: the person's text would be
        lost; it has to be fixed by hand first.
        """
        for p in self.problems:
            if p.section is None:
                raise ConfigError(f"{p.message}; fix the file by hand before saving settings")
        import tomlkit  # writing the file: `config set` and `init`, not every command

        try:
            doc = tomlkit.parse(self.file.read_text(encoding="utf-8"))
        except FileNotFoundError:
            doc = tomlkit.document()
        except (OSError, UnicodeDecodeError, tomlkit.exceptions.ParseError) as exc:
            raise ConfigError(
                f"{self.file}: cannot read the configuration file: {_one_line(exc)}; "
                "fix the file by hand before saving settings"
            ) from None
        refused = {(p.section, p.name) for p in self.problems}
        d = defaults()
        for s, table in self.values.items():
            for k, v in table.items():
                if (s, k) in refused:
                    continue
                section = doc.get(s)
                present = isinstance(section, dict) and k in section
                if present:
                    if _plain(section[k]) == v:  # type: ignore[index]
                        continue  # as the person typed it, layout and all
                elif v == d[s][k]:
                    continue
                if not isinstance(section, dict):
                    section = tomlkit.table()
                    doc[s] = section
                section[k] = v
        write_text_atomic(self.file, tomlkit.dumps(doc), mode=KEEP, make_parents=True)


def _plain(item: Any) -> Any:
    """A tomlkit item as the plain Python value it holds."""
    return item.unwrap() if hasattr(item, "unwrap") else item


def load_config(
    paths: DevicePaths | None = None, file: Path | None = None, *, lenient: bool = False
) -> Config:
    """Load and validate the config file; a missing file means all defaults.

    Strict (the default) raises `ConfigError` at the first problem. `lenient=True` never
    raises for the file's content: every problem is listed in `Config.problems` and the
    defaults stand in for what was refused (the desktop app and `doctor` use it to show the
    problems instead of stopping).
    """
    paths = paths or device_paths()
    file = file or paths.config_file
    raw: dict[str, Any] = {}
    problems: list[ConfigProblem] | None = [] if lenient else None
    if file.exists():
        try:
            text = file.read_text(encoding="utf-8")
            raw = tomllib.loads(text)
        except (OSError, UnicodeDecodeError) as exc:
            message = f"{file}: cannot read the configuration file: {_one_line(exc)}"
            if problems is None:
                raise ConfigError(message) from None
            problems.append(ConfigProblem(None, None, None, message))
        except tomllib.TOMLDecodeError as exc:
            message = f"{file}: not valid TOML: {_one_line(exc)}"
            if problems is None:
                raise ConfigError(message) from None
            problems.append(ConfigProblem(None, None, None, message))
    return Config(validate(raw, file, problems), paths, file, problems or [])


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split())


def describe_schema() -> str:
    """The documented keys with their defaults, as TOML with comments."""
    import tomlkit

    lines: list[str] = []
    for section, keys in SCHEMA.items():
        lines.append(f"[{section}]")
        for name, key in keys.items():
            lines.append(f"# {key.doc} ({_type_name(key.type)})")
            lines.append(tomlkit.dumps({name: key.default}).strip())
        lines.append("")
    return "\n".join(lines)
