"""Extract, update and compile the engine's gettext catalogues (see companion/l10n.py).

    python packaging/catalogs.py            # after changing a translatable string
    python packaging/catalogs.py --check    # exit 1 when a catalogue is out of date (CI's test)

Babel reads `say(lang, "...")`, `nsay(lang, "one", "many", n)` and `N_("one", "many")` from the
engine's code into `companion/locale/companion.pot`, merges it into each language's `.po` (new
strings arrive untranslated and are listed), and compiles the `.mo` the program reads.
"""

from __future__ import annotations

import argparse
import io
import sys
from pathlib import Path

from babel.messages.catalog import Catalog
from babel.messages.extract import extract_from_dir
from babel.messages.mofile import read_mo, write_mo
from babel.messages.pofile import read_po, write_po

ROOT = Path(__file__).resolve().parent.parent
LOCALE = ROOT / "companion" / "locale"
KEYWORDS = {"say": (2,), "nsay": (2, 3), "N_": (1, 2)}
LANGUAGES = ("es", "fr", "de", "pt", "it")  # English is the source language


def extract() -> Catalog:
    pot = Catalog(project="vault-companion", domain="companion", fuzzy=False)
    method_map = [("companion/gui/**.py", "ignore"), ("companion/**.py", "python")]
    for filename, lineno, message, comments, context in extract_from_dir(
        ROOT, method_map, keywords=KEYWORDS, comment_tags=("TRANSLATORS:",), strip_comment_tags=True
    ):
        pot.add(message, locations=[(filename, lineno)], auto_comments=comments, context=context)
    return pot


def _po_bytes(catalog: Catalog) -> bytes:
    buf = io.BytesIO()
    write_po(buf, catalog, width=100, omit_header=False, sort_output=True)
    return buf.getvalue()


def _mo_bytes(catalog: Catalog) -> bytes:
    buf = io.BytesIO()
    write_mo(buf, catalog)
    return buf.getvalue()


def build(check: bool) -> int:
    pot = extract()
    stale: list[str] = []
    pot_file = LOCALE / "companion.pot"
    pot_bytes = _po_bytes(pot)
    if not pot_file.exists() or _strip_dates(pot_file.read_bytes()) != _strip_dates(pot_bytes):
        stale.append(str(pot_file.relative_to(ROOT)))
        if not check:
            pot_file.write_bytes(pot_bytes)
    for lang in LANGUAGES:
        po_file = LOCALE / lang / "LC_MESSAGES" / "companion.po"
        mo_file = po_file.with_suffix(".mo")
        if po_file.exists():
            with open(po_file, "rb") as fh:
                catalog = read_po(fh, locale=lang)
        else:  # a new language: its strings arrive untranslated
            catalog = Catalog(locale=lang, project="vault-companion", domain="companion")
        _two_plural_forms(catalog)
        catalog.update(pot, no_fuzzy_matching=True)
        missing = [m.id for m in catalog if m.id and not _translated(m.string)]
        for mid in missing:
            print(f"{lang}: untranslated: {mid!r}", file=sys.stderr)
        new_po = _po_bytes(catalog)
        if not po_file.exists() or _strip_dates(po_file.read_bytes()) != _strip_dates(new_po):
            stale.append(str(po_file.relative_to(ROOT)))
            if not check:
                po_file.parent.mkdir(parents=True, exist_ok=True)
                po_file.write_bytes(new_po)
        new_mo = _mo_bytes(catalog)
        if not mo_file.exists() or _messages(mo_file.read_bytes()) != _messages(new_mo):
            stale.append(str(mo_file.relative_to(ROOT)))
            if not check:
                mo_file.write_bytes(new_mo)
        if missing:
            stale.append(f"{lang}: {len(missing)} untranslated")
    for item in stale:
        print(("stale: " if check else "updated: ") + item)
    return 1 if check and stale else 0


def _messages(mo: bytes) -> dict[object, object]:
    """What a compiled catalogue says (its header, with dates, left out)."""

    def key(value: object) -> object:
        return tuple(value) if isinstance(value, list | tuple) else value

    return {key(m.id): key(m.string) for m in read_mo(io.BytesIO(mo)) if m.id}


def _two_plural_forms(catalog: Catalog) -> None:
    """One and other, as Python's gettext and the translations use (CLDR gives Spanish a third
    form for millions, which no string here needs; French says "0 leçon", and the dream never
    writes a count of 0)."""
    catalog._num_plurals = 2  # noqa: SLF001 - Babel has no public setter
    catalog._plural_expr = "(n != 1)"  # noqa: SLF001


def _translated(string: object) -> bool:
    if isinstance(string, tuple):
        return all(string)
    return bool(string)


def _strip_dates(data: bytes) -> bytes:
    dated = (b'"POT-Creation-Date', b'"PO-Revision-Date')
    return b"\n".join(line for line in data.split(b"\n") if not line.startswith(dated))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--check", action="store_true", help="change nothing; exit 1 if stale")
    return build(ap.parse_args().check)


if __name__ == "__main__":
    raise SystemExit(main())
