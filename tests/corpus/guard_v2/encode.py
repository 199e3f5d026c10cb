"""Helpers that build the encoded and obfuscated forms of corpus entries."""

from __future__ import annotations

import base64
import codecs
import urllib.parse

_CYR = str.maketrans({"a": "а", "e": "е", "o": "о", "p": "р", "c": "с", "x": "х", "i": "і"})
_GREEK = str.maketrans({"o": "ο", "i": "ι", "A": "Α", "E": "Ε", "T": "Τ", "v": "ν"})


def b64(s: str) -> str:
    return base64.b64encode(s.encode()).decode()


def hexed(s: str) -> str:
    return s.encode().hex()


def urlenc(s: str) -> str:
    return urllib.parse.quote(s, safe="")


def rot13(s: str) -> str:
    return codecs.encode(s, "rot13")


def spaced(word: str, sep: str = " ") -> str:
    return sep.join(word)


def cyrillic(s: str) -> str:
    """Latin letters swapped for their Cyrillic look-alikes."""
    return s.translate(_CYR)


def greek(s: str) -> str:
    return s.translate(_GREEK)


def fullwidth(s: str) -> str:
    return "".join(chr(ord(c) + 0xFEE0) if "!" <= c <= "~" else c for c in s)
