"""The planner (`companion/sync/round/plan.py`), case by case: pure functions from the scan, the
remote changes and the index to typed steps. No relay, no disk: an index made of a dict.

Every edge case of issue 17 that is a decision has its row here (renames racing edits, stale
saves, case collisions), beside the admission of remote changes (apply / hold / quarantine /
skip), the person's decisions, the resync after a relay restore, and the push plan.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field

import pytest

from companion.crypto import ChunkRef, FileMeta
from companion.sync.local.filestate import FileState
from companion.sync.local.pathsafe import fold
from companion.sync.remote.vault import Refused, RemoteChange
from companion.sync.round.holds import HoldPolicy
from companion.sync.round.model import Local
from companion.sync.round.plan import (
    STALE_SAVE_WINDOW_NS,
    AcceptHeld,
    CaseCollision,
    Discard,
    Dismiss,
    Download,
    Enqueue,
    FollowLocalRename,
    FollowRemoteRename,
    Hold,
    Incoming,
    MoveHere,
    Reconcile,
    RefuseHeld,
    RemoveHere,
    Renumber,
    Reoffer,
    StaleSave,
    Supersede,
    Tombstone,
    Upload,
    Wait,
    admit_head,
    cursor_after_own_commits,
    is_new_edit,
    plan_admission,
    plan_apply,
    plan_decisions,
    plan_push,
    plan_resync,
)
from companion.sync.round.scanner import ChangeKind
from companion.sync.state.applied import AppliedRow
from companion.sync.state.files import Entry
from companion.sync.state.held import HeldRow
from companion.sync.state.quarantine import QuarantineRow

C, M, D = ChangeKind.CREATED, ChangeKind.MODIFIED, ChangeKind.DELETED


def sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


@dataclass
class Index:
    """An `IndexView` over a dict."""

    entries: dict[str, Entry] = field(default_factory=dict)

    def get(self, path: str) -> Entry | None:
        return self.entries.get(path)

    def paths_with_fold(self, key: str) -> list[str]:
        return sorted(p for p, e in self.entries.items() if fold(p) == key and not e.deleted)


def synced(*items: tuple[str, str, int]) -> Index:
    """An index of live files: (path, content, rev)."""
    return Index({p: Entry(p, sha(t), len(t), 100, 7, rev=r, file_id="f-" + p, ctime_ns=9)
                  for p, t, r in items})  # fmt: skip


CONTENTS: dict[str, bytes] = {}  # what each change's content is, by SHA-256 (as pulled)


def change(path: str, text: str | None, rev: int, *, kind: str = "human",
           rename_from: str | None = None, executable: bool = False,
           author: str = "desk") -> RemoteChange:  # fmt: skip
    chunks = (ChunkRef(sha(text), len(text)),) if text else ()
    if text is not None:
        CONTENTS[sha(text)] = text.encode()
    meta = FileMeta(
        path=path, size=0 if text is None else len(text), sha256="" if text is None else sha(text),
        chunks=chunks,
        deleted=text is None, device_name=author, device_kind=kind, rename_from=rename_from,
        executable=executable,
    )  # fmt: skip
    return RemoteChange(path, "f-" + path, rev, rev - 1, meta, b"", relay_kind=kind,
                        relay_name=author)  # fmt: skip


def inbox(*changes: RemoteChange) -> dict[str, Incoming]:
    return {ch.path: Incoming(i + 1, ch.path, ch) for i, ch in enumerate(changes)}


def local(kind: ChangeKind, path: str, text: str = "x", *, mtime: int = 200,
          rename_from: str | None = None, rename_to: str | None = None) -> Local:  # fmt: skip
    state = None if kind is D else FileState(len(text), mtime, 8, sha(text), 10)
    return Local(kind, path, state, True, rename_from=rename_from, rename_to=rename_to)


def kinds(steps: list[object]) -> list[tuple[str, str]]:
    def path(s: object) -> str:
        for attr in ("new", "path"):
            if hasattr(s, attr):
                return str(getattr(s, attr))
        for attr in ("item", "local"):
            if hasattr(s, attr):
                return str(getattr(s, attr).path)
        return "?"

    return [(type(s).__name__, path(s)) for s in steps]


# ------------------------------------------------------------------ admission

PERSON = HoldPolicy("human")


@pytest.mark.parametrize(
    ("ch", "index", "queued", "want"),
    [
        # new here: into the inbox
        (change("n.md", "a", 1), Index(), {}, "enqueue"),
        # our own commit / already applied
        (change("n.md", "a", 2), synced(("n.md", "a", 2)), {}, "have"),
        # already queued at that revision
        (change("n.md", "a", 3), Index(), {"n.md": 3}, "queued"),
        # a newer revision than the queued one replaces it
        (change("n.md", "a", 4), Index(), {"n.md": 3}, "enqueue"),
        # ignored here
        (change(".trash/n.md", "a", 1), Index(), {}, "ignored"),
        # a path that is no vault path: malformed, so quarantined (listed, exit 1), never a
        # silent skip (issue 42.2)
        (change("../n.md", "a", 1), Index(), {}, "quarantine"),
        (change("/etc/n.md", "a", 1), Index(), {}, "quarantine"),
        # a ':' after a first letter is a name, not a drive, on the systems that hold it
        # (Windows keeps it as a problem of that file when it writes it: `resolve_inside`)
        (change("Q: open questions.md", "a", 1), Index(), {}, "enqueue"),
        (change("C:/x.md", "a", 1), Index(), {}, "enqueue"),
        # an agent's plugin, an agent's settings, an agent's executable: held for the person
        (change(".obsidian/plugins/x/main.js", "js", 1, kind="agent"), Index(), {}, "hold"),
        (change(".Obsidian/App.json", "{}", 1, kind="agent"), Index(), {}, "hold"),
        (change("run.sh", "sh", 1, kind="agent", executable=True), Index(), {}, "hold"),
        # the person's own settings are not held; an agent's deletion of an exec file is not
        (change(".obsidian/app.json", "{}", 1, kind="human"), Index(), {}, "enqueue"),
        (change("run.sh", None, 2, kind="agent", executable=True), Index(), {}, "enqueue"),
        # a note from an agent is applied
        (change("n.md", "a", 1, kind="agent"), Index(), {}, "enqueue"),
    ],
)
def test_admission(ch: RemoteChange, index: Index, queued: dict[str, int], want: str) -> None:
    from companion.sync.local.ignore import IgnoreRules

    rules = IgnoreRules("/nonexistent-vault")
    adm = plan_admission([ch], [], index, queued=queued, held={}, ignored=rules.is_ignored,
                         holds=PERSON, contents=CONTENTS)  # fmt: skip
    got = (
        "enqueue" if adm.enqueue else "hold" if adm.hold else adm.skip[0].why if adm.skip
        else "quarantine" if adm.quarantine else ""
    )  # fmt: skip
    assert got == want
    if want == "quarantine":
        (q,) = adm.quarantine
        assert (q.file_id, q.rev) == (ch.file_id, ch.rev) and ch.path in q.reason
        assert adm.healed == []
    else:
        assert adm.healed == [ch.file_id]  # it verified: out of quarantine, if it was


def _admit(*changes: RemoteChange, index: Index | None = None, known: tuple[str, ...] = (),
           contents: dict[str, bytes] | None = None) -> dict[str, str]:  # fmt: skip
    adm = plan_admission(list(changes), [], index or Index(), queued={}, held={},
                         ignored=lambda p: False, holds=PERSON, known=known,
                         contents=CONTENTS if contents is None else contents)  # fmt: skip
    out = {e.path: "enqueue" for e in adm.enqueue}
    out.update({h.path: h.reason for h in adm.hold})
    return out


def test_admission_holds_what_changes_sync_the_companion_and_obsidian() -> None:
    """Issue 44, findings 1 and 4: the ignore file, the companion's settings, and any folder
    with Obsidian's config shape (in the vault, or arriving in the same pull)."""
    got = _admit(
        change(".companionignore", "knowledge/\n", 2, kind="agent"),
        change(".CompanionIgnore", "x/\n", 1, kind="agent"),
        change(".companion/settings.json", "{}", 1, kind="agent"),
        change(".companion/dreams/2026-01-01.json", "{}", 1, kind="agent"),
        change(".companion/agent/2026-01-01.server.jsonl", "{}", 1, kind="agent"),
        change(".obsidian-mobile/plugins/x/main.js", "js", 1, kind="agent"),
        change(".phone/community-plugins.json", '["x"]', 1, kind="agent"),
        change(".phone/snippets/a.css", "a{}", 1, kind="agent"),
        change(".notes/todo.md", "a", 1, kind="agent"),
        known=(".obsidian-mobile/plugins/x/manifest.json",),
    )
    assert got == {
        ".companionignore": "changes what sync leaves out (.companionignore)",
        ".CompanionIgnore": "changes what sync leaves out (.companionignore)",
        ".companion/settings.json": "changes the companion's settings in the vault",
        ".companion/dreams/2026-01-01.json": "enqueue",
        ".companion/agent/2026-01-01.server.jsonl": "enqueue",
        ".obsidian-mobile/plugins/x/main.js": "changes Obsidian's plugins, themes or settings",
        ".phone/community-plugins.json": "changes Obsidian's plugins, themes or settings",
        ".phone/snippets/a.css": "changes Obsidian's plugins, themes or settings",
        ".notes/todo.md": "enqueue",
    }
    # without the manifest, `.obsidian-mobile` is an ordinary hidden folder (its script is
    # still held: a script anywhere is)
    assert _admit(change(".obsidian-mobile/x.md", "a", 1, kind="agent")) == {
        ".obsidian-mobile/x.md": "enqueue"
    }


def test_admission_reads_agent_notes_for_code_a_plugin_runs() -> None:
    """Issue 44, finding 5: an agent's note holding Templater, DataviewJS or a command link
    waits; a note whose content is unknown waits too; bytes this device already has (a
    rename) are not read again; a person's note is never held."""
    tpl = change("templates/daily.md", "<%* await tp.system.prompt() %>\n", 1, kind="agent")
    dv = change("n/dv.md", "```dataviewjs\ndv.paragraph(1)\n```\n", 1, kind="agent")
    uri = change("n/u.md", "[go](obsidian://advanced-uri?commandid=x)\n", 1, kind="agent")
    plain = change("n/plain.md", "a normal note\n", 1, kind="agent")
    mine = change("n/mine.md", "<% tp.date.now() %>\n", 1, kind="human")
    got = _admit(tpl, dv, uri, plain, mine)
    assert got["templates/daily.md"].startswith("holds code a plugin runs: a Templater command")
    assert got["n/dv.md"] == "holds code a plugin runs: a dataviewjs code block"
    assert got["n/u.md"] == "holds code a plugin runs: an obsidian://advanced-uri link"
    assert got["n/plain.md"] == got["n/mine.md"] == "enqueue"
    unread = change("n/unread.md", "a", 1, kind="agent")
    assert _admit(unread, contents={}) == {
        "n/unread.md": "is a note whose content could not be checked for code"
    }
    # renamed by the agent: the same bytes the person already has at the old path
    text = "<% tp.file.title %>\n"
    moved = change("b.md", text, 1, kind="agent", rename_from="a.md")
    assert _admit(moved, index=synced(("a.md", text, 3)), contents={}) == {"b.md": "enqueue"}


def test_admission_takes_the_newest_of_each_file_and_releases_replaced_holds() -> None:
    old = change(".obsidian/app.json", "{1}", 1, kind="agent")
    new = change(".obsidian/app.json", "{2}", 2, kind="human")
    bad = Refused("f-x", 3, 9, "tag mismatch")
    adm = plan_admission([old, new], [bad], Index(), queued={}, held={".obsidian/app.json": 1},
                         ignored=lambda p: False, holds=PERSON)  # fmt: skip
    assert [e.change.rev for e in adm.enqueue] == [2] and adm.hold == []
    assert adm.release == [".obsidian/app.json"]
    assert adm.quarantine == [bad]


def test_on_an_agent_device_nothing_is_held() -> None:
    ch = change(".obsidian/plugins/x/main.js", "js", 1, kind="agent")
    adm = plan_admission([ch], [], Index(), queued={}, held={}, ignored=lambda p: False,
                         holds=HoldPolicy("agent"))  # fmt: skip
    assert len(adm.enqueue) == 1
    assert isinstance(admit_head("x", ch, HoldPolicy("agent")), Enqueue)
    assert isinstance(admit_head("x", ch, PERSON), Hold)


# ------------------------------------------------------------------ decisions and resync


def test_decisions() -> None:
    held = [
        HeldRow("a.json", "f1", 2, {}, "r", "server", 1, "accept"),
        HeldRow("b.json", "f2", 2, {}, "r", "server", 1, "refuse"),
        HeldRow("c.json", "f3", 2, {}, "r", "server", 1, ""),
    ]
    quarantined = [
        QuarantineRow("q1", 3, "known.md", "bad", "x", 1, "supersede"),
        QuarantineRow("q2", 3, "", "bad", "x", 1, "supersede"),  # path unknown: forgotten
        QuarantineRow("q3", 3, "x.md", "bad", "x", 1, "dismiss"),
        QuarantineRow("q4", 3, "y.md", "bad", "x", 1, ""),
    ]
    steps = plan_decisions(held, quarantined, "human")
    assert [(type(s).__name__, s.row.path) for s in steps] == [
        ("AcceptHeld", "a.json"), ("RefuseHeld", "b.json"), ("Supersede", "known.md"),
        ("Dismiss", ""), ("Dismiss", "x.md"),
    ]  # fmt: skip
    assert isinstance(steps[0], AcceptHeld) and isinstance(steps[1], RefuseHeld)
    assert isinstance(steps[2], Supersede) and isinstance(steps[3], Dismiss)
    # an agent device never supersedes: the report is only forgotten
    agent = plan_decisions([], quarantined[:1], "agent")
    assert [type(s) for s in agent] == [Dismiss]


def test_resync_after_a_relay_restore() -> None:
    entries = [
        Entry("same.md", sha("s"), 1, 1, 1, rev=5),  # the relay has it, at another rev
        Entry("lost.md", sha("l"), 1, 1, 1, rev=4),  # the relay has an older version
        Entry("gone.md", sha("g"), 1, 1, 1, rev=2),  # the relay has nothing
        Entry("dead.md", "", 0, 0, 0, rev=3, deleted=True),  # deleted here, absent there
        Entry("newer.md", sha("n"), 1, 1, 1, rev=1),  # newer there: applied as usual
        Entry("equal.md", sha("e"), 1, 1, 1, rev=2),  # nothing to do
    ]
    heads = {
        "same.md": change("same.md", "s", 3),
        "lost.md": change("lost.md", "older", 2),
        "newer.md": change("newer.md", "n2", 7),
        "equal.md": change("equal.md", "e", 2),
    }
    steps = plan_resync(entries, heads)
    got = [(type(s).__name__, s.entry.path, getattr(s, "rev", getattr(s, "relay_rev", 0)))
           for s in steps]  # fmt: skip
    assert got == [
        ("Renumber", "same.md", 3), ("Reoffer", "lost.md", 2), ("Reoffer", "gone.md", 0),
        ("Renumber", "dead.md", 0),
    ]  # fmt: skip
    assert isinstance(steps[0], Renumber) and isinstance(steps[1], Reoffer)


# ------------------------------------------------------------------ apply


def test_only_remote_changes() -> None:
    idx = synced(("a.md", "a", 1), ("b.md", "b", 1), ("c.md", "c", 1))
    plan = plan_apply(
        inbox(change("a.md", "a2", 2), change("b.md", None, 2), change("new.md", "n", 1),
              change("c.md", "c", 1)),
        {}, idx,
    )  # fmt: skip
    assert kinds(plan.steps) == [
        ("Discard", "c.md"), ("RemoveHere", "b.md"), ("Download", "a.md"), ("Download", "new.md"),
    ]  # fmt: skip
    down = [s for s in plan.steps if isinstance(s, Download)]
    assert down[0].expected is not None and down[0].expected.sha256 == sha("a")
    assert down[1].expected is None and down[1].bulk
    remove = plan.steps[1]
    assert isinstance(remove, RemoveHere) and remove.expected is not None
    assert isinstance(plan.steps[0], Discard) and plan.push == {}


def test_a_remote_rename_of_an_unchanged_file_is_a_move() -> None:
    idx = synced(("old.md", "body", 1))
    plan = plan_apply(
        inbox(change("old.md", None, 2), change("new.md", "body", 1, rename_from="old.md")),
        {}, idx,
    )  # fmt: skip
    (step,) = plan.steps
    assert isinstance(step, MoveHere) and (step.old, step.new) == ("old.md", "new.md")


def test_a_remote_rename_of_a_file_edited_here_carries_the_edit() -> None:
    """Issue 17.1: renamed there, edited here."""
    idx = synced(("old.md", "body", 1))
    plan = plan_apply(
        inbox(change("old.md", None, 2), change("new.md", "body", 1, rename_from="old.md")),
        {"old.md": local(M, "old.md", "body, edited here")}, idx,
    )  # fmt: skip
    (step,) = plan.steps
    assert isinstance(step, FollowRemoteRename) and (step.old, step.new) == ("old.md", "new.md")
    assert plan.push == {}


def test_a_remote_rename_of_a_file_being_written_here_waits_whole() -> None:
    """R16 with R17, found by the scenario files: the old name was still being written when
    its rename arrived. The new name was downloaded at once and the old one waited, so next
    pass the edit met a plain deletion and stayed at the old name beside the renamed file.
    Both halves wait together; next pass the edit follows the rename."""
    idx = synced(("old.md", "body", 1))
    plan = plan_apply(
        inbox(change("old.md", None, 2), change("new.md", "body", 1, rename_from="old.md")),
        {}, idx, unstable=["old.md"],
    )  # fmt: skip
    assert sorted(kinds(plan.steps)) == [("Wait", "new.md"), ("Wait", "old.md")]
    settled = plan_apply(
        inbox(change("old.md", None, 2), change("new.md", "body", 1, rename_from="old.md")),
        {"old.md": local(M, "old.md", "body, typed just then")}, idx,
    )  # fmt: skip
    (step,) = settled.steps
    assert isinstance(step, FollowRemoteRename) and (step.old, step.new) == ("old.md", "new.md")


def test_a_local_rename_meeting_a_remote_edit_carries_the_edit() -> None:
    """Issue 17.1: renamed here (not pushed yet), edited there."""
    idx = synced(("old.md", "body", 1))
    plan = plan_apply(
        inbox(change("old.md", "body, edited there", 2)),
        {"old.md": local(D, "old.md", rename_to="new.md"),
         "new.md": local(C, "new.md", "body", rename_from="old.md")},
        idx,
    )  # fmt: skip
    (step,) = plan.steps
    assert isinstance(step, FollowLocalRename) and (step.old, step.new) == ("old.md", "new.md")
    assert plan.push == {}


def test_renamed_on_both_sides_meets_as_deletions() -> None:
    idx = synced(("old.md", "body", 1))
    plan = plan_apply(
        inbox(change("old.md", None, 2), change("there.md", "body", 1, rename_from="old.md")),
        {"old.md": local(D, "old.md", rename_to="here.md"),
         "here.md": local(C, "here.md", "body", rename_from="old.md")},
        idx,
    )  # fmt: skip
    assert kinds(plan.steps) == [("Reconcile", "old.md"), ("Download", "there.md")]
    assert list(plan.push) == ["here.md"]


def test_a_rename_onto_a_path_in_use_here_is_resolved_there() -> None:
    idx = synced(("old.md", "body", 1))
    plan = plan_apply(
        inbox(change("old.md", None, 2), change("new.md", "body", 1, rename_from="old.md")),
        {"new.md": local(C, "new.md", "mine")}, idx,
    )  # fmt: skip
    assert kinds(plan.steps) == [("RemoveHere", "old.md"), ("Reconcile", "new.md")]


def test_both_changed_and_being_written() -> None:
    idx = synced(("a.md", "a", 1), ("b.md", "b", 1))
    plan = plan_apply(
        inbox(change("a.md", "a2", 2), change("b.md", "b2", 2), change("c.md", "c", 1)),
        {"a.md": local(M, "a.md", "a, mine"), "d.md": local(C, "d.md", "d")},
        idx, unstable=["b.md"],
    )  # fmt: skip
    assert kinds(plan.steps) == [("Wait", "b.md"), ("Reconcile", "a.md"), ("Download", "c.md")]
    wait = plan.steps[0]
    assert isinstance(wait, Wait) and isinstance(plan.steps[1], Reconcile)
    assert list(plan.push) == ["d.md"]


def test_case_collisions_on_a_case_insensitive_disk() -> None:
    idx = synced(("Notes.md", "N", 1))
    plan = plan_apply(
        inbox(change("notes.md", "n", 1), change("Plan.md", "P", 1), change("plan.md", "p", 1)),
        {}, idx, case_insensitive=True,
    )  # fmt: skip
    assert kinds(plan.steps) == [
        ("Download", "Plan.md"), ("CaseCollision", "notes.md"), ("CaseCollision", "plan.md"),
    ]  # fmt: skip
    steps = [s for s in plan.steps if isinstance(s, CaseCollision)]
    assert [s.other for s in steps] == ["Notes.md", "Plan.md"]
    assert not any(isinstance(s, Download) and s.bulk for s in plan.steps)


@pytest.mark.parametrize(
    ("saved_after_ns", "stale"),
    [(500_000_000, True), (STALE_SAVE_WINDOW_NS, True), (STALE_SAVE_WINDOW_NS + 1, False),
     (-1, False)],
)  # fmt: skip
def test_a_save_soon_after_an_apply_is_checked_as_stale(saved_after_ns: int, stale: bool) -> None:
    """Issue 17.2: within the window after a remote change replaced the file."""
    idx = synced(("n.md", "v2", 2))
    applied = {"n.md": AppliedRow("n.md", sha("v1"), b"v1", 1_000)}
    lc = local(M, "n.md", "v1 + typed", mtime=1_000 + saved_after_ns)
    plan = plan_apply({}, {"n.md": lc}, idx, applied=applied)
    if stale:
        (step,) = plan.steps
        assert isinstance(step, StaleSave) and step.applied == applied["n.md"]
        assert plan.push == {}
    else:
        assert plan.steps == [] and list(plan.push) == ["n.md"]


@pytest.mark.parametrize(
    ("prev", "head", "saved", "edit"),
    [
        # issue 42.3: the agent received line 1 and edits line 2 a second later; its save
        # holds the received change: a new edit, pushed as it is
        ("line 1\nline 2\nline 3\n", "line 1, received\nline 2\nline 3\n",
         "line 1, received\nline 2, agent\nline 3\n", True),
        # the same, the edit on the line before the received one
        ("line 1\nline 2\nline 3\n", "line 1\nline 2, received\nline 3\n",
         "line 1, agent\nline 2, received\nline 3\n", True),
        # a received line inserted, the agent's edit of the line right after it
        ("a\nb\nc\n", "a\nnew\nb\nc\n", "a\nnew\nb, agent\nc\n", True),
        # a received deletion of line 1, the agent's edit of line 2 (nothing took its place)
        ("line 1\nline 2\nline 3\n", "line 2\nline 3\n", "line 2, agent\nline 3\n", True),
        # the save drops the change just applied: stale, whatever else it changed
        ("line 1\nline 2\nline 3\n", "line 1, received\nline 2\nline 3\n",
         "line 1\nline 2, agent\nline 3\n", False),
        ("line 1\nline 2\nline 3\n", "line 1, received\nline 2\nline 3\n",
         "line 1\nline 2\nline 3\nline 4\n", False),
        ("line 1\nline 2\nline 3\n", "line 2\nline 3\n", "line 1\nline 2, agent\nline 3\n",
         False),
        # the received line rewritten differently: no sign the save saw it
        ("line 1\nline 2\n", "line 1, received\nline 2\n", "line 1, mine\nline 2\n", False),
        # nothing to compare with (the replaced version too large to keep): an ordinary edit
        (None, "x\n", "y\n", True),
    ],
)  # fmt: skip
def test_a_save_in_the_window_that_holds_the_received_change_is_a_new_edit(
    prev: str | None, head: str, saved: str, edit: bool
) -> None:
    """The stale-save rule (docs/sync.md): only a save that drops a change just applied is
    stale; one that holds it is a new edit of the new version, however close to it."""
    old = None if prev is None else prev.encode()
    assert is_new_edit(old, head.encode(), saved.encode()) is edit


# ------------------------------------------------------------------ push


def test_push_plan() -> None:
    idx = synced(("a.md", "a", 3), ("old.md", "o", 2), ("gone.md", "g", 5))
    idx.entries["dead.md"] = Entry("dead.md", "", 0, 0, 0, rev=4, deleted=True)
    plan = plan_push(
        {
            "a.md": local(M, "a.md", "a2"),
            "new.md": local(C, "new.md", "n"),
            "old.md": local(D, "old.md", rename_to="moved.md"),
            "moved.md": local(C, "moved.md", "o", rename_from="old.md"),
            "gone.md": local(D, "gone.md"),
            "dead.md": local(D, "dead.md"),  # already deleted there
            "never.md": local(D, "never.md"),  # never reached the relay
        },
        idx, live=100, mass_delete_ratio=0.5,
    )  # fmt: skip
    assert [(u.local.path, u.parent_rev) for u in plan.uploads] == [
        ("a.md", 3), ("moved.md", 0), ("new.md", 0),
    ]  # fmt: skip
    assert plan.tombstones == [
        Tombstone("gone.md", 5, sha("g")), Tombstone("old.md", 2, sha("o"), "moved.md"),
    ]  # fmt: skip
    assert plan.held_deletes == [] and plan.kept_back == []
    assert isinstance(plan.uploads[0], Upload)


def test_push_plan_holds_a_mass_deletion_and_keeps_back_held_files() -> None:
    idx = synced(*[(f"n{i}.md", str(i), 1) for i in range(12)])
    deletes = {f"n{i}.md": local(D, f"n{i}.md") for i in range(11)}
    plan = plan_push(deletes, idx, live=12, mass_delete_ratio=0.5)
    assert len(plan.held_deletes) == 11 and plan.tombstones == []
    assert plan_push(
        deletes, idx, live=12, mass_delete_ratio=0.5, allow_mass_delete=True
    ).tombstones
    # every file of a small vault at once (an emptied or unmounted folder) is held too,
    # while most of it may go
    idx = synced(*[(f"n{i}.md", str(i), 1) for i in range(3)])
    every = {f"n{i}.md": local(D, f"n{i}.md") for i in range(3)}
    assert plan_push(every, idx, live=3, mass_delete_ratio=0.5).held_deletes == sorted(every)
    two = {p: c for p, c in every.items() if p != "n2.md"}
    assert len(plan_push(two, idx, live=3, mass_delete_ratio=0.5).tombstones) == 2
    # a held (or quarantined) file waits; the other half of its rename goes as a creation
    idx = synced(("cfg.json", "c", 1))
    plan = plan_push(
        {"cfg.json": local(D, "cfg.json", rename_to="cfg2.json"),
         "cfg2.json": local(C, "cfg2.json", "c", rename_from="cfg.json")},
        idx, blocked=["cfg.json"], live=1, mass_delete_ratio=0.5,
    )  # fmt: skip
    assert plan.kept_back == ["cfg.json"] and plan.tombstones == []
    assert [(u.local.path, u.local.rename_from) for u in plan.uploads] == [("cfg2.json", None)]


# ------------------------------------------------------------------------------ own commits


@pytest.mark.parametrize(
    ("cursor", "seqs", "after"),
    [
        (10, [11, 12, 13], 13),  # ours fill the gap: nothing to list back
        (10, [13, 11, 12, 12], 13),  # in any order, a duplicate result counted once
        (10, [12, 13], 10),  # 11 is someone else's: the feed is read as usual
        (10, [11, 13], 10),  # a hole in the middle (a refused record, another device)
        (10, [], 10),
        (10, [9, 10], 10),  # already behind the cursor
        (10, [8, 11], 11),  # an old duplicate below the cursor does not matter
        (0, [1], 1),
    ],
)
def test_cursor_moves_past_own_commits_only_without_a_gap(
    cursor: int, seqs: list[int], after: int
) -> None:
    assert cursor_after_own_commits(cursor, seqs) == after


def test_admission_holds_a_held_renames_tombstone_with_it() -> None:
    """Issue 44 (agents with scopes): a held rename's old path waits with it, so the note
    neither leaves its old place nor is lost when the person refuses the rename."""
    import dataclasses

    from companion.sync.round.holds import CONFIG

    def by(device: str, ch: RemoteChange) -> RemoteChange:
        return dataclasses.replace(ch, device_id=device)

    moved = change(".obsidian/snippets/x.css", "x", 2, kind="agent", rename_from="notes/x.md")
    gone = change("notes/x.md", None, 3, kind="agent")
    assert _admit(by("s", moved), by("s", gone)) == {
        ".obsidian/snippets/x.css": CONFIG,
        "notes/x.md": "is the old name of a held rename to .obsidian/snippets/x.css",
    }
    # another device's deletion of that path is its own change
    assert _admit(by("s", moved), by("t", gone))["notes/x.md"] == "enqueue"
    # a rename that is not held: both halves go on
    plain = change("notes/y.md", "x", 2, kind="agent", rename_from="notes/x.md")
    assert _admit(by("s", plain), by("s", gone)) == {
        "notes/y.md": "enqueue",
        "notes/x.md": "enqueue",
    }
