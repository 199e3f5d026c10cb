"""Small text helpers shared by the dream's steps: folding, normalised keys, word sets.

Normalisation is used for three different jobs, each with its own function:
- `norm_key`: "is this the same statement?" (dedupe): folded, links unwrapped, punctuation
  dropped, whitespace collapsed;
- `title_key`: "does this text name that note?" (topic matching, link repair);
- `squash`: "is this quote really in that source?" (provenance checks): only whitespace is
  collapsed and Unicode composed (NFC), case folded, so a quote must match character for
  character otherwise.
"""

from __future__ import annotations

import re
import unicodedata

from companion.vault.query import STOPWORDS

_WS = re.compile(r"\s+")
_WIKILINK = re.compile(r"!?\[\[([^\[\]\n|#^]*)(?:[#^][^\[\]\n|]*)?(?:\|([^\[\]\n]*))?\]\]")
_PUNCT = re.compile(r"[^\w\s]+")
_WORD = re.compile(r"\w+")
_NON_WORD = re.compile(r"[\W_]+")


_COMBINING = re.compile("[\u0300-\u036f\u1ab0-\u1aff\u1dc0-\u1dff\u20d0-\u20ff\ufe20-\ufe2f]+")


def fold(text: str) -> str:
    """Case-folded, accents dropped (NFKD without combining marks), as the vault's full-text
    index folds words; fast on long texts."""
    text = text.casefold()
    if text.isascii():
        return text
    return _COMBINING.sub("", unicodedata.normalize("NFKD", text))


def collapse(text: str) -> str:
    """Whitespace runs (newlines included) become one space; ends trimmed."""
    return _WS.sub(" ", text).strip()


def sentence(text: str) -> str:
    """`text` collapsed, its first letter upper-cased (`remember: use WAL` -> `Use WAL`)."""
    t = collapse(text)
    return t[:1].upper() + t[1:] if t[:1].islower() else t


def unwrap_links(text: str) -> str:
    """`[[Note|shown]]` -> `shown`, `[[Note#H]]` -> `Note`: what a reader sees."""
    return _WIKILINK.sub(lambda m: (m.group(2) or m.group(1) or "").strip(), text)


def norm_key(text: str) -> str:
    """The dedupe key of a statement: links unwrapped, folded, no punctuation, one space."""
    return collapse(_PUNCT.sub(" ", fold(unwrap_links(text)).replace("_", " ")))


def title_key(text: str) -> str:
    """The key under which a note title (or alias, or link target) is compared."""
    name = text.rsplit("/", 1)[-1]
    if name[-3:].lower() == ".md":
        name = name[:-3]
    return _NON_WORD.sub(" ", fold(name)).strip()


def squash(text: str) -> str:
    """NFC, case-folded, whitespace collapsed: the form quotes are compared in."""
    return collapse(unicodedata.normalize("NFC", text)).casefold()


def contains_quote(source: str, quote: str) -> bool:
    """True when `quote` (non-empty after squashing) occurs in `source`."""
    q = squash(quote)
    return bool(q) and q in squash(source)


def words(text: str) -> set[str]:
    """Informative words (folded, 3+ letters, not stopwords, not numbers) of `text`."""
    if "[[" in text:
        text = unwrap_links(text)
    return {
        f
        for f in _WORD.findall(fold(text))
        if len(f) >= 3 and f not in STOPWORDS and not f.isdigit()
    }


def stem(word: str) -> str:
    """A crude stem of a folded word, alike in English and Spanish: a plural `s` dropped, then
    the first five letters (`networks`, `networking` -> `netwo`; `copias` -> `copia`)."""
    if len(word) > 3 and word.endswith("s"):
        word = word[:-1]
    return word[:5] if len(word) > 5 else word


def jaccard(a: set[str], b: set[str]) -> float:
    if not a or not b:
        return 0.0
    return len(a & b) / len(a | b)


def word_list(text: str) -> list[str]:
    """All words of `text`, folded, in order (for n-gram title matching)."""
    return _WORD.findall(fold(text))
