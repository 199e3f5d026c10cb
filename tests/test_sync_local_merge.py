"""Three-way text merge: examples and properties."""

from __future__ import annotations

import pytest
from hypothesis import assume, example, given, settings
from hypothesis import strategies as st

from companion.sync.round.merge import derives_from, is_text, merge_bytes, merge_text


def test_identical_edits_merge_cleanly() -> None:
    r = merge_text("a\nb\nc\n", "a\nB\nc\n", "a\nB\nc\n")
    assert r.clean and r.text == "a\nB\nc\n"


def test_one_side_only() -> None:
    assert merge_text("a\n", "a\nb\n", "a\n").text == "a\nb\n"
    assert merge_text("a\n", "a\n", "a\nb\n").text == "a\nb\n"


def test_non_overlapping_edits_merge_cleanly() -> None:
    base = "# Title\n\nalpha\nbeta\ngamma\ndelta\n"
    ours = "# Title\n\nALPHA\nbeta\ngamma\ndelta\n"
    theirs = "# Title\n\nalpha\nbeta\ngamma\nDELTA\nepsilon\n"
    r = merge_text(base, ours, theirs)
    assert r.clean
    assert r.text == "# Title\n\nALPHA\nbeta\ngamma\nDELTA\nepsilon\n"


def test_overlapping_edits_are_not_clean() -> None:
    r = merge_text("a\nb\nc\n", "a\nX\nc\n", "a\nY\nc\n")
    assert not r.clean and r.text is None and r.conflicts == 1


def test_two_insertions_at_the_same_place_are_not_clean() -> None:
    r = merge_text("a\n", "a\nmine\n", "a\ntheirs\n")
    assert not r.clean


def test_delete_against_edit_of_the_same_line_is_not_clean() -> None:
    assert not merge_text("a\nb\nc\n", "a\nc\n", "a\nB\nc\n").clean


def test_crlf_note_stays_crlf_when_other_side_uses_lf() -> None:
    base = "one\r\ntwo\r\nthree\r\n"
    ours = "ONE\r\ntwo\r\nthree\r\n"
    theirs = "one\ntwo\nthree\nfour\n"  # saved by an LF editor, with an addition
    r = merge_text(base, ours, theirs)
    assert r.clean and r.text == "ONE\r\ntwo\r\nthree\r\nfour\r\n"


def test_missing_final_newline_does_not_cause_a_conflict() -> None:
    base = "first\nmiddle\nlast"
    ours = "FIRST\nmiddle\nlast"
    theirs = "first\nmiddle\nlast\nappended"
    r = merge_text(base, ours, theirs)
    assert r.clean and r.text == "FIRST\nmiddle\nlast\nappended"


def test_final_newline_added_on_one_side_is_kept() -> None:
    r = merge_text("a\nb", "A\nb", "a\nb\n")
    assert r.clean and r.text == "A\nb\n"


def test_mixed_line_endings_merge_as_is() -> None:
    base = "a\r\nb\nc\n"
    r = merge_text(base, "a\r\nb\nC\n", "A\r\nb\nc\n")
    assert r.clean and r.text == "A\r\nb\nC\n"


@pytest.mark.parametrize(
    ("data", "text"),
    [
        (b"", True),
        (b"hello\n", True),
        ("caf\u00e9 \u2014 \U0001f600".encode(), True),
        (b"\xef\xbb\xbfbom\n", True),
        (b"nul\x00inside", False),
        (b"\xff\xfe\x00", False),
        (b"\xc3", False),  # truncated UTF-8
        (b"latin1 \xe9", False),
    ],
)
def test_text_detection(data: bytes, text: bool) -> None:
    assert is_text(data) is text


def test_merge_bytes_refuses_binary() -> None:
    assert not merge_bytes(b"a\n", b"a\x00\n", b"b\n").clean
    assert merge_bytes(b"a\n", b"a\nb\n", b"a\n").text == "a\nb\n"


# ----------------------------------------------------------------------------- properties

_any_line = st.text(alphabet="ab\r\n é", max_size=8)
_doc = st.lists(_any_line, max_size=8).map("".join)


@settings(max_examples=300, deadline=None)
@given(base=_doc, x=_doc)
def test_merge_with_unchanged_other_side_returns_the_edit(base: str, x: str) -> None:
    assert merge_text(base, x, base).text == x
    assert merge_text(base, base, x).text == x
    assert merge_text(base, x, x).text == x


@st.composite
def _two_disjoint_edits(draw: st.DrawFn) -> tuple[list[str], list[str], list[str], list[str]]:
    """A base of unique lines and two edits of separate regions (at least one line between)."""
    n = draw(st.integers(min_value=3, max_value=14))
    base = [f"line {i}" for i in range(n)]
    i1 = draw(st.integers(0, n - 3))
    j1 = draw(st.integers(i1, min(i1 + 3, n - 2)))  # ours replaces base[i1:j1]
    i2 = draw(st.integers(j1 + 1, n))
    j2 = draw(st.integers(i2, min(i2 + 3, n)))  # theirs replaces base[i2:j2]
    new1 = [f"ours {k}" for k in range(draw(st.integers(0, 3)))]
    new2 = [f"theirs {k}" for k in range(draw(st.integers(0, 3)))]
    assume(new1 or j1 > i1)
    assume(new2 or j2 > i2)
    ours = base[:i1] + new1 + base[j1:]
    theirs = base[:i2] + new2 + base[j2:]
    both = base[:i1] + new1 + base[j1:i2] + new2 + base[j2:]
    return base, ours, theirs, both


def _join(lines: list[str], eol: str) -> str:
    return "".join(x + eol for x in lines)


@settings(max_examples=300, deadline=None)
@given(case=_two_disjoint_edits(), eol=st.sampled_from(["\n", "\r\n"]))
def test_non_overlapping_edits_keep_both(
    case: tuple[list[str], list[str], list[str], list[str]], eol: str
) -> None:
    base, ours, theirs, both = case
    r = merge_text(_join(base, eol), _join(ours, eol), _join(theirs, eol))
    assert r.clean, (base, ours, theirs)
    assert r.text == _join(both, eol)
    # and it is symmetric
    r2 = merge_text(_join(base, eol), _join(theirs, eol), _join(ours, eol))
    assert r2.text == r.text


@settings(max_examples=200, deadline=None)
@given(base=_doc, ours=_doc, theirs=_doc)
# mixed line endings: only "\n" separates lines, so theirs' line is "\r\r" (found by hypothesis)
@example(base="a\n", ours="a", theirs="\r\r\n")
def test_a_clean_merge_never_invents_lines(base: str, ours: str, theirs: str) -> None:
    r = merge_text(base, ours, theirs)
    if r.clean:
        assert r.text is not None

        def lines(t: str) -> set[str]:  # as the merge splits them, with CRLF or without
            return set(t.split("\n")) | set(t.replace("\r\n", "\n").split("\n"))

        merged = set(r.text.replace("\r\n", "\n").split("\n"))
        assert merged <= lines(base) | lines(ours) | lines(theirs)


# ------------------------------------------------------------------ the stale-save test


@pytest.mark.parametrize(
    ("prev", "head", "local", "derived"),
    [
        # an editor's buffer from before the apply, edited elsewhere: stale
        (b"a\nb\nc\n", b"a\nB\nc\n", b"a\nb\nc\nd\n", True),
        (b"a\nb\nc\n", b"a\nB\nc\n", b"a\nb\nc\n", True),
        # the new version, edited: appending right after what `head` appended
        (b"v0\nx\n", b"v0\nx\nhead\n", b"v0\nx\nhead\nmine\n", False),
        # the new version, edited: both dropped the same line (merge3 reports no region)
        (b"v0\nx\ngone\n", b"v0\nx\n", b"v1\nx\n", False),
        # the new version, edited: `head`'s replacement line kept, one typed after it
        (b"a\nb\nc\n", b"a\nB\nc\n", b"a\nB\nB2\nc\n", False),
        # `head` deleted a line, `local` replaced it with another: no sign it saw `head`
        (b"a\nb\nc\n", b"a\nc\n", b"a\nz\nc\n", True),
        # `head` dropped one of two lines, `local` kept the other and changed the first
        (b"a\nx\ny\nc\n", b"a\nx\nc\n", b"a\nx\nz\nc\n", True),
        # the same new line on both sides
        (b"a\n", b"a\nb\n", b"a\nb\n", False),
        # issue 42.3: `head`'s new line kept, the line next to it edited (one stretch for
        # merge3, `head`'s change and the edit side by side): the new version, edited
        (b"l1\nl2\nl3\n", b"l1 head\nl2\nl3\n", b"l1 head\nl2 mine\nl3\n", False),
        (b"l1\nl2\nl3\n", b"l1\nl2 head\nl3\n", b"l1 mine\nl2 head\nl3\n", False),
        # `head` deleted line 1, `local` has no line 1 and edited line 2: it holds the deletion
        (b"l1\nl2\nl3\n", b"l2\nl3\n", b"l2 mine\nl3\n", False),
        # ... but one that keeps line 1, or puts another in its place, does not
        (b"l1\nl2\nl3\n", b"l2\nl3\n", b"l1\nl2 mine\nl3\n", True),
        (b"l1\nl2\nl3\n", b"l2\nl3\n", b"l1 mine\nl2 mine\nl3\n", True),
        # the line next to `head`'s edited, `head`'s change dropped: stale
        (b"l1\nl2\nl3\n", b"l1 head\nl2\nl3\n", b"l1\nl2 mine\nl3\n", True),
    ],
)
def test_whether_a_save_was_made_from_the_replaced_version(
    prev: bytes, head: bytes, local: bytes, derived: bool
) -> None:
    assert derives_from(prev, head, local) is derived
