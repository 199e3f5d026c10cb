"""The resync after a relay restored from a backup, as vectors (docs/protocol.md R3).

`tests/vectors/resync_v1.json` is written from the Python engine's own `plan.plan_resync`: for
each case, the files this device synced (its index entries), the head of each file the relay
now has, the paths whose record at this device's revision the resync reads (`resync_checks`)
with the records the relay has there (`at_rev`), and the steps the planner returns
(`Renumber`: the relay holds this device's version, or both lost the file, at another
revision; `Reoffer`: the relay lost this device's version, which is committed again on top of
the relay's revision; `Diverged`: the relay holds another version at this device's very
revision, committed after the restore, maybe edited again since, so both changed the file and
it is reconciled like any two-sided change). Newer on the relay is no step otherwise: it is
applied as usual. `obsidian-plugin/test/resync-vectors.test.ts` replays them against the
plugin's `planResync`. Regenerate only on purpose:
python tests/test_sync_resync_vectors.py --write
"""

from __future__ import annotations

import hashlib
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from companion.crypto import ChunkRef, FileMeta
from companion.sync.remote.vault import RemoteChange
from companion.sync.round.plan import Diverged, Renumber, Reoffer, plan_resync, resync_checks
from companion.sync.state.files import Entry

VECTORS = Path(__file__).parent / "vectors" / "resync_v1.json"


def sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


# A file as (path, rev, text): text None is a deletion.
Side = tuple[str, int, str | None]

# (name, this device's entries, the relay's heads after the restore[, its records at this
# device's revision of the files resync_checks names, where it has them])
CASES: list[tuple[str, list[Side], list[Side]] | tuple[str, list[Side], list[Side], list[Side]]] = [
    ("nothing synced, nothing on the relay", [], []),
    ("the relay has the same revision", [("a.md", 2, "a")], [("a.md", 2, "a")]),
    ("newer on the relay: applied as usual", [("a.md", 1, "a")], [("a.md", 4, "a2")]),
    ("deleted on the relay after this device's revision", [("a.md", 2, "a")], [("a.md", 3, None)]),
    ("same bytes at an older revision: renumbered", [("a.md", 5, "a")], [("a.md", 3, "a")]),
    ("same bytes at a newer revision: nothing to do", [("a.md", 2, "a")], [("a.md", 6, "a")]),
    ("the relay lost the file: offered again on 0", [("a.md", 2, "a")], []),
    ("an older, different version on the relay: offered again", [("a.md", 4, "a")],
     [("a.md", 2, "older")]),
    ("a different version at the same revision: both changed it", [("a.md", 3, "mine")],
     [("a.md", 3, "theirs")]),
    ("a different version at revision 1: both created it", [("a.md", 1, "mine")],
     [("a.md", 1, "theirs")]),
    ("deleted here, live there at the same revision: both changed it", [("a.md", 3, None)],
     [("a.md", 3, "theirs")]),
    ("live here, deleted there at the same revision: offered again", [("a.md", 3, "mine")],
     [("a.md", 3, None)]),
    ("an offer still pending here, another version there: offered again", [("a.md", 3, "")],
     [("a.md", 3, "theirs")]),
    ("both deleted, the relay's tombstone older: renumbered", [("a.md", 4, None)],
     [("a.md", 2, None)]),
    ("both deleted at the same revision", [("a.md", 3, None)], [("a.md", 3, None)]),
    ("deleted here, the relay lost the file: renumbered to 0", [("a.md", 3, None)], []),
    ("deleted here at 0, nothing there", [("a.md", 0, None)], []),
    ("deleted here, live there older: the deletion offered again", [("a.md", 3, None)],
     [("a.md", 2, "a")]),
    ("deleted here, live there newer: applied as usual", [("a.md", 3, None)], [("a.md", 5, "a")]),
    ("live here, the relay's older tombstone: offered again", [("a.md", 4, "a")],
     [("a.md", 2, None)]),
    ("a file only the relay has: no step", [], [("theirs.md", 3, "t")]),
    ("newer on the relay over a version it lost: both changed it", [("a.md", 2, "mine")],
     [("a.md", 4, "theirs, again")], [("a.md", 2, "theirs")]),
    ("newer on the relay, its record at this revision this device's: applied as usual",
     [("a.md", 2, "a")], [("a.md", 4, "a2")], [("a.md", 2, "a")]),
    ("newer on the relay, its record at this revision pruned: applied as usual",
     [("a.md", 2, "mine")], [("a.md", 4, "theirs")], []),
    ("a newer tombstone over a version it lost: both changed it", [("a.md", 2, "mine")],
     [("a.md", 4, None)], [("a.md", 2, "theirs")]),
    ("newer on the relay, deleted there at this revision: both changed it",
     [("a.md", 2, "mine")], [("a.md", 4, "back")], [("a.md", 2, None)]),
    ("deleted here, newer there: applied as usual, nothing read", [("a.md", 2, None)],
     [("a.md", 4, "theirs")], [("a.md", 2, "theirs")]),
    ("a rename the relay lost: the tombstone and the new name offered again",
     [("old.md", 2, None), ("new.md", 1, "body")], [("old.md", 1, "body")]),
    ("names as written, one key per path",
     [("Notes/Caf\u00e9.md", 3, "c"), ("notes/caf\u00e9.md", 1, "d")],
     [("Notes/Caf\u00e9.md", 1, "c")]),
    ("a whole vault, in the index's order",
     [("same.md", 5, "s"), ("lost.md", 4, "l"), ("gone.md", 2, "g"), ("dead.md", 3, None),
      ("newer.md", 1, "n"), ("equal.md", 2, "e"), ("both.md", 2, "mine")],
     [("same.md", 3, "s"), ("lost.md", 2, "older"), ("newer.md", 7, "n2"), ("equal.md", 2, "e"),
      ("both.md", 2, "theirs")]),
]  # fmt: skip


def entry(side: Side) -> Entry:
    """An index entry; text "" is a re-offer still pending (`take_over`: no known version)."""
    path, rev, text = side
    if text is None:
        return Entry(path, "", 0, 0, 0, rev=rev, file_id="f-" + path, deleted=True)
    if text == "":
        return Entry(path, "", -1, 0, 0, rev=rev, file_id="f-" + path)
    return Entry(path, sha(text), len(text), 1, 1, rev=rev, file_id="f-" + path)


def step_row(s: Renumber | Reoffer | Diverged) -> dict[str, Any]:
    if isinstance(s, Renumber):
        return {"step": "renumber", "path": s.entry.path, "rev": s.rev}
    kind = "reoffer" if isinstance(s, Reoffer) else "diverged"
    return {"step": kind, "path": s.entry.path, "relay_rev": s.relay_rev}


def head(side: Side) -> RemoteChange:
    path, rev, text = side
    meta = FileMeta(
        path=path, size=0 if text is None else len(text), sha256="" if text is None else sha(text),
        chunks=(ChunkRef(sha(text), len(text)),) if text else (), deleted=text is None,
        device_name="desk", device_kind="human",
    )  # fmt: skip
    return RemoteChange(path, "f-" + path, rev, rev - 1, meta, b"")


def row(e: Entry) -> dict[str, Any]:
    return {"path": e.path, "rev": e.rev, "sha256": e.sha256, "deleted": e.deleted}


def rec(ch: RemoteChange) -> dict[str, Any]:
    return {"rev": ch.rev, "sha256": ch.meta.sha256, "deleted": ch.deleted}


def case(name: str, mine: list[Side], relay: list[Side], at: Sequence[Side] = ()) -> dict[str, Any]:
    entries = [entry(s) for s in mine]
    heads = {s[0]: head(s) for s in relay}
    checks = resync_checks(entries, heads)
    at_rev = {s[0]: head(s) for s in at if s[0] in checks}
    steps = plan_resync(entries, heads, at_rev)
    return {
        "name": name,
        "entries": [row(e) for e in entries],
        "heads": {p: rec(ch) for p, ch in heads.items()},
        "checks": checks,
        "at_rev": {p: rec(ch) for p, ch in at_rev.items()},
        "steps": [step_row(s) for s in steps],
    }


def build() -> dict[str, object]:
    return {
        "version": 1,
        "about": "The resync after a relay restored from a backup (docs/protocol.md R3): "
        "index entries and the relay's heads in, resync_checks' paths out, the relay's records "
        "at this device's revision of those in, plan_resync's steps out; written by "
        "tests/test_sync_resync_vectors.py, replayed by "
        "obsidian-plugin/test/resync-vectors.test.ts",
        "cases": [case(*c) for c in CASES],
    }


def render() -> str:
    return json.dumps(build(), ensure_ascii=False, indent=1) + "\n"


def test_the_vectors_are_what_the_python_engine_decides() -> None:
    assert VECTORS.read_text("utf-8") == render(), (
        "tests/vectors/resync_v1.json differs from plan_resync: if the change is intended, "
        "run python tests/test_sync_resync_vectors.py --write and update the plugin"
    )


def test_the_cases_cover_every_outcome() -> None:
    cases = build()["cases"]
    assert isinstance(cases, list) and len(cases) >= 15
    names = [c["name"] for c in cases]
    assert len(set(names)) == len(names)
    kinds = {s["step"] for c in cases for s in c["steps"]}
    assert kinds == {"renumber", "reoffer", "diverged"}
    assert any(not c["steps"] for c in cases)  # newer on the relay, or nothing to do
    # the relay lost the file (no head): offered again on top of nothing
    assert {"step": "reoffer", "path": "a.md", "relay_rev": 0} in [
        s for c in cases for s in c["steps"]
    ]


def test_nothing_older_than_this_device_holds_is_taken() -> None:
    """R3: every file whose relay head is not newer gets a step (renumbered when the relay holds
    the same, offered again otherwise, reconciled when the relay holds another version at this
    very revision), so the older head is never applied over it."""
    for c in build()["cases"]:  # type: ignore[attr-defined]
        stepped = {s["path"] for s in c["steps"]}
        for e in c["entries"]:
            h = c["heads"].get(e["path"])
            behind = h is None or h["rev"] <= e["rev"]
            same_rev = h is not None and h["rev"] == e["rev"]
            same = same_rev and (
                (h["deleted"] and e["deleted"])
                or (not h["deleted"] and not e["deleted"] and h["sha256"] == e["sha256"])
            )
            quiet = same or (h is None and e["deleted"] and e["rev"] == 0)
            lost = not behind and e["path"] in c["at_rev"]  # the relay's newer head, checked
            if e["path"] in stepped and lost:
                continue  # its record at this revision is another version: reconciled
            assert (e["path"] in stepped) == (behind and not quiet), (c["name"], e)


def test_only_another_version_at_the_same_revision_is_diverged() -> None:
    """R3, R20: a `diverged` step only where the relay holds another version than the one this
    device knows at this device's very revision (a deletion on either side counts): its live
    head there, or, under a newer head, its record there: two records at one revision cannot
    both descend from each other. An older head may be this device's own past version, so it
    is offered again as before; a newer one whose record there is pruned is applied as
    usual."""

    def other(e: dict[str, Any], r: dict[str, Any]) -> bool:
        if e["deleted"] or r["deleted"]:
            return bool(e["deleted"] != r["deleted"])
        return e["sha256"] != "" and e["sha256"] != r["sha256"]

    for c in build()["cases"]:  # type: ignore[attr-defined]
        for s in c["steps"]:
            e = next(e for e in c["entries"] if e["path"] == s["path"])
            h = c["heads"].get(s["path"])
            was = c["at_rev"].get(s["path"])
            same_rev = h is not None and not h["deleted"] and h["rev"] == e["rev"] and other(e, h)
            under = h is not None and h["rev"] > e["rev"] and was is not None and other(e, was)
            assert (s["step"] == "diverged") == (same_rev or under), (c["name"], s)
        for p in c["checks"]:  # only live files the relay's newer head has other bytes of
            e = next(e for e in c["entries"] if e["path"] == p)
            h = c["heads"][p]
            assert not e["deleted"] and h["rev"] > e["rev"], (c["name"], p)
            assert h["deleted"] or h["sha256"] != e["sha256"], (c["name"], p)


if __name__ == "__main__":
    if sys.argv[1:] == ["--write"]:
        VECTORS.write_text(render(), "utf-8")
        print(f"wrote {VECTORS}")
    else:
        print(__doc__)
