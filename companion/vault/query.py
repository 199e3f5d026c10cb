"""Turn what a person types into a safe SQLite FTS5 query, and pick a text's salient words.

Search syntax (documented in `companion vault search --help`): words must all match (any
order); `"quoted phrase"` matches the phrase; `word*` matches a prefix; `OR` between two terms
matches either; `-word` or `NOT word` excludes notes with that word. Everything else is
literal text: FTS5 operators and punctuation a person types cannot cause a syntax error.
"""

from __future__ import annotations

import re
import unicodedata
from collections import Counter

_TOKEN = re.compile(r'(-?)"([^"]*)"?|(\S+)')
_WORD = re.compile(r"\w+")

# Words too common to tell notes apart (English and Spanish), folded like the index's words.
_STOPWORDS_TEXT = """
    a about above after again all also am an and any are as at be because been before being
    below between both but by can could did do does doing down during each few for from further
    had has have having he her here hers him his how i if in into is it its itself just me more
    most my no nor not now of off on once only or other our ours out over own same she should so
    some such than that the their them then there these they this those through to too under
    until up very was we were what when where which while who whom why will with would you your
    yours yet via per etc el la los las un una unos unas y o u de del al a en con por para sin
    sobre entre que qué es son ser fue era está están estar hay como más menos muy pero si sí no
    ya lo le les se su sus mi mis tu tus nos nuestro nuestra este esta estos estas ese esa eso
    esto cuando donde dónde porque también todo toda todos todas hacer hecho
    """


def fold_word(word: str) -> str:
    """Case-fold and drop diacritics, as the index's tokenizer does."""
    word = word.casefold()
    if word.isascii():
        return word
    return "".join(c for c in unicodedata.normalize("NFKD", word) if not unicodedata.combining(c))


STOPWORDS = frozenset(fold_word(w) for w in _STOPWORDS_TEXT.split())


def _quote(term: str) -> str:
    return '"' + term.replace('"', '""') + '"'


def fts_query(text: str) -> str:
    """The FTS5 MATCH expression for a person's query; "" when it has no searchable word."""
    positives: list[str] = []
    negatives: list[str] = []
    pending_or = pending_not = False
    for m in _TOKEN.finditer(text):
        neg, phrase, bare = m.group(1), m.group(2), m.group(3)
        prefix = False
        if bare is not None:
            if bare == "OR":
                pending_or = bool(positives)
                continue
            if bare == "NOT":
                pending_not = True
                continue
            neg = "-" if bare.startswith("-") and len(bare) > 1 else ""
            if neg:
                bare = bare[1:]
            prefix = bare.endswith("*")
            words = _WORD.findall(bare)
        else:
            words = _WORD.findall(phrase)
        if not words:
            continue
        term = _quote(" ".join(words)) + ("*" if prefix else "")
        if neg or pending_not:
            pending_not = False
            negatives.append(term)
        elif pending_or and positives:
            positives[-1] = f"({positives[-1]} OR {term})"
        else:
            positives.append(term)
        pending_or = False
    if not positives:
        return ""
    expr = " AND ".join(positives)
    for term in negatives:
        expr = f"({expr}) NOT {term}"
    return expr


def word_counts(text: str) -> Counter[str]:
    """How often each informative word (folded, 3+ letters, not a stopword) occurs."""
    counts: Counter[str] = Counter()
    for w in _WORD.findall(text):
        f = fold_word(w)
        if len(f) < 3 or f in STOPWORDS or f.isdigit():
            continue
        counts[f] += 1
    return counts


def salient_words(text: str, limit: int = 40) -> list[str]:
    """The text's most frequent informative words (folded), most frequent first."""
    return [w for w, _ in word_counts(text).most_common(limit)]


def or_query(words: list[str]) -> str:
    return " OR ".join(_quote(w) for w in words)
