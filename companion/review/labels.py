"""The words a review note is written in: `labels.json`, one table for both engines.

The note is in the vault's language (the languages the dream writes); a language without a
table is written in English. Plural forms are `[one, other]`.
"""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path

TABLE = Path(__file__).resolve().parent / "labels.json"


@lru_cache(maxsize=1)
def table() -> dict[str, dict[str, object]]:
    data: dict[str, dict[str, object]] = json.loads(TABLE.read_text(encoding="utf-8"))
    return data


def language(lang: str | None) -> str:
    return lang if lang in table() else "en"


def text(lang: str, key: str, **values: object) -> str:
    text = table()[language(lang)].get(key)
    if not isinstance(text, str):
        raise KeyError(key)
    return text.format(**values) if values else text


def count(lang: str, key: str, n: int) -> str:
    forms = table()[language(lang)][key]
    assert isinstance(forms, list)
    return str(forms[0] if n == 1 else forms[1]).format(n=n)


def join(lang: str, parts: list[str]) -> str:
    """Counts joined with commas (no conjunction: one rule for every language)."""
    return ", ".join(parts)
