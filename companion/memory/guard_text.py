"""The forms of a text the injection guard reads: what a model would read in it, de-disguised.

`views(text)` returns the texts the phrase rules run on, each with a label for the refusal:

- ``text``: NFKC (full-width and other compatibility forms fold to ASCII), with format
  characters (zero-width space / joiner, soft hyphen, bidi controls, tags) removed and Arabic
  diacritics (harakat, shadda) dropped so ``شغّل`` reads as ``شغل``;
- ``folded``: the same with look-alike letters folded to Latin in every word that mixes
  scripts (``Іgnоrе`` with Cyrillic І, о, е; Greek ``ο``, ``ι``), and letters spelled out one
  at a time joined back into the word they spell (``I-g-n-o-r-e``, ``c.u.r.l``, ``N e v e r``);
- ``rot13``: ROT13 of the folded text (only when it carries Latin letters);
- ``base64`` / ``hex`` / ``url-encoded``: each run of base64 (>= 16 characters), hex (>= 16
  digits) or percent-encoding that decodes to readable UTF-8 text, normalised the same way.

Only readable decodings count (mostly printable, valid UTF-8), so hashes, commit ids and image
data never become a view. Each view is bounded, so a long text costs linear time.
"""

from __future__ import annotations

import base64
import binascii
import codecs
import re
import unicodedata
import urllib.parse

MAX_DECODED = 16  # encoded runs decoded per text, at most

# Cyrillic and Greek letters that look like Latin ones (and a few Latin-like symbols).
_HOMOGLYPHS = str.maketrans(
    {
        # Cyrillic
        "а": "a", "в": "b", "е": "e", "ё": "e", "к": "k", "м": "m", "н": "h", "о": "o",
        "р": "p", "с": "c", "т": "t", "у": "y", "х": "x", "ѕ": "s", "і": "i", "ї": "i",
        "ј": "j", "ԁ": "d", "ɡ": "g", "һ": "h", "ԛ": "q", "ԝ": "w", "ү": "y",
        "А": "A", "В": "B", "Е": "E", "К": "K", "М": "M", "Н": "H", "О": "O", "Р": "P",
        "С": "C", "Т": "T", "У": "Y", "Х": "X", "Ѕ": "S", "І": "I", "Ј": "J", "Ԁ": "D",
        # Greek
        "α": "a", "β": "b", "ε": "e", "ι": "i", "κ": "k", "ν": "v", "ο": "o", "ρ": "p",
        "τ": "t", "υ": "u", "χ": "x", "γ": "y", "η": "n",
        "Α": "A", "Β": "B", "Ε": "E", "Ζ": "Z", "Η": "H", "Ι": "I", "Κ": "K", "Μ": "M",
        "Ν": "N", "Ο": "O", "Ρ": "P", "Τ": "T", "Υ": "Y", "Χ": "X",
        # Latin-like symbols
        "ı": "i", "ℓ": "l",
    }
)  # fmt: skip
_LOOKALIKE = frozenset(chr(k) for k in _HOMOGLYPHS)
_WORD = re.compile(r"\w+")
_LATIN = re.compile(r"[A-Za-z]")
# single letters spelled out: I-g-n-o-r-e, c.u.r.l, i g n o r e, S_Y_S (same separator, 3+)
_SPELLED = re.compile(r"(?<!\w)[^\W\d_](?:([ \-._·*])[^\W\d_])(?:\1[^\W\d_]){1,30}(?!\w)")
_ARABIC_MARKS = re.compile("[\u064b-\u065f\u0670\u06d6-\u06ed]")
_B64 = re.compile(r"(?<![\w+/=])[A-Za-z0-9+/_-]{16,}={0,2}")
_HEX = re.compile(r"(?<![\w])(?:[0-9A-Fa-f]{2}){8,}(?![\w])")
_PCT = re.compile(r"%[0-9A-Fa-f]{2}")


def _strip(text: str) -> str:
    text = unicodedata.normalize("NFKC", text)
    text = "".join(ch for ch in text if unicodedata.category(ch) != "Cf")
    return _ARABIC_MARKS.sub("", text)


def _fold_word(m: re.Match[str]) -> str:
    w = m.group(0)
    if _LATIN.search(w) and any(ch in _LOOKALIKE for ch in w):
        return w.translate(_HOMOGLYPHS)
    if len(w) > 1 and all(ch in _LOOKALIKE for ch in w) and _looks_latin_context(m):
        return w.translate(_HOMOGLYPHS)
    return w


def _looks_latin_context(m: re.Match[str]) -> bool:
    """A word made only of look-alikes (``аll`` with Cyrillic а would have Latin ``ll``; but
    ``оr`` can be all look-alikes): fold it when the text around it is Latin."""
    s = m.string
    around = s[max(0, m.start() - 20) : m.start()] + s[m.end() : m.end() + 20]
    latin = len(_LATIN.findall(around))
    return latin >= 4 and latin > sum(ch.isalpha() for ch in around) / 2


def _join_spelled(text: str) -> str:
    return _SPELLED.sub(lambda m: re.sub(r"[ \-._·*]", "", m.group(0)), text)


def fold(text: str) -> str:
    """Look-alike letters folded to Latin in mixed-script words, spelled-out words joined."""
    return _join_spelled(_WORD.sub(_fold_word, text))


def _readable(raw: bytes) -> str | None:
    try:
        s = raw.decode("utf-8")
    except UnicodeDecodeError:
        return None
    if not s:
        return None
    printable = sum(ch.isprintable() or ch in "\n\t" for ch in s)
    letters = sum(ch.isalpha() for ch in s)
    if printable < len(s) * 0.95 or letters < 4 or letters < len(s) * 0.4:
        return None
    return s


def _decode_b64(run: str) -> str | None:
    run = run.rstrip("=")
    if len(run) < 16 or run.isdigit() or run.isalpha() and (run.islower() or run.isupper()):
        return None
    pad = "=" * (-len(run) % 4)
    try:
        if "-" in run or "_" in run:
            raw = base64.urlsafe_b64decode(run + pad)
        else:
            raw = base64.b64decode(run + pad, validate=True)
    except (binascii.Error, ValueError):
        return None
    return _readable(raw)


def decoded(text: str) -> list[tuple[str, str]]:
    """(label, decoded text) for each encoded run in `text` that decodes to readable text."""
    out: list[tuple[str, str]] = []
    for m in _HEX.finditer(text):
        s = _readable(bytes.fromhex(m.group(0)))
        if s is not None:
            out.append(("hex", s))
        if len(out) >= MAX_DECODED:
            return out
    for m in _B64.finditer(text):
        if _HEX.fullmatch(m.group(0)):
            continue
        s = _decode_b64(m.group(0))
        if s is not None:
            out.append(("base64", s))
        if len(out) >= MAX_DECODED:
            return out
    if len(_PCT.findall(text, 0, 4096)) >= 2:
        s = urllib.parse.unquote(text, errors="strict")
        if s != text:
            out.append(("url-encoded", s))
    return out


def views(text: str) -> list[tuple[str, str]]:
    """(label, text) for each form of `text` the phrase rules read; the first is the text."""
    base = _strip(text)
    out = [("text", base)]
    folded = fold(base)
    if folded != base:
        out.append(("folded", folded))
    if _LATIN.search(folded):
        out.append(("rot13", codecs.encode(folded, "rot13")))
    try:
        found = decoded(base)
    except UnicodeDecodeError:
        found = []
    for label, s in found:
        s = _strip(s)
        out.append((label, s))
        f = fold(s)
        if f != s:
            out.append((label, f))
    return out
