"""The frozen snapshot, byte for byte (expected text built here by hand, not with the module)."""

from __future__ import annotations

from pathlib import Path

from companion.memory import MemoryStore, Snapshot, render_block

BAR = "\u2550" * 46  # BOX DRAWINGS DOUBLE HORIZONTAL
EM = "\u2014"


def test_memory_block_matches_hermes_example_byte_for_byte() -> None:
    entries = ["a" * 735, "b" * 736]  # 735 + 3 + 736 = 1,474 chars
    expected = (
        BAR
        + "\n"
        + f"MEMORY (your personal notes) [67% {EM} 1,474/2,200 chars]\n"
        + BAR
        + "\n"
        + "a" * 735
        + "\n\u00a7\n"
        + "b" * 736
    )
    out = render_block("memory", entries, 2200)
    assert out == expected
    assert out.encode("utf-8") == expected.encode("utf-8")
    assert out.encode("utf-8")[:3] == b"\xe2\x95\x90"  # U+2550 as UTF-8


def test_user_block_header() -> None:
    out = render_block("user", ["entry one", "entry two"], 1375)
    assert out == (
        f"{BAR}\nUSER PROFILE (who the user is) [1% {EM} 21/1,375 chars]\n{BAR}\n"
        "entry one\n§\nentry two"
    )


def test_percent_is_truncated_and_capped_like_hermes() -> None:
    assert "[28% " in render_block("memory", ["x" * 29], 100)  # int(29/100*100) == 28 in floats
    assert "[99% " in render_block("memory", ["x" * 99], 100)
    assert "[100% " in render_block("memory", ["x" * 100], 100)
    assert f"[100% {EM} 2,500/2,200 chars]" in render_block("memory", ["x" * 2500], 2200)
    assert f"[0% {EM} 1/2,200 chars]" in render_block("memory", ["x"], 2200)


def test_thousands_commas() -> None:
    assert f"[50% {EM} 12,345/24,690 chars]" in render_block("memory", ["x" * 12345], 24690)


def test_empty_store_renders_nothing(tmp_path: Path) -> None:
    assert render_block("memory", [], 2200) == ""
    snap = Snapshot.capture(tmp_path)
    assert snap.memory == "" and snap.user == "" and snap.text() == ""


def test_snapshot_is_frozen_and_joins_both_blocks(tmp_path: Path) -> None:
    MemoryStore(tmp_path, "memory").add("note")
    MemoryStore(tmp_path, "user").add("likes tea")
    snap = Snapshot.capture(tmp_path, {"memory": 100, "user": 50})
    expected_memory = f"{BAR}\nMEMORY (your personal notes) [4% {EM} 4/100 chars]\n{BAR}\nnote"
    expected_user = f"{BAR}\nUSER PROFILE (who the user is) [18% {EM} 9/50 chars]\n{BAR}\nlikes tea"
    assert snap.memory == expected_memory and snap.user == expected_user
    assert snap.text() == expected_memory + "\n\n" + expected_user
    MemoryStore(tmp_path, "memory").add("later write")
    assert snap.memory == expected_memory  # the snapshot does not follow later writes
    assert "later write" in Snapshot.capture(tmp_path).memory


def test_snapshot_of_only_user_store(tmp_path: Path) -> None:
    MemoryStore(tmp_path, "user").add("only user")
    snap = Snapshot.capture(tmp_path)
    assert snap.memory == "" and snap.text() == snap.user
