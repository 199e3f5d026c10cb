"""Checks behind the settings window's inline errors. Qt-free: each returns None when the
value is fine, else the message to show under the field (already translated).

Whether a configured value is acceptable is the config schema's rule (`companion.config`:
the same one `config show`, `doctor` and the schedulers apply); this module only words the
answer in the interface's language. The checks here that the schema does not have are about
things outside the config file: passphrases, ignore rules, folders that must exist.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from zoneinfo import available_timezones

import pathspec

from companion.config import SCHEMA, hhmm_problem, timezone_problem, url_problem, value_problem
from companion.crypto.passphrase import MIN_LENGTH, passphrase_problem, suggest_passphrase
from companion.gui.i18n import tr
from companion.textsafe import display_name_problem

WINDOW_MIN = int(SCHEMA["dream"]["window_hours"].minimum or 24)
WINDOW_MAX = int(SCHEMA["dream"]["window_hours"].maximum or 48)


def http_url(value: str, *, required: bool = False) -> str | None:
    """An http(s) URL with a host, e.g. https://relay.example.org or http://127.0.0.1:8080/v1."""
    value = value.strip()
    if not value:
        return tr("invalid.required") if required else None
    return tr("invalid.url") if url_problem(value) else None


def hhmm(value: str) -> str | None:
    return tr("invalid.time") if hhmm_problem(value) else None


@lru_cache(maxsize=1)
def timezones() -> tuple[str, ...]:
    return tuple(sorted(available_timezones()))


def timezone(value: str) -> str | None:
    return tr("invalid.timezone") if timezone_problem(value) else None


def window_hours(value: int) -> str | None:
    if value_problem("dream", "window_hours", value) is None:
        return None
    return tr("invalid.window", min=WINDOW_MIN, max=WINDOW_MAX)


def existing_folder(value: str, *, required: bool = False) -> str | None:
    value = value.strip()
    if not value:
        return tr("invalid.required") if required else None
    return None if Path(value).expanduser().is_dir() else tr("invalid.folder")


def device_name(value: str) -> str | None:
    value = value.strip()
    if len(value) > 64:
        return tr("invalid.device_name")
    if value and display_name_problem(value):  # the engine's and the relay's one rule
        return tr("invalid.device_name")
    return None


def passphrase(new: str, confirm: str) -> str | None:
    """A new passphrase: the engine's one strength rule, typed twice the same."""
    if not new and not confirm:
        return None
    if len(new) < MIN_LENGTH:
        return tr("invalid.passphrase_short", n=MIN_LENGTH)
    if passphrase_problem(new) is not None:
        return tr("invalid.passphrase_weak", suggestion=suggest_passphrase())
    if new != confirm:
        return tr("invalid.passphrase_mismatch")
    return None


def join_passphrase(text: str) -> str | None:
    """The passphrase typed to join: empty (the passphrase file or keyring is used) or long."""
    if text and len(text) < 12:
        return tr("invalid.passphrase_short", n=12)
    return None


def ignore_rules(text: str) -> str | None:
    """gitignore-syntax rules, as `.companionignore` holds them."""
    for number, line in enumerate(text.splitlines(), start=1):
        try:
            pathspec.GitIgnoreSpec.from_lines([line])
        except (ValueError, TypeError) as exc:
            return tr("invalid.ignore", line=number, error=exc)
    return None
