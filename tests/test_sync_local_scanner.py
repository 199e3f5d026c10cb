"""The scanner on real folders: quiet rescans, classification, renames, names, links, ignores."""

from __future__ import annotations

import hashlib
import os
import sys
import time
import unicodedata
from collections.abc import Iterator
from pathlib import Path

import pytest

from companion.sync.local.filestate import hash_file
from companion.sync.local.ignore import IGNORE_FILE, IgnoreRules
from companion.sync.round.scanner import (
    ChangeKind,
    NameRepair,
    ScanResult,
    SkipReason,
    VaultMissing,
    repair_names,
    scan,
)
from companion.sync.state.files import Entry
from companion.sync.state.index import SyncIndex


@pytest.fixture
def vault(tmp_path: Path) -> Path:
    v = tmp_path / "vault"
    v.mkdir()
    return v


@pytest.fixture
def index(tmp_path: Path) -> Iterator[SyncIndex]:
    idx = SyncIndex(tmp_path / "state" / "index.sqlite")
    yield idx
    idx.close()


class Counter:
    def __init__(self) -> None:
        self.paths: list[str] = []
        self.repaired: list[NameRepair] = []  # the renames the round's step made

    def __call__(self, path: str) -> None:
        self.paths.append(path)

    @property
    def n(self) -> int:
        return len(self.paths)


def run(vault: Path, index: SyncIndex, **kw: object) -> tuple[ScanResult, Counter]:
    """A scan as the round makes one (`SyncEngine._scan`): the scan, then what it found to fix
    (names renamed, then the vault scanned again; touched files' stats written back)."""
    counter = Counter()
    kw.setdefault("settle_ns", 0)
    kw.setdefault("fix_names", True)  # as the engine asks
    rules = kw.pop("ignore", None) or IgnoreRules(vault)
    res = scan(vault, index, rules, on_hash=counter, **kw)  # type: ignore[arg-type]
    while res.repairs:
        done, _ = repair_names(vault, res.repairs)
        if not done:
            break
        counter.repaired += done
        if kw.get("paths") is not None:
            kw["paths"] = [*kw["paths"], *(fix.new for fix in done)]  # type: ignore[misc]
        res = scan(vault, index, rules, on_hash=counter, **kw)  # type: ignore[arg-type]
    if res.touched:
        index.files.update_stats(res.touched)
    return res, counter


def commit(index: SyncIndex, res: ScanResult) -> None:
    """What the engine does after pushing: record each change in the index."""
    for c in res.changed:
        if c.kind is ChangeKind.DELETED:
            index.files.mark_deleted(c.path, rev=1)
            continue
        if c.kind is ChangeKind.RENAMED and c.old_path:
            index.files.mark_deleted(c.old_path, rev=1)
        assert c.state is not None
        st = c.state
        index.files.put(
            Entry(c.path, st.sha256, st.size, st.mtime_ns, st.inode, rev=1, ctime_ns=st.ctime_ns)
        )


def kinds(res: ScanResult) -> dict[str, tuple[ChangeKind, str | None]]:
    return {c.path: (c.kind, c.old_path) for c in res.changed}


def write(vault: Path, rel: str, text: str = "x") -> Path:
    p = vault / rel
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(text, encoding="utf-8")
    return p


def populate(vault: Path, n: int = 30) -> None:
    for i in range(n):
        write(vault, f"area{i % 3}/note {i}.md", f"# note {i}\n\nbody {i}\n")


# ----------------------------------------------------------------------------- basics


def test_first_scan_reports_every_file_as_created(vault: Path, index: SyncIndex) -> None:
    populate(vault, 12)
    write(vault, "bin.dat").write_bytes(b"\x00\x01\x02")
    res, counter = run(vault, index)
    assert {k for k, _ in kinds(res).values()} == {ChangeKind.CREATED}
    assert len(res.changed) == 13 and res.hashed == 13 and counter.n == 13 and res.files == 13
    by_path = {c.path: c for c in res.changed}
    assert by_path["area0/note 0.md"].is_text and not by_path["bin.dat"].is_text
    st = by_path["bin.dat"].state
    assert st is not None and st.sha256 == hash_file(vault / "bin.dat").state.sha256


def test_quiet_rescan_hashes_nothing(vault: Path, index: SyncIndex) -> None:
    populate(vault, 30)
    res, _ = run(vault, index)
    commit(index, res)
    res2, counter = run(vault, index)
    assert res2.changed == [] and res2.quiet
    assert counter.n == 0 and res2.hashed == 0
    assert res2.files == 30


def test_modified_touched_and_deleted(vault: Path, index: SyncIndex) -> None:
    populate(vault, 6)
    commit(index, run(vault, index)[0])
    write(vault, "area0/note 0.md", "changed content")
    touched = vault / "area1/note 1.md"
    os.utime(touched, ns=(1_000_000_000, 1_000_000_000))  # new mtime, same content
    (vault / "area2/note 2.md").unlink()
    res, counter = run(vault, index)
    assert kinds(res) == {
        "area0/note 0.md": (ChangeKind.MODIFIED, None),
        "area2/note 2.md": (ChangeKind.DELETED, None),
    }
    assert [p for p, _ in res.touched] == ["area1/note 1.md"]
    assert counter.n == 2
    # the touched file's new stat was written back: the next scan hashes only what is uncommitted
    res2, counter2 = run(vault, index)
    assert counter2.n == 1 and [c.path for c in res2.changed if c.kind != "deleted"] == [
        "area0/note 0.md"
    ]


def test_rename_and_move_are_detected(vault: Path, index: SyncIndex) -> None:
    write(vault, "a.md", "alpha content")
    write(vault, "dir/b.md", "beta content")
    write(vault, "c.md", "gamma content")
    commit(index, run(vault, index)[0])
    os.rename(vault / "a.md", vault / "renamed.md")
    os.makedirs(vault / "other")
    os.rename(vault / "dir/b.md", vault / "other/b.md")
    res, _ = run(vault, index)
    assert kinds(res) == {
        "renamed.md": (ChangeKind.RENAMED, "a.md"),
        "other/b.md": (ChangeKind.RENAMED, "dir/b.md"),
    }


def test_case_only_rename_is_a_rename(vault: Path, index: SyncIndex) -> None:
    write(vault, "Notes/Project.md", "content")
    commit(index, run(vault, index)[0])
    os.rename(vault / "Notes/Project.md", vault / "Notes/project.md")
    res, _ = run(vault, index)
    assert kinds(res) == {"Notes/project.md": (ChangeKind.RENAMED, "Notes/Project.md")}


def test_rename_prefers_the_matching_name_among_equal_contents(
    vault: Path, index: SyncIndex
) -> None:
    for name in ("one.md", "two.md", "Three.md"):
        write(vault, name, "same template")
    commit(index, run(vault, index)[0])
    os.rename(vault / "Three.md", vault / "three.md")
    res, _ = run(vault, index)
    assert kinds(res) == {"three.md": (ChangeKind.RENAMED, "Three.md")}


def test_renamed_and_edited_is_delete_plus_create(vault: Path, index: SyncIndex) -> None:
    write(vault, "a.md", "alpha")
    commit(index, run(vault, index)[0])
    os.rename(vault / "a.md", vault / "b.md")
    write(vault, "b.md", "alpha, edited")
    res, _ = run(vault, index)
    assert kinds(res) == {"a.md": (ChangeKind.DELETED, None), "b.md": (ChangeKind.CREATED, None)}


def test_empty_files_are_not_paired_as_renames(vault: Path, index: SyncIndex) -> None:
    write(vault, "empty1.md", "")
    commit(index, run(vault, index)[0])
    os.rename(vault / "empty1.md", vault / "empty2.md")
    res, _ = run(vault, index)
    assert {k for k, _ in kinds(res).values()} == {ChangeKind.DELETED, ChangeKind.CREATED}


# ----------------------------------------------------------------------------- names


def test_nfd_names_are_normalised_to_nfc(vault: Path, index: SyncIndex) -> None:
    nfd = unicodedata.normalize("NFD", "Café")
    nfc = unicodedata.normalize("NFC", "Café")
    (vault / nfd).mkdir()
    (vault / nfd / f"{nfd}.md").write_text("accent")
    res, _ = run(vault, index)
    assert [c.path for c in res.changed] == [f"{nfc}/{nfc}.md"]
    # on disk, the names are now NFC (or were already the same file for the file system)
    assert (vault / nfc / f"{nfc}.md").read_text() == "accent"
    commit(index, res)
    res2, counter = run(vault, index)
    assert res2.changed == [] and counter.n == 0


def test_nfd_and_nfc_twins_are_both_kept(vault: Path, index: SyncIndex) -> None:
    nfd = unicodedata.normalize("NFD", "é.md")
    nfc = unicodedata.normalize("NFC", "é.md")
    (vault / nfc).write_text("composed")
    (vault / nfd).write_text("decomposed")
    if len(os.listdir(vault)) != 2:
        pytest.skip("the file system treats both spellings as one file")
    # a read-only scan (status) only reports the twin
    res, _ = run(vault, index, fix_names=False)
    assert [c.path for c in res.changed] == [nfc]
    assert [(s.path, s.reason) for s in res.skipped] == [(nfd, SkipReason.NAME_COLLISION)]
    assert (vault / nfd).read_text() == "decomposed"  # untouched
    # the engine's scan keeps both: the decomposed one under a visible new name
    res, counter = run(vault, index)
    twin = "é (unicode conflict).md"
    assert [(fix.twin_of, fix.new) for fix in counter.repaired] == [(nfc, twin)]
    assert sorted(c.path for c in res.changed) == [twin, nfc]
    assert sorted(os.listdir(vault)) == sorted([twin, nfc])
    assert (vault / twin).read_text() == "decomposed"


def test_a_default_scan_changes_nothing(vault: Path, index: SyncIndex) -> None:
    """Side effects only when asked: no rename on disk, no stat written to the index."""
    write(vault, "a.md", "alpha")
    commit(index, run(vault, index)[0])
    os.utime(vault / "a.md", ns=(1, 2_000_000_000))  # touched: same content, new stat
    nfd = unicodedata.normalize("NFD", "Café.md")
    (vault / nfd).write_text("accent")
    before = index.files.get("a.md")
    res = scan(vault, index, IgnoreRules(vault), settle_ns=0)
    assert res.touched and index.files.get("a.md") == before
    assert nfd in os.listdir(vault)


def _snapshot(*folders: Path) -> dict[str, tuple[bytes, int, int]]:
    """Every file under these folders: its bytes' hash, mtime and inode, by path (SQLite's
    `-shm` file left out: its read marks move on every read, it holds no data)."""
    out = {}
    for folder in folders:
        for dirpath, _, names in os.walk(folder):
            for name in names:
                if name.endswith("-shm"):
                    continue
                p = os.path.join(dirpath, name)
                st = os.lstat(p)
                with open(p, "rb") as f:
                    digest = hashlib.sha256(f.read()).digest()
                out[p] = (digest, st.st_mtime_ns, st.st_ino)
    return out


def test_the_scan_alone_changes_nothing(vault: Path, index: SyncIndex) -> None:
    """Issue 43: the scan is a read. With the engine's arguments it lists the renames and stat
    refreshes it found (`repairs`, `touched`) and leaves the vault's files and the index's
    database byte for byte as they were; the round carries those out in its own step."""
    write(vault, "a.md", "alpha")
    write(vault, "b.md", "bravo")
    commit(index, run(vault, index)[0])
    os.utime(vault / "a.md", ns=(1, 2_000_000_000))  # touched: same content, new stat
    write(vault, "b.md", "bravo, edited")  # a change to report, not to record
    nfd = unicodedata.normalize("NFD", "Café")
    (vault / nfd).mkdir()
    (vault / nfd / f"{nfd}.md").write_text("accent")
    (vault / unicodedata.normalize("NFD", "é.md")).write_text("decomposed")
    (vault / unicodedata.normalize("NFC", "é.md")).write_text("composed")
    before = _snapshot(vault, index.path.parent)
    res = scan(vault, index, IgnoreRules(vault), settle_ns=0, fix_names=True, verify=["a.md"])
    assert _snapshot(vault, index.path.parent) == before
    assert [p for p, _ in res.touched] == ["a.md"] and kinds(res)["b.md"][0] is ChangeKind.MODIFIED
    if len(os.listdir(vault)) == 5:  # a file system that tells the spellings apart
        assert sorted(fix.old for fix in res.repairs) == sorted(
            [nfd, unicodedata.normalize("NFD", "é.md")]
        )
    # the round's step then does what the scan found: the same outcome as before the split
    res, counter = run(vault, index)
    assert index.files.get("a.md").stat_key() == hash_file(vault / "a.md").state.stat_key()


def test_a_renamed_and_edited_note_is_a_rename(vault: Path, index: SyncIndex) -> None:
    """Moved to another folder (or renamed in place) and edited: still a rename when at least
    half of its lines are those last synced (the merge base)."""
    body = "".join(f"line {i}\n" for i in range(10))
    write(vault, "old/plan.md", body)
    write(vault, "old/other.md", "something else entirely\n")
    res, _ = run(vault, index)
    commit(index, res)
    index.bases.set("old/plan.md", body.encode())
    index.bases.set("old/other.md", b"something else entirely\n")
    os.makedirs(vault / "new")
    os.rename(vault / "old/plan.md", vault / "new/plan.md")
    write(vault, "new/plan.md", body.replace("line 3", "line 3, edited"))
    os.rename(vault / "old/other.md", vault / "new/other.md")
    write(vault, "new/other.md", "rewritten from scratch\n")
    res, _ = run(vault, index)
    assert kinds(res) == {
        "new/plan.md": (ChangeKind.RENAMED, "old/plan.md"),
        "new/other.md": (ChangeKind.CREATED, None),
        "old/other.md": (ChangeKind.DELETED, None),
    }


def test_verify_hashes_files_whose_stat_did_not_change(vault: Path, index: SyncIndex) -> None:
    write(vault, "a.md", "alpha")
    write(vault, "b.md", "beta")
    commit(index, run(vault, index)[0])
    write(vault, "a.md", "ALPHA")  # same size
    entry = index.files.get("a.md")
    st = os.stat(vault / "a.md")
    assert entry is not None
    index.files.update_stats([("a.md", (st.st_mtime_ns, st.st_size, entry.inode, st.st_ctime_ns))])
    res, counter = run(vault, index)
    assert res.changed == [] and counter.n == 0  # the stat hides it
    res, counter = run(vault, index, verify=["a.md", "b.md"])
    assert kinds(res) == {"a.md": (ChangeKind.MODIFIED, None)} and counter.n == 2


def test_a_size_preserving_edit_with_the_old_mtime_is_seen(vault: Path, index: SyncIndex) -> None:
    p = write(vault, "a.md", "a" * 40)
    commit(index, run(vault, index)[0])
    st = os.stat(p)
    with open(p, "r+b") as f:
        f.write(b"b" * 40)
    os.utime(p, ns=(st.st_atime_ns, st.st_mtime_ns))
    res, _ = run(vault, index)
    assert kinds(res) == {"a.md": (ChangeKind.MODIFIED, None)}


def test_busy_files_wait(vault: Path, index: SyncIndex) -> None:
    write(vault, "a.md", "being written")
    res, _ = run(vault, index, busy={"a.md"})
    assert res.changed == [] and res.unstable == ["a.md"] and res.busy == ["a.md"]


@pytest.mark.skipif(sys.platform == "win32", reason="backslash is a separator on Windows")
def test_unsyncable_names_are_skipped(vault: Path, index: SyncIndex) -> None:
    write(vault, "ok.md")
    (vault / "back\\slash.md").write_text("x")
    res, _ = run(vault, index)
    assert [c.path for c in res.changed] == ["ok.md"]
    assert [s.reason for s in res.skipped] == [SkipReason.BAD_NAME]


def test_a_name_that_is_not_utf8_is_skipped_not_fatal(vault: Path, index: SyncIndex) -> None:
    """A Latin-1 name (an old archive unpacked, a file from another system): Python reads it
    with a lone surrogate per byte, which the index cannot store; every scan used to raise
    UnicodeEncodeError there, so nothing in the vault synced any more."""
    write(vault, "ok.md")
    os.mkdir(os.path.join(os.fsencode(vault), b"dossier-\xe9t\xe9"))
    with open(os.path.join(os.fsencode(vault), b"dossier-\xe9t\xe9", b"n.md"), "w") as f:
        f.write("inside a folder whose name is not UTF-8")
    with open(os.path.join(os.fsencode(vault), b"caf\xe9.md"), "w") as f:
        f.write("Latin-1 name")
    res, _ = run(vault, index)
    assert [c.path for c in res.changed] == ["ok.md"]
    assert sorted((s.path, s.reason) for s in res.skipped) == [
        ("caf\udce9.md", SkipReason.BAD_NAME), ("dossier-\udce9t\udce9", SkipReason.BAD_NAME),
    ]  # fmt: skip
    assert all("not valid UTF-8" in s.detail for s in res.skipped)


# ----------------------------------------------------------------------------- links, ignore


def test_symlinks_are_skipped_and_never_followed(
    vault: Path, index: SyncIndex, tmp_path: Path
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.md").write_text("do not sync")
    write(vault, "real.md")
    (vault / "dirlink").symlink_to(outside, target_is_directory=True)
    (vault / "filelink.md").symlink_to(outside / "secret.md")
    (vault / "loop").symlink_to(vault, target_is_directory=True)
    res, counter = run(vault, index)
    assert [c.path for c in res.changed] == ["real.md"]
    assert sorted((s.path, s.reason) for s in res.skipped) == [
        ("dirlink", SkipReason.SYMLINK),
        ("filelink.md", SkipReason.SYMLINK),
        ("loop", SkipReason.SYMLINK),
    ]
    assert all("outside" not in p for p in counter.paths)


def test_indexed_file_replaced_by_a_link_is_not_deleted(vault: Path, index: SyncIndex) -> None:
    write(vault, "n.md")
    commit(index, run(vault, index)[0])
    (vault / "n.md").unlink()
    (vault / "n.md").symlink_to("/etc/hostname")
    res, _ = run(vault, index)
    assert res.changed == []


def test_indexed_folder_replaced_by_a_link_is_not_deleted(
    vault: Path, index: SyncIndex, tmp_path: Path
) -> None:
    write(vault, "moved/a.md")
    write(vault, "stay.md")
    commit(index, run(vault, index)[0])
    os.rename(vault / "moved", tmp_path / "moved")
    (vault / "moved").symlink_to(tmp_path / "moved", target_is_directory=True)
    (vault / "stay.md").unlink()
    res, _ = run(vault, index)
    assert kinds(res) == {"stay.md": (ChangeKind.DELETED, None)}


def test_ignore_rules_are_honoured(vault: Path, index: SyncIndex) -> None:
    write(vault, "keep.md")
    write(vault, ".obsidian/workspace.json", "{}")
    write(vault, ".obsidian/app.json", "{}")
    write(vault, ".trash/old.md")
    write(vault, "draft.md~")
    write(vault, ".companion/dreams/2024-05-01.json", "{}")
    write(vault, IGNORE_FILE, "private/\n")
    write(vault, "private/diary.md")
    res, counter = run(vault, index)
    assert sorted(c.path for c in res.changed) == [
        ".companion/dreams/2024-05-01.json",
        IGNORE_FILE,
        ".obsidian/app.json",
        "keep.md",
    ]
    assert not any(".trash" in p or "private" in p for p in counter.paths)


def test_newly_ignored_indexed_file_is_not_deleted(vault: Path, index: SyncIndex) -> None:
    write(vault, "logs/a.log")
    write(vault, "n.md")
    rules = IgnoreRules(vault)
    commit(index, run(vault, index, ignore=rules)[0])
    write(vault, IGNORE_FILE, "logs/\n")
    (vault / "logs/a.log").unlink()
    write(vault, "logs/b.log")
    res, _ = run(vault, index, ignore=rules)  # the scan reloads the changed ignore file
    assert kinds(res) == {IGNORE_FILE: (ChangeKind.CREATED, None)}


def test_engine_temp_files_are_invisible_and_stale_ones_reported(
    vault: Path, index: SyncIndex
) -> None:
    write(vault, "n.md")
    fresh = write(vault, "d/.companion-tmp-aaaa", "partial")
    stale = write(vault, "d/.companion-tmp-bbbb", "crash leftover")
    os.utime(stale, ns=(0, 0))
    res, counter = run(vault, index)
    assert [c.path for c in res.changed] == ["n.md"]
    assert res.stale_temp == ["d/.companion-tmp-bbbb"]
    assert str(fresh) not in counter.paths


# ----------------------------------------------------------------------------- size, timing


def test_files_over_the_cap_are_skipped_not_deleted(vault: Path, index: SyncIndex) -> None:
    write(vault, "small.md", "x" * 10)
    big = write(vault, "big.bin", "y" * 10)
    commit(index, run(vault, index, max_file_bytes=100)[0])
    big.write_text("y" * 1000)
    res, counter = run(vault, index, max_file_bytes=100)
    assert res.changed == [] and counter.n == 0
    assert [(s.path, s.reason) for s in res.skipped] == [("big.bin", SkipReason.TOO_LARGE)]


def test_very_recent_files_are_rechecked_later(vault: Path, index: SyncIndex) -> None:
    write(vault, "settled.md")
    os.utime(vault / "settled.md", ns=(1, time.time_ns() - 5_000_000_000))
    write(vault, "hot.md")
    res, counter = run(vault, index, settle_ns=2_000_000_000)
    assert [c.path for c in res.changed] == ["settled.md"]
    assert res.unstable == ["hot.md"] and not res.quiet
    assert not any(p.endswith("hot.md") for p in counter.paths)


def test_files_vanishing_mid_scan_are_ignored(vault: Path, index: SyncIndex) -> None:
    write(vault, "stays.md")
    write(vault, "goes.md")
    write(vault, "indexed.md")
    commit(index, run(vault, index)[0])
    write(vault, "indexed.md", "edited")
    write(vault, "new.md")

    def vanish(path: str) -> None:
        if path.endswith(("new.md", "indexed.md")):
            os.unlink(path)

    res = scan(vault, index, IgnoreRules(vault), settle_ns=0, on_hash=vanish)
    assert res.changed == []  # the new file never existed; the indexed one is re-checked
    assert res.unstable == ["indexed.md"]


@pytest.mark.skipif(os.name != "posix" or os.geteuid() == 0, reason="needs a non-root POSIX user")
def test_unreadable_folder_does_not_look_deleted(vault: Path, index: SyncIndex) -> None:
    write(vault, "locked/a.md")
    commit(index, run(vault, index)[0])
    os.chmod(vault / "locked", 0)
    try:
        res, _ = run(vault, index)
    finally:
        os.chmod(vault / "locked", 0o755)
    assert res.changed == []
    assert [s.reason for s in res.skipped] == [SkipReason.UNREADABLE]


def test_missing_vault_is_refused(tmp_path: Path, index: SyncIndex) -> None:
    with pytest.raises(VaultMissing, match="mounted"):
        scan(tmp_path / "nope", index, IgnoreRules(tmp_path / "nope"))


# ----------------------------------------------------------------------------- partial scans


def test_partial_scan_looks_only_at_given_paths(vault: Path, index: SyncIndex) -> None:
    populate(vault, 9)
    commit(index, run(vault, index)[0])
    write(vault, "area0/note 0.md", "edit 0")
    write(vault, "area1/note 1.md", "edit 1")  # not in the batch
    (vault / "area2/note 2.md").unlink()
    write(vault, "new/dir/n.md", "new")
    res, _ = run(vault, index, paths=["area0/note 0.md", "area2/note 2.md", "new"])
    assert res.partial
    assert kinds(res) == {
        "area0/note 0.md": (ChangeKind.MODIFIED, None),
        "area2/note 2.md": (ChangeKind.DELETED, None),
        "new/dir/n.md": (ChangeKind.CREATED, None),
    }


def test_partial_scan_sees_renames_including_case_only(vault: Path, index: SyncIndex) -> None:
    write(vault, "d/Note.md", "content one")
    write(vault, "d/x.md", "content two")
    commit(index, run(vault, index)[0])
    os.rename(vault / "d/Note.md", vault / "d/note.md")
    os.rename(vault / "d/x.md", vault / "y.md")
    res, _ = run(vault, index, paths=["d/Note.md", "d/note.md", "d/x.md", "y.md"])
    assert kinds(res) == {
        "d/note.md": (ChangeKind.RENAMED, "d/Note.md"),
        "y.md": (ChangeKind.RENAMED, "d/x.md"),
    }


def test_partial_scan_of_a_deleted_folder(vault: Path, index: SyncIndex) -> None:
    write(vault, "gone/a.md", "a")
    write(vault, "gone/sub/b.md", "b")
    write(vault, "gone.md", "not in the folder")
    commit(index, run(vault, index)[0])
    for p in ("gone/sub/b.md", "gone/a.md"):
        (vault / p).unlink()
    (vault / "gone/sub").rmdir()
    (vault / "gone").rmdir()
    res, _ = run(vault, index, paths=["gone"])
    assert kinds(res) == {
        "gone/a.md": (ChangeKind.DELETED, None),
        "gone/sub/b.md": (ChangeKind.DELETED, None),
    }


def test_partial_scan_skips_ignored_and_linked_targets(
    vault: Path, index: SyncIndex, tmp_path: Path
) -> None:
    outside = tmp_path / "out"
    outside.mkdir()
    (outside / "s.md").write_text("secret")
    (vault / "ln").symlink_to(outside, target_is_directory=True)
    write(vault, ".trash/t.md")
    res, counter = run(vault, index, paths=["ln/s.md", ".trash/t.md", "../escape.md"])
    assert res.changed == [] and counter.n == 0
