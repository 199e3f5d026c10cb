"""English and Spanish: every visible string goes through `tr(key)`.

Catalogues are JSON files (`resources/translations/<lang>.json`) mapping a dotted key to a
`str.format` template, or to `{"one": ..., "other": ...}` for text that depends on a count `n`.
Qt-free, so the notification policy and the tray status text can be tested without a display.
"""

from __future__ import annotations

import json
import threading
from datetime import datetime
from functools import cache
from typing import Any

from companion.gui.resources import translations_dir
from companion.language import (  # one rule for the app and the command line
    DEFAULT_LANGUAGE,
    LANGUAGES,
    resolve_language,
    system_language,
)

__all__ = [
    "DEFAULT_LANGUAGE",
    "LANGUAGES",
    "N_",
    "catalogue",
    "current_language",
    "format_datetime",
    "resolve_language",
    "set_language",
    "system_language",
    "tr",
]

_lock = threading.Lock()
_current = DEFAULT_LANGUAGE


def N_(key: str) -> str:  # noqa: N802 - the gettext idiom for "marked, translated later"
    """Mark a key for translation without translating it yet (tables built at import time)."""
    return key


@cache
def catalogue(language: str) -> dict[str, Any]:
    """The catalogue of `language` (a fresh read once per process)."""
    path = translations_dir() / f"{language}.json"
    with path.open(encoding="utf-8") as f:
        data = json.load(f)
    if not isinstance(data, dict):
        raise ValueError(f"{path}: a translation catalogue must be a JSON object")
    return data


def set_language(setting: str, system_locale: str | None = None) -> str:
    """Switch the interface language; returns the language now in use."""
    global _current
    lang = resolve_language(setting, system_locale)
    catalogue(lang)  # fail early on a broken catalogue
    with _lock:
        _current = lang
    _use_qt_catalogue(lang)
    return lang


_qt_translator: Any = None  # the QTranslator installed for Qt's own strings, if any


def _use_qt_catalogue(lang: str) -> None:
    """Qt's standard buttons and dialogs (Cancel, Close, the file dialog) in `lang`, from the
    catalogues Qt ships (`qtbase_<lang>.qm`). Needs a running application; no-op before."""
    global _qt_translator
    from PySide6.QtCore import QCoreApplication, QLibraryInfo, QTranslator  # noqa: PLC0415

    app = QCoreApplication.instance()
    if app is None:
        return
    if _qt_translator is not None:
        app.removeTranslator(_qt_translator)
        _qt_translator = None
    if lang == DEFAULT_LANGUAGE:
        return
    translator = QTranslator(app)
    folder = QLibraryInfo.path(QLibraryInfo.LibraryPath.TranslationsPath)
    if translator.load(f"qtbase_{lang}", folder):
        app.installTranslator(translator)
        _qt_translator = translator


def current_language() -> str:
    return _current


def tr(key: str, /, **kwargs: Any) -> str:
    """The text for `key` in the current language, formatted with `kwargs`.

    A key missing from the current catalogue falls back to English, then to the key itself, so a
    gap shows up as a visible key instead of a crash (the catalogue test keeps it from shipping).
    """
    value = catalogue(_current).get(key)
    if value is None and _current != DEFAULT_LANGUAGE:
        value = catalogue(DEFAULT_LANGUAGE).get(key)
    if value is None:
        return key
    if isinstance(value, dict):
        n = kwargs.get("n", 0)
        value = value.get("one" if n == 1 else "other", value.get("other", key))
    try:
        return str(value).format(**kwargs)
    except (KeyError, IndexError, ValueError):
        return str(value)


def format_datetime(value: datetime, now: datetime | None = None) -> str:
    """A short local time: "today 02:14", "yesterday 02:14" or "2025-11-27 02:14"."""
    local = value.astimezone() if value.tzinfo else value
    if now is None:
        now = datetime.now().astimezone() if value.tzinfo else datetime.now()
    elif now.tzinfo and value.tzinfo:
        now = now.astimezone()
    clock = local.strftime("%H:%M")
    days = (now.date() - local.date()).days
    if days == 0:
        return tr("time.today", time=clock)
    if days == 1:
        return tr("time.yesterday", time=clock)
    return tr("time.date", date=local.strftime("%Y-%m-%d"), time=clock)
