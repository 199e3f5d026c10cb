"""The review as the desktop app reads and decides it (`companion.review.desk`), without Qt:
a decision is a tick of exactly its line, written whole; the counts are the open items."""

from __future__ import annotations

from pathlib import Path

from companion.review import desk
from companion.review import note as notes
from tests.test_review import _review

REL = "review/2026-11-29.md"


def _vault(tmp_path: Path) -> tuple[Path, str]:
    root = tmp_path / "vault"
    (root / "review").mkdir(parents=True)
    text = notes.render(_review())
    (root / REL).write_text(text, encoding="utf-8")
    return root, text


def test_a_tick_changes_exactly_its_line(tmp_path: Path) -> None:
    root, before = _vault(tmp_path)
    item = _review().changes[0].id
    writes: list[Path] = []

    def write(path: Path, text: str) -> None:
        writes.append(path)
        path.write_text(text, encoding="utf-8")

    assert desk.tick(root, item, "revert", write=write) == desk.Ticked(desk.TICKED, REL)
    after = (root / REL).read_text(encoding="utf-8")
    changed = [(a, b) for a, b in zip(before.split("\n"), after.split("\n"), strict=True) if a != b]
    assert changed == [
        (f"- [ ] Revert this change `{item}/r`", f"- [x] Revert this change `{item}/r`")
    ]
    assert writes == [root / REL]  # one whole write (write_text_atomic in the app)
    assert desk.tick(root, item, "revert").status == desk.ALREADY


def test_a_decided_or_unknown_line_is_not_ticked(tmp_path: Path) -> None:
    root, text = _vault(tmp_path)
    pid = _review().proposals[0].id
    decided = notes.set_outcome(text, (pid, "a"), "applied 08:14, ticked on laptop", ticked=True)
    (root / REL).write_text(decided, encoding="utf-8")
    assert desk.tick(root, pid, "apply").status == desk.DECIDED
    assert desk.tick(root, pid, "revert").status == desk.NOT_OFFERED
    assert desk.tick(root, "c-0000000000", "revert").status == desk.UNKNOWN
    assert (root / REL).read_text(encoding="utf-8") == decided


def test_counts_are_the_notes_open_items(tmp_path: Path) -> None:
    root, text = _vault(tmp_path)
    assert desk.note_for(root) == REL and desk.note_for(root, "2026-11-28") is None
    assert desk.open_counts(root, REL) == {"change": 3, "disagreement": 1, "proposal": 1}
    item = _review().changes[0].id
    done = notes.set_outcome(text, (item, "r"), "reverted 08:14 from phone", ticked=True)
    (root / REL).write_text(done, encoding="utf-8")
    assert desk.open_counts(root, REL) == {"change": 2, "disagreement": 1, "proposal": 1}
    view = desk.read(root, None)  # no relay: the note alone
    assert view.note == REL and view.night == "2026-11-29" and not view.attested
    got = view.item(item)
    assert got is not None and got.state == "decided"
    assert got.outcome == "reverted 08:14 from phone"


def test_no_note_yet(tmp_path: Path) -> None:
    assert desk.read(tmp_path, None) == desk.View(None)
