"""Which language to speak to a person: `[gui] language` (auto, en, es), auto read from the
system locale. Qt-free: the desktop app (`companion.gui.i18n`) and the command line (the dream's
summaries) decide it the same way."""

from __future__ import annotations

import locale
import os
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from companion.config import Config

LANGUAGES: tuple[str, ...] = ("en", "es")
DEFAULT_LANGUAGE = "en"


def system_language(system_locale: str | None = None) -> str:
    """'es' when the system locale is Spanish, else 'en'.

    `system_locale` is e.g. Qt's `QLocale.system().name()` ("es_ES"); without it the usual
    environment variables and Python's locale are consulted.
    """
    names: list[str | None] = [system_locale] if system_locale else []
    names += [os.environ.get(v) for v in ("LC_ALL", "LC_MESSAGES", "LANGUAGE", "LANG")]
    try:
        names.append(locale.getlocale()[0])
    except ValueError:
        pass
    for name in names:
        if not name or name in {"C", "POSIX"} or name.startswith("C."):
            continue
        lowered = name.lower()
        for lang in LANGUAGES:
            if lowered.startswith(lang) or (lang == "es" and lowered.startswith("spanish")):
                return lang
        return DEFAULT_LANGUAGE
    return DEFAULT_LANGUAGE


def resolve_language(setting: str, system_locale: str | None = None) -> str:
    """The language for a `gui.language` setting: "auto", "en" or "es"."""
    if setting in LANGUAGES:
        return setting
    return system_language(system_locale)


def interface_language(config: Config) -> str:
    """The language of this device's interface (`[gui] language`), for the command line."""
    return resolve_language(str(config.settings.gui.language))
