"""The Hermes memory file format as pure functions: delimiter, BOM, strip, dedupe, round trip."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from companion.memory import format as fmt

D = "\n\u00a7\n"  # written out independently of fmt.DELIMITER


def test_delimiter_is_newline_section_sign_newline() -> None:
    assert fmt.DELIMITER == D
    assert fmt.serialise(["one", "two"]) == "one\n§\ntwo"
    assert fmt.serialise([]) == ""


def test_parse_splits_on_full_delimiter_only() -> None:
    text = "see §3 of the contract\n§\nmulti\nline § entry\n§\n§ at start, § at end §"
    assert fmt.parse(text) == [
        "see §3 of the contract",
        "multi\nline § entry",
        "§ at start, § at end §",
    ]


def test_parse_tolerates_crlf_whitespace_and_duplicates() -> None:
    text = "  first \r\n§\r\nsecond\n§\n\n§\nfirst\n§\nthird\n\n"
    assert fmt.parse(text) == ["first", "second", "third"]


def test_a_bom_stays_in_the_first_entry_as_hermes_reads_it() -> None:
    # Hermes reads "utf-8", not "utf-8-sig": the BOM is text, and its scanner then hides the
    # entry; the store removes it on its next write (test_memory_store).
    assert fmt.decode(b"\xef\xbb\xbfa\r\n\xc2\xa7\r\nb") == "\ufeffa\n§\nb"
    assert fmt.parse("\ufeff  first \n§\nsecond") == ["\ufeff  first", "second"]


def test_empty_file_is_empty_store() -> None:
    assert fmt.parse("") == []
    assert fmt.parse(" \n\n ") == []
    assert fmt.round_trips("")


def test_round_trips_accepts_clean_and_harmless_variants() -> None:
    assert fmt.round_trips("a\n§\nb")
    assert fmt.round_trips("\ufeffa\n§\nb")  # BOM
    assert fmt.round_trips("a\r\n§\r\nb")  # CRLF
    assert fmt.round_trips("a\n§\nb\n")  # an editor's trailing newline
    assert fmt.round_trips("a\n§\na")  # duplicate: first kept, nothing lost
    assert fmt.round_trips("x § y\n§\nz")  # bare section sign inside an entry


def test_round_trips_rejects_shapes_the_format_cannot_hold() -> None:
    assert not fmt.round_trips("a \n§\nb")  # whitespace around an entry
    assert not fmt.round_trips("a\n\n§\nb")
    assert not fmt.round_trips("a\n§\n\n§\nb")  # empty entry between two delimiters
    # A line holding only "§" at the very start or end of the file is not a delimiter to
    # Hermes: it stays inside the first or last entry, and the file round-trips.
    assert fmt.round_trips("a\n§\nb\n§")
    assert fmt.round_trips("§\na\n§\nb")


def test_entry_problem_refuses_only_a_line_holding_only_section_sign() -> None:
    assert fmt.entry_problem("a § b") is None
    assert fmt.entry_problem("§ heading\nbody") is None
    assert fmt.entry_problem("a\n§ \nb") is None
    assert fmt.entry_problem("a\n§\nb") is not None
    assert fmt.entry_problem("a\n§") is not None
    assert fmt.entry_problem("§\nb") is not None
    assert fmt.entry_problem("") is not None


def test_preview_is_one_short_line() -> None:
    p = fmt.preview("line one\nline two " + "x" * 100, width=30)
    assert "\n" not in p and len(p) == 30 and p.endswith("…")


_ALPHABET = st.sampled_from(list("ab §\n\r\t é€") + ["\ufeff"])
_texts = st.text(_ALPHABET, max_size=40)
_entries = st.lists(
    _texts.map(fmt.normalise_entry).filter(lambda e: fmt.entry_problem(e) is None),
    unique=True,
    max_size=8,
).map(lambda es: [e for e in es if not e.startswith("\ufeff")])


@given(_entries)
def test_serialise_then_parse_is_identity(entries: list[str]) -> None:
    text = fmt.serialise(entries)
    assert fmt.parse(text) == entries
    assert fmt.round_trips(text)
    assert fmt.decode(fmt.encode(text)) == text


@given(_texts)
def test_round_trips_means_rejoin_is_unchanged(text: str) -> None:
    if fmt.round_trips(text):
        body = fmt.normalise_newlines(text.removeprefix("\ufeff")).strip()
        pieces = [p.strip() for p in body.split(D) if p.strip()] if body else []
        assert D.join(pieces) == body
