"""The conflict decision: every rule, the naming of conflict copies, and "no version is lost"."""

from __future__ import annotations

from datetime import datetime

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from companion.sync.local.pathsafe import normalize
from companion.sync.round.conflicts import (
    AGENT,
    HUMAN,
    KINDS,
    MAX_NAME_BYTES,
    Outcome,
    Version,
    case_collision_name,
    conflict_copy_name,
    resolve,
    sanitize_device,
)

WHEN = datetime(2024, 5, 1, 15, 30)


def v(data: bytes | None, name: str = "laptop", kind: str = HUMAN) -> Version:
    return Version(data, name, kind)


def laptop(data: bytes | None) -> Version:
    return v(data, "laptop", HUMAN)


def server(data: bytes | None) -> Version:
    return v(data, "server", AGENT)


# ----------------------------------------------------------------------------- naming


def test_conflict_copy_name_format_keeps_folder_and_extension() -> None:
    assert (
        conflict_copy_name("knowledge/Note.md", "server", WHEN)
        == "knowledge/Note (conflict server 2024-05-01 1530).md"
    )
    assert conflict_copy_name("a.tar.gz", "pc", WHEN) == "a.tar (conflict pc 2024-05-01 1530).gz"
    assert conflict_copy_name("README", "pc", WHEN) == "README (conflict pc 2024-05-01 1530)"


def test_conflict_copy_name_is_unique_against_taken_paths() -> None:
    first = "Note (conflict pc 2024-05-01 1530).md"
    second = "Note (conflict pc 2024-05-01 1530 2).md"
    assert conflict_copy_name("Note.md", "pc", WHEN, lambda p: p == first) == second
    taken = {first, second}
    assert conflict_copy_name("Note.md", "pc", WHEN, taken.__contains__) == (
        "Note (conflict pc 2024-05-01 1530 3).md"
    )


@pytest.mark.parametrize(
    ("raw", "clean"),
    [
        ("My Laptop", "My Laptop"),
        ('a/b\\c:d*e?f"g<h>i|j', "a_b_c_d_e_f_g_h_i_j"),
        ("  tabs\tand\nnewlines  ", "tabs and newlines"),
        ("...", "unknown device"),
        ("", "unknown device"),
        ("x" * 100, "x" * 40),
    ],
)
def test_device_names_are_sanitised_for_file_names(raw: str, clean: str) -> None:
    assert sanitize_device(raw) == clean


def test_conflict_copy_of_a_long_name_fits_the_file_name_limit() -> None:
    stem = "é" * 200  # 400 bytes in UTF-8
    name = conflict_copy_name(f"dir/{stem}.md", "server", WHEN)
    last = name.rsplit("/", 1)[1]
    assert len(last.encode()) <= MAX_NAME_BYTES
    assert last.endswith(" (conflict server 2024-05-01 1530).md")
    normalize(name)  # still a valid vault path


def test_case_collision_name() -> None:
    assert case_collision_name("dir/note.md") == "dir/note (case conflict).md"
    taken = {"dir/note (case conflict).md"}
    assert case_collision_name("dir/note.md", taken.__contains__) == (
        "dir/note (case conflict 2).md"
    )


def test_version_rejects_unknown_kind() -> None:
    with pytest.raises(ValueError):
        Version(b"x", "pc", "robot")


# ----------------------------------------------------------------------------- rules


def test_identical_content_needs_nothing() -> None:
    r = resolve("n.md", laptop(b"same"), server(b"same"), b"old", when=WHEN)
    assert r.outcome is Outcome.IDENTICAL
    assert (r.write_local, r.push, r.copy) == (False, False, None)


def test_both_deleted_needs_nothing() -> None:
    r = resolve("n.md", laptop(None), server(None), b"old", when=WHEN)
    assert r.outcome is Outcome.BOTH_DELETED
    assert r.note is None and not r.write_local and not r.push


def test_local_unchanged_takes_remote() -> None:
    r = resolve("n.md", laptop(b"base"), server(b"new"), b"base", when=WHEN)
    assert r.outcome is Outcome.TAKE_REMOTE
    assert r.note == b"new" and r.write_local and not r.push and r.copy is None


def test_remote_unchanged_keeps_local() -> None:
    r = resolve("n.md", laptop(b"mine"), server(b"base"), b"base", when=WHEN)
    assert r.outcome is Outcome.KEEP_LOCAL
    assert r.note == b"mine" and not r.write_local and r.push


def test_remote_delete_of_unchanged_local_file_deletes_it() -> None:
    r = resolve("n.md", laptop(b"base"), server(None), b"base", when=WHEN)
    assert r.outcome is Outcome.TAKE_REMOTE
    assert r.note is None and r.write_local and not r.push


@pytest.mark.parametrize("base", [b"base", None])
def test_remote_delete_against_local_edit_keeps_the_edit(base: bytes | None) -> None:
    r = resolve("n.md", laptop(b"edited"), server(None), base, when=WHEN)
    assert r.outcome is Outcome.KEEP_EDIT
    assert r.note == b"edited" and not r.write_local and r.push and r.copy is None


@pytest.mark.parametrize("base", [b"base", None])
def test_local_delete_against_remote_edit_keeps_the_edit(base: bytes | None) -> None:
    r = resolve("n.md", laptop(None), server(b"edited"), base, when=WHEN)
    assert r.outcome is Outcome.KEEP_EDIT
    assert r.note == b"edited" and r.write_local and not r.push


def test_agent_delete_never_beats_human_edit_even_for_binary() -> None:
    blob = bytes(range(256))
    r = resolve("img.png", v(blob, "laptop", HUMAN), v(None, "server", AGENT), None, when=WHEN)
    assert r.note == blob


def test_text_edits_in_different_places_are_merged() -> None:
    base = b"title\n\none\ntwo\nthree\n"
    mine = b"title\n\nONE\ntwo\nthree\n"
    theirs = b"title\n\none\ntwo\nthree\nfour\n"
    r = resolve("n.md", laptop(mine), server(theirs), base, when=WHEN)
    assert r.outcome is Outcome.MERGED
    assert r.note == b"title\n\nONE\ntwo\nthree\nfour\n"
    assert r.write_local and r.push and r.copy is None


def test_human_beats_agent_on_overlapping_edit() -> None:
    base, mine, theirs = b"a\nb\nc\n", b"a\nHUMAN\nc\n", b"a\nAGENT\nc\n"
    r = resolve("k/n.md", laptop(mine), server(theirs), base, when=WHEN)
    assert r.outcome is Outcome.LOCAL_WINS
    assert r.note == mine and not r.write_local and r.push
    assert r.copy is not None
    assert r.copy.data == theirs and r.copy.device_name == "server"
    assert r.copy.path == "k/n (conflict server 2024-05-01 1530).md"
    assert "conflict" in r.message and r.copy.path in r.message


def test_human_remote_beats_agent_local() -> None:
    base, mine, theirs = b"a\nb\nc\n", b"a\nAGENT\nc\n", b"a\nHUMAN\nc\n"
    r = resolve("n.md", server(mine), laptop(theirs), base, when=WHEN)
    assert r.outcome is Outcome.REMOTE_WINS
    assert r.note == theirs and r.write_local and not r.push
    assert r.copy is not None and r.copy.data == mine and r.copy.device_name == "server"


@pytest.mark.parametrize("kind", [HUMAN, AGENT])
def test_same_kind_remote_head_keeps_the_note(kind: str) -> None:
    base, mine, theirs = b"x\n", b"mine\n", b"theirs\n"
    r = resolve("n.md", v(mine, "pc1", kind), v(theirs, "pc2", kind), base, when=WHEN)
    assert r.outcome is Outcome.REMOTE_WINS
    assert r.note == theirs and r.write_local and not r.push
    assert r.copy is not None and r.copy.data == mine
    assert r.copy.path == "n (conflict pc1 2024-05-01 1530).md"


def test_binary_files_get_a_conflict_copy_never_a_merge() -> None:
    base, mine, theirs = b"\x00\x01base", b"\x00\x01mine", b"\x00\x01theirs"
    r = resolve("f.bin", laptop(mine), server(theirs), base, when=WHEN)
    assert r.outcome is Outcome.LOCAL_WINS
    assert r.copy is not None and r.copy.data == theirs


def test_unknown_base_is_never_guessed() -> None:
    # without a common version, even "obviously" mergeable texts are a conflict
    r = resolve("n.md", laptop(b"a\nb\n"), server(b"a\nb\nc\n"), None, when=WHEN)
    assert r.copy is not None
    assert {r.note, r.copy.data} == {b"a\nb\n", b"a\nb\nc\n"}


def test_both_created_with_empty_base_conflicts_unless_equal() -> None:
    r = resolve("n.md", laptop(b"one\n"), server(b"two\n"), b"", when=WHEN)
    assert r.copy is not None


def test_copy_name_respects_taken() -> None:
    taken = {"n (conflict server 2024-05-01 1530).md"}
    r = resolve("n.md", laptop(b"1\n"), server(b"2\n"), b"0\n", when=WHEN, taken=taken.__contains__)
    assert r.copy is not None and r.copy.path == "n (conflict server 2024-05-01 1530 2).md"


# ----------------------------------------------------------------------------- properties

_lines = st.lists(st.sampled_from(["a", "b", "c", "dd", "", "# h", "- x"]), max_size=6)
_text = _lines.map(lambda ls: "".join(x + "\n" for x in ls).encode())
_binary = st.binary(max_size=12).map(lambda b: b"\x00" + b)
_content = st.one_of(st.none(), _text, _binary)
_side = st.tuples(_content, st.sampled_from(["pc1", "pc2", "srv"]), st.sampled_from(KINDS))


def _lines_of(data: bytes) -> set[bytes]:
    return set(data.splitlines())


@settings(max_examples=400, deadline=None)
@given(local=_side, remote=_side, base=st.one_of(st.none(), _text, _binary))
def test_no_version_is_ever_lost(
    local: tuple[bytes | None, str, str],
    remote: tuple[bytes | None, str, str],
    base: bytes | None,
) -> None:
    lv, rv = Version(*local), Version(*remote)
    r = resolve("dir/note.md", lv, rv, base, when=WHEN)
    kept = {r.note}
    if r.copy is not None:
        kept.add(r.copy.data)
        assert r.copy.data != r.note
        assert normalize(r.copy.path) == r.copy.path
        assert r.copy.path != "dir/note.md"
    # the flags say exactly what differs
    assert r.write_local == (r.note != lv.data)
    assert r.push == (r.note != rv.data)
    # an edit always survives a delete
    if (lv.data is None) != (rv.data is None) and base is None:
        assert r.note is not None
    for side in (lv, rv):
        if side.data is None:
            continue
        if r.outcome is Outcome.MERGED:
            # a clean merge keeps every line a side added
            assert base is not None and r.note is not None
            added = _lines_of(side.data) - _lines_of(base)
            assert added <= _lines_of(r.note)
        else:
            # the version is in the note, in the copy, or was the common version
            assert side.data in kept or side.data == base
    # human precedence on a true conflict
    if r.copy is not None and {lv.device_kind, rv.device_kind} == {HUMAN, AGENT}:
        human = lv if lv.device_kind == HUMAN else rv
        assert r.note == human.data


@settings(max_examples=200, deadline=None)
@given(local=_side, remote=_side, base=st.one_of(st.none(), _text))
def test_resolution_is_deterministic(
    local: tuple[bytes | None, str, str],
    remote: tuple[bytes | None, str, str],
    base: bytes | None,
) -> None:
    a = resolve("n.md", Version(*local), Version(*remote), base, when=WHEN)
    b = resolve("n.md", Version(*local), Version(*remote), base, when=WHEN)
    assert a == b
