"""Names and paths that are safe to show on a terminal or in a window.

Device names are chosen by whoever joins, and file names by whoever writes the vault (an agent
among them). Printed raw, control characters can rewrite an admin's terminal (C0/C1 escapes),
and bidirectional overrides or zero-width characters can make one name look like another
("server‮dm.exe", "lucía​-laptop"). So:

- `display_name_problem` refuses such characters in names a device gives itself;
- `shown` escapes them (``\\u202e``) wherever a name or path is printed, so nothing printed can
  hide or reorder what follows it.
"""

from __future__ import annotations

import re
import unicodedata

# Unicode categories never allowed in a device name, and escaped whenever shown:
# Cc controls (C0, DEL, C1), Cf format characters (bidi embeddings, overrides and isolates,
# zero-width space/joiners, word joiner, BOM, soft hyphen...), Zl/Zp line and paragraph
# separators, Cs lone surrogates, Co private use, Cn unassigned.
_UNSAFE_CATEGORIES = frozenset({"Cc", "Cf", "Zl", "Zp", "Cs", "Co", "Cn"})


def is_unsafe_char(ch: str) -> bool:
    return unicodedata.category(ch) in _UNSAFE_CATEGORIES


def display_name_problem(name: str, *, what: str = "the device name") -> str | None:
    """Why `name` cannot be a device name, or None."""
    if not name or not name.strip():
        return f"{what} is empty"
    if name != name.strip():
        return f"{what} starts or ends with spaces"
    for ch in name:
        if is_unsafe_char(ch):
            return (
                f"{what} contains the invisible or control character U+{ord(ch):04X} "
                f"({unicodedata.name(ch, 'unnamed')}); use visible characters only"
            )
    return None


SHOWN_PATH = 80  # characters of a path a message shows: `shown(path, SHOWN_PATH)`

# lone surrogates: what Python makes of each byte of an on-disk name that is not UTF-8
# (surrogateescape), and what JSON can spell (``"\\udcff"``); no UTF-8 text holds one, so no
# index, record, file id or other device can
LONE_SURROGATES = "\ud800-\udfff"  # a regex character range
_LONE_SURROGATE = re.compile(f"[{LONE_SURROGATES}]")


def is_unicode(text: str) -> bool:
    """Whether `text` is text UTF-8 can hold (no lone surrogate)."""
    return _LONE_SURROGATE.search(text) is None


def shown(text: str, limit: int | None = None) -> str:
    """`text` with every control, format or invisible character escaped as ``\\uXXXX``; with
    `limit`, a longer text keeps its start and its end around an ellipsis (a path of 4,000
    bytes an agent made up must not fill a terminal or a log line)."""
    if limit is not None and len(text) > limit:
        tail = max(limit // 4, 1)
        text = text[: limit - tail - 1] + "\u2026" + text[-tail:]
    if text.isprintable() and not any(is_unsafe_char(c) for c in text):
        return text
    out = []
    for ch in text:
        if is_unsafe_char(ch) or (not ch.isprintable() and ch != " "):
            code = ord(ch)
            out.append(f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}")
        else:
            out.append(ch)
    return "".join(out)
