"""Managed blocks, provenance references, and the plan's guard on every edit."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from companion.dream import blocks
from companion.dream.blocks import Ref
from companion.dream.plan import EditRefused, Plan, check_edit
from companion.dream.secretgate import SecretGate
from companion.dream.state import DreamState, MtimeEditors

NOTE = "# Title\n\nThe person's text.\n"


def test_ref_round_trip_with_awkward_characters():
    for ref in [
        Ref("journal/2026-11-27.md", 12),
        Ref("hermes:~/.hermes/state.db", None, "42"),
        Ref("claude:/p/a|b#c&d>e.jsonl", 7, "uuid-1&2"),
        Ref("knowledge/100% sure.md"),
    ]:
        assert Ref.parse(ref.format()) == ref
        assert blocks.parse_refs(blocks.format_refs([ref, ref])[len("<!-- src: ") : -4]) == [
            ref,
            ref,
        ]
        assert "-->" not in ref.format()


@given(
    st.text(min_size=1, max_size=40),
    st.one_of(st.none(), st.integers(1, 10**6)),
    st.one_of(st.none(), st.text(min_size=1, max_size=20)),
)
@settings(max_examples=200, deadline=None)
def test_ref_round_trip_property(source, line, mid):
    source = source.replace("\n", " ") or "x"
    if mid is not None:
        mid = mid.replace("\n", " ")
    ref = Ref(source, line, mid)
    line_text = blocks.render_line("Some lesson here.", [ref])
    parsed = blocks.dream_lines(f"{blocks.BEGIN_TEXT['content']}\n{line_text}\n{blocks.END}\n")
    assert parsed[0].refs == (ref,)


def test_add_lines_creates_then_extends_one_block():
    a = blocks.add_lines(NOTE, ["- one <!-- src: j.md#L1 -->"])
    assert a.startswith(NOTE) and a.count("<!-- dream:begin -->") == 1
    b = blocks.add_lines(a + "\nMore of the person's text.\n", ["- two <!-- src: j.md#L2 -->"])
    assert b.count("<!-- dream:begin -->") == 1  # inserted into the existing block
    assert [d.text for d in blocks.dream_lines(b)] == ["- one", "- two"]
    assert b.rstrip().endswith("More of the person's text.")


def test_unclosed_begin_marker_is_not_a_block():
    text = "<!-- dream:begin -->\n- the person's line\n"
    assert blocks.dream_lines(text) == []
    after = blocks.add_lines(text, ["- a <!-- src: j.md#L1 -->"])
    assert after.startswith(text)


def test_blank_blocks_keeps_line_numbers():
    text = blocks.add_lines(NOTE, ["- a <!-- src: j.md#L1 -->"]) + "tail\n"
    blanked = blocks.blank_blocks(text)
    assert blanked.count("\n") == text.count("\n") and "src:" not in blanked


@pytest.mark.parametrize(
    ("before", "after", "ok"),
    [
        (NOTE, blocks.add_lines(NOTE, ["- a <!-- src: j.md#L1 -->"]), True),
        (NOTE, NOTE.replace("person's", "dream's"), False),  # a human line changed
        (NOTE, NOTE + "An invented line.\n", False),  # a line outside a block
        (NOTE, blocks.add_lines(NOTE, ["- no provenance"]), False),
        (blocks.add_lines(NOTE, ["- a <!-- src: j.md#L1 -->"]), NOTE + "\n", True),  # own line
        (
            None,
            "---\ntags: [dream]\n---\n"
            + blocks.append_block("", "content", ["- a <!-- src: j.md#L1 -->"]),
            True,
        ),
        (None, "# A heading the dream invented\n", False),
    ],
)
def test_check_edit(before, after, ok):
    if ok:
        check_edit(before, after)
    else:
        with pytest.raises(EditRefused):
            check_edit(before, after)


def test_check_edit_link_repair_only_inside_links():
    before = "See [[raspberry-pi Setup#Power|the Pi]] for details.\n"
    check_edit(
        before, before.replace("raspberry-pi Setup", "Raspberry Pi setup"), allow_link_edit=True
    )
    with pytest.raises(EditRefused):
        check_edit(before, before.replace("details", "more"), allow_link_edit=True)
    with pytest.raises(EditRefused):
        check_edit(before, before.replace("raspberry-pi Setup", "Raspberry Pi setup"))


def _plan(root: Path, **kw) -> Plan:
    state = DreamState(root / "state.json")
    return Plan(
        root=root,
        is_secret=SecretGate(),
        max_removals=kw.get("cap", 10),
        editors=MtimeEditors(root, state),
        now=dt.datetime.now(dt.UTC),
        human_window=dt.timedelta(hours=0),
    )


def test_plan_refuses_notes_holding_secrets_and_keeps_crlf(tmp_path):
    (tmp_path / "secret.md").write_text("password = Sup3r-S3cret-Value-9921\n", encoding="utf-8")
    (tmp_path / "crlf.md").write_bytes(b"# T\r\n\r\nText.\r\n")
    (tmp_path / "mixed.md").write_bytes(b"# T\r\nText.\n")
    plan = _plan(tmp_path)
    line = ["- a lesson <!-- src: j.md#L1 -->"]
    assert (
        plan.write(
            "secret.md",
            blocks.add_lines(plan.read("secret.md"), line),
            kind="consolidated",
            summary="x",
        )
        is None
    )
    assert any("secret" in w for w in plan.warnings)
    ch = plan.write(
        "crlf.md", blocks.add_lines(plan.read("crlf.md"), line), kind="consolidated", summary="x"
    )
    assert ch is not None and ch.after.count("\r\n") == ch.after.count("\n")
    assert plan.read("mixed.md") is None
    plan.apply(DreamState(tmp_path / "st.json"))
    assert (tmp_path / "crlf.md").read_bytes().startswith(b"# T\r\n\r\nText.\r\n")


def test_plan_never_overwrites_a_file_changed_during_the_dream(tmp_path):
    (tmp_path / "n.md").write_text(NOTE, encoding="utf-8")
    plan = _plan(tmp_path)
    assert plan.write(
        "n.md",
        blocks.add_lines(NOTE, ["- a <!-- src: j.md#L1 -->"]),
        kind="consolidated",
        summary="x",
    )
    (tmp_path / "n.md").write_text(NOTE + "typed meanwhile\n", encoding="utf-8")
    assert plan.apply(DreamState(tmp_path / "st.json")) == []
    assert (tmp_path / "n.md").read_text(encoding="utf-8").endswith("typed meanwhile\n")
    assert any("changed on disk" in w for w in plan.warnings)


def test_plan_removal_cap(tmp_path):
    text = blocks.add_lines(NOTE, ["- a <!-- src: j.md#L1 -->", "- b <!-- src: j.md#L2 -->"])
    (tmp_path / "n.md").write_text(text, encoding="utf-8")
    plan = _plan(tmp_path, cap=1)
    assert plan.write("n.md", NOTE + "\n", kind="corrected", summary="x", removed=2) is None
    assert plan.removed == 0 and any("removal cap" in w for w in plan.warnings)


def test_own_writes_are_not_human_edits(tmp_path):
    (tmp_path / "n.md").write_text(NOTE, encoding="utf-8")
    state = DreamState(tmp_path / "st.json")
    editors = MtimeEditors(tmp_path, state)
    assert editors.last_human_edit("n.md") is not None
    state.record_write("n.md", NOTE.encode())
    assert editors.last_human_edit("n.md") is None
    (tmp_path / "n.md").write_text(NOTE + "x\n", encoding="utf-8")
    assert editors.last_human_edit("n.md") is not None
