"""Engine text in the person's language, from gettext catalogues a translator can edit.

The engine writes words people read outside the desktop app: the dream's lines in the journal
(in the vault's language, not the interface's), the summary of each dream change (the report,
`companion dream`, the review window). Those strings are English in the code and Spanish,
French, German, Portuguese and Italian in `companion/locale/<lang>/LC_MESSAGES/companion.po`
(compiled to `.mo` beside it). Updating the catalogues after changing a string:
`python packaging/catalogs.py` (Babel extracts, updates and compiles); `tests/test_l10n.py`
fails while a string has no translation or a `.mo` is stale.

The desktop app's own strings live in `resources/translations/*.json` (`companion.gui.i18n`),
and Qt's standard buttons and dialogs use Qt's own catalogues.
"""

from __future__ import annotations

import gettext
from functools import lru_cache
from pathlib import Path

DOMAIN = "companion"
LOCALE_DIR = Path(__file__).resolve().parent / "locale"
LANGUAGES = ("en", "es", "fr", "de", "pt", "it")  # English is the source: no catalogue needed
# The languages the dream writes a vault in (each has a catalogue; see companion.dream.record)
WRITTEN = LANGUAGES


def N_(singular: str, plural: str | None = None) -> tuple[str, str]:
    """Mark a string (or a singular/plural pair) for extraction without translating it yet."""
    return (singular, plural if plural is not None else singular)


@lru_cache(maxsize=8)
def catalog(lang: str) -> gettext.NullTranslations:
    """The translations for `lang` ("en", "es", "fr", ...); English, or a language without a
    catalogue, gives the English source strings."""
    if lang == "en":
        return gettext.NullTranslations()
    return gettext.translation(DOMAIN, LOCALE_DIR, languages=[lang], fallback=True)


def say(lang: str, text: str, **values: object) -> str:
    """`text` in `lang`, formatted with `values` (`{name}` fields)."""
    out = catalog(lang).gettext(text)
    return out.format(**values) if values else out


def nsay(lang: str, singular: str, plural: str, n: int, **values: object) -> str:
    """The singular or plural form of a string in `lang`, formatted with `n` and `values`."""
    return catalog(lang).ngettext(singular, plural, n).format(n=n, **values)
