"""The configuration file: one TOML file, a fixed schema, clear errors.

The schema below is the single source of truth: defaults, types and documentation
(`companion config show --defaults` prints it; docs/configuration.md describes it). A bad file
is refused with an error that names the file, the key and the problem (exit status 2) instead
of being guessed at.
"""

from __future__ import annotations

import copy
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import tomli_w

from companion.errors import ConfigError
from companion.paths import DevicePaths, device_paths


@dataclass(frozen=True)
class Key:
    type: type | tuple[type, ...]
    default: Any
    doc: str
    must_exist: bool = False  # a path that must exist when set
    choices: tuple[str, ...] | None = None
    minimum: float | None = None
    maximum: float | None = None


SCHEMA: dict[str, dict[str, Key]] = {
    "vault": {
        "path": Key(
            str, "", "Default vault folder for commands and the desktop app.", must_exist=True
        ),
        "max_file_mb": Key(
            (int, float), 20, "Notes larger than this are skipped with a warning.", minimum=0
        ),
        "human_edit_window_hours": Key(
            (int, float),
            24,
            "A note edited by a person this recently is never rewritten.",
            minimum=0,
        ),
    },
    "sync": {
        "relay_url": Key(str, "", "Relay base URL, e.g. https://relay.example.org."),
        "device_name": Key(str, "", "This device's name as other devices see it."),
        "kind": Key(
            str, "human", "Who edits this copy: human or agent.", choices=("human", "agent")
        ),
        "ignore": Key(list, [], "Extra ignore patterns (gitignore syntax)."),
        "mass_delete_ratio": Key(
            (int, float),
            0.5,
            "A round deleting more than this share of the vault asks first.",
            minimum=0,
            maximum=1,
        ),
        "max_file_mb": Key((int, float), 200, "Files larger than this are not synced.", minimum=0),
        "paused": Key(bool, False, "Pause syncing (desktop app)."),
        "hold_agent_changes": Key(
            bool,
            True,
            "On a human device, hold agent changes to Obsidian plugins/settings and exec bits "
            "for approval.",
        ),
        "hold_patterns": Key(
            list, [], "Paths held for approval (gitignore syntax; empty: the built-in list)."
        ),
    },
    "dream": {
        "time": Key(str, "02:00", "Nightly dream time, HH:MM."),
        "timezone": Key(str, "Europe/Madrid", "Time zone of the dream time (IANA name)."),
        "window_hours": Key(int, 48, "Transcript window, 24 to 48 hours.", minimum=24, maximum=48),
        "distiller": Key(str, "rules", "rules (offline) or llm.", choices=("rules", "llm")),
        "local_fallback": Key(
            bool, True, "Dream locally when the server has not by the grace time."
        ),
        "grace_minutes": Key(
            int, 120, "How long after the dream time to wait for the server.", minimum=0
        ),
        "max_removals": Key(int, 10, "Most lines/entries one dream may remove.", minimum=0),
        "language": Key(
            str, "auto", "Journal language: auto, en or es.", choices=("auto", "en", "es")
        ),
        "sources": Key(list, [], "Transcript sources: tables with kind and path."),
    },
    "memory": {
        "hermes_home": Key(str, "", "Hermes home (default $HERMES_HOME or ~/.hermes)."),
        "memory_char_limit": Key(int, 2200, "Character budget of MEMORY.md.", minimum=1),
        "user_char_limit": Key(int, 1375, "Character budget of USER.md.", minimum=1),
    },
    "llm": {
        "base_url": Key(str, "", "OpenAI-compatible endpoint, e.g. http://127.0.0.1:11434/v1."),
        "model": Key(str, "", "Model name at that endpoint."),
        "max_tokens": Key(int, 20000, "Token budget per dream.", minimum=1),
        "timeout_s": Key((int, float), 60, "Time budget per dream, seconds.", minimum=1),
        "retries": Key(int, 2, "Retries per request.", minimum=0),
    },
    "notify": {
        "morning_time": Key(str, "08:00", "When the dream notification is shown, HH:MM."),
        "dream_landed": Key(bool, True, "Notify when the nightly dream lands."),
        "conflicts": Key(bool, True, "Notify on conflict copies."),
        "mass_delete": Key(bool, True, "Notify when the mass-deletion guard trips."),
        "offline_minutes": Key(
            int, 30, "Notify when the relay is unreachable this long.", minimum=1
        ),
        "secrets": Key(bool, True, "Notify when a secret is found in a note."),
        "local_dream": Key(bool, True, "Notify when a local fallback dream ran."),
    },
    "gui": {
        "language": Key(
            str, "auto", "Interface language: auto, en or es.", choices=("auto", "en", "es")
        ),
        "start_at_login": Key(bool, False, "Start the tray app at login."),
    },
    "secrets": {
        "allowlist": Key(list, [], "Regular expressions of values never reported as secrets."),
        "backend": Key(
            str,
            "keyring",
            "Where secrets live: keyring, or file (headless, owner-only).",
            choices=("keyring", "file"),
        ),
    },
}


def defaults() -> dict[str, dict[str, Any]]:
    return {s: {k: copy.deepcopy(v.default) for k, v in keys.items()} for s, keys in SCHEMA.items()}


def _type_name(t: type | tuple[type, ...]) -> str:
    names = {int: "integer", float: "number", str: "string", bool: "boolean", list: "list"}
    if isinstance(t, tuple):
        return " or ".join(names.get(x, x.__name__) for x in t)
    return names.get(t, t.__name__)


def _check_value(file: Path, section: str, name: str, key: Key, value: Any) -> None:
    where = f"{file}: [{section}] {name}"
    # bool is a subclass of int: refuse true/false where a number is expected
    types = key.type if isinstance(key.type, tuple) else (key.type,)
    if isinstance(value, bool) and bool not in types:
        raise ConfigError(f"{where}: expected {_type_name(key.type)}, got boolean {value!r}")
    if not isinstance(value, types):
        raise ConfigError(
            f"{where}: expected {_type_name(key.type)}, got {type(value).__name__} {value!r}"
        )
    if key.choices is not None and value not in key.choices:
        raise ConfigError(f"{where}: {value!r} is not one of {', '.join(key.choices)}")
    if key.minimum is not None and value < key.minimum:
        raise ConfigError(f"{where}: {value!r} is below the minimum {key.minimum}")
    if key.maximum is not None and value > key.maximum:
        raise ConfigError(f"{where}: {value!r} is above the maximum {key.maximum}")
    if key.must_exist and value and not Path(value).expanduser().exists():
        raise ConfigError(f"{where}: the path {value!r} does not exist")


def validate(raw: dict[str, Any], file: Path) -> dict[str, dict[str, Any]]:
    """Merge `raw` over the defaults, refusing unknown sections/keys and wrong types."""
    merged = defaults()
    for section, table in raw.items():
        if section not in SCHEMA:
            raise ConfigError(f"{file}: unknown section [{section}] (known: {', '.join(SCHEMA)})")
        if not isinstance(table, dict):
            raise ConfigError(f"{file}: [{section}] must be a table, got {type(table).__name__}")
        for name, value in table.items():
            key = SCHEMA[section].get(name)
            if key is None:
                raise ConfigError(
                    f"{file}: unknown key [{section}] {name} (known: {', '.join(SCHEMA[section])})"
                )
            _check_value(file, section, name, key, value)
            merged[section][name] = value
    return merged


@dataclass
class Config:
    """The validated configuration of one device, with its directories."""

    values: dict[str, dict[str, Any]]
    paths: DevicePaths
    file: Path

    def get(self, section: str, name: str) -> Any:
        return self.values[section][name]

    def set(self, section: str, name: str, value: Any) -> None:
        key = SCHEMA[section][name]
        _check_value(self.file, section, name, key, value)
        self.values[section][name] = value

    def save(self) -> None:
        """Write only the keys that differ from the defaults, atomically."""
        d = defaults()
        out = {
            s: {k: v for k, v in table.items() if v != d[s][k]} for s, table in self.values.items()
        }
        out = {s: t for s, t in out.items() if t}
        self.file.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.file.with_name(self.file.name + ".tmp")
        tmp.write_text(tomli_w.dumps(out), encoding="utf-8")
        tmp.replace(self.file)


def load_config(paths: DevicePaths | None = None, file: Path | None = None) -> Config:
    """Load and validate the config file; a missing file means all defaults."""
    paths = paths or device_paths()
    file = file or paths.config_file
    raw: dict[str, Any] = {}
    if file.exists():
        try:
            text = file.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise ConfigError(f"{file}: cannot read the configuration file: {exc}") from None
        try:
            raw = tomllib.loads(text)
        except tomllib.TOMLDecodeError as exc:
            raise ConfigError(f"{file}: not valid TOML: {exc}") from None
    return Config(validate(raw, file), paths, file)


def describe_schema() -> str:
    """The documented keys with their defaults, as TOML with comments."""
    lines: list[str] = []
    for section, keys in SCHEMA.items():
        lines.append(f"[{section}]")
        for name, key in keys.items():
            lines.append(f"# {key.doc} ({_type_name(key.type)})")
            lines.append(tomli_w.dumps({name: key.default}).strip())
        lines.append("")
    return "\n".join(lines)
