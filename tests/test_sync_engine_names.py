"""File names across platforms: Unicode NFC/NFD, case-only renames, case collisions."""

from __future__ import annotations

import json
import os
import unicodedata
from pathlib import Path

import pytest

from tests.syncharness import SyncCluster

NFC = unicodedata.normalize("NFC", "knowledge/Café déjà vu.md")
NFD = unicodedata.normalize("NFD", NFC)


@pytest.fixture
def cluster(tmp_path: Path):
    with SyncCluster(tmp_path) as c:
        yield c


def test_nfd_names_from_macos_arrive_as_one_nfc_file(cluster: SyncCluster) -> None:
    assert NFC != NFD
    mac = cluster.add_device("mac", "human")
    linux = cluster.add_device("server", "agent")
    mac.write(NFD, "crème\n")  # what macOS hands over: decomposed accents
    mac.sync()
    linux.sync()
    assert linux.files() == {NFC: "crème\n".encode()}
    assert mac.files() == {NFC: "crème\n".encode()}  # renamed in place to the canonical form
    # both spellings address the same file: an edit under the NFD name updates it
    os.rename(mac.path(NFC), mac.path(NFD))
    mac.write(NFD, "crème brûlée\n")
    mac.sync()
    linux.sync()
    assert linux.files() == {NFC: "crème brûlée\n".encode()}
    assert len(mac.engine().history(NFD)) == 2  # one file id for both spellings


def test_the_round_repairs_nested_nfd_names_and_keeps_a_twin(cluster: SyncCluster) -> None:
    """The scan only lists the renames it finds (#43); the round makes them and scans again,
    level by level: a decomposed folder holding a decomposed note arrives as one NFC path, in a
    full round and in a watcher's partial one, and a decomposed twin of a note is kept beside
    it under a visible name, reported as a conflict."""
    mac = cluster.add_device("mac", "human")
    linux = cluster.add_device("server", "agent")
    nfc, nfd = (unicodedata.normalize(f, "Café") for f in ("NFC", "NFD"))
    (mac.vault / nfd).mkdir()
    (mac.vault / nfd / f"{nfd}.md").write_text("nested\n")
    assert mac.sync().uploaded == [f"{nfc}/{nfc}.md"]
    z_nfc, z_nfd = (unicodedata.normalize(f, "Zoë") for f in ("NFC", "NFD"))
    (mac.vault / z_nfd).mkdir()
    (mac.vault / z_nfd / f"{z_nfd}.md").write_text("watched\n")
    assert mac.engine().round(paths=[z_nfd]).uploaded == [f"{z_nfc}/{z_nfc}.md"]
    mac.write("é.md", "composed\n")
    mac.sync()
    (mac.vault / unicodedata.normalize("NFD", "é.md")).write_text("decomposed\n")
    if [unicodedata.normalize("NFC", n) for n in os.listdir(mac.vault)].count("é.md") < 2:
        pytest.skip("the file system treats both spellings as one file")
    report = mac.sync()
    twin = "é (unicode conflict).md"
    assert [(c.path, c.copy, c.outcome) for c in report.conflicts] == [
        ("é.md", twin, "unicode_twin")
    ]
    linux.sync()
    assert linux.files() == {
        f"{nfc}/{nfc}.md": b"nested\n",
        f"{z_nfc}/{z_nfc}.md": b"watched\n",
        "é.md": b"composed\n",
        twin: b"decomposed\n",
    }


def test_case_only_rename(cluster: SyncCluster) -> None:
    a = cluster.add_device("laptop", "human")
    b = cluster.add_device("server", "agent")
    a.write("knowledge/Git.md", "rebase\n")
    a.sync()
    b.sync()
    a.rename("knowledge/Git.md", "knowledge/git.md")
    a.sync()
    report = b.sync()
    assert report.renamed_local == [("knowledge/Git.md", "knowledge/git.md")]
    assert b.files() == {"knowledge/git.md": b"rebase\n"}
    cluster.assert_converged()


def test_case_collision_on_a_case_insensitive_device_loses_nothing(cluster: SyncCluster) -> None:
    linux = cluster.add_device("server", "agent")
    mac = cluster.add_device("mac", "human", case_insensitive=True)
    linux.write("Notes.md", "capital\n")
    linux.write("notes.md", "lower\n")
    linux.sync()
    report = mac.sync()
    assert [c.outcome for c in report.conflicts] == ["case_collision"]
    files = mac.files()
    assert len(files) == 2
    assert sorted(files.values()) == [b"capital\n", b"lower\n"]
    folded = {p.casefold() for p in files}
    assert len(folded) == 2  # a case-insensitive disk can hold these names
    cluster.sync_all()
    converged = cluster.assert_converged()
    assert sorted(converged.values()) == [b"capital\n", b"lower\n"]
    assert len({p.casefold() for p in converged}) == 2  # the rename reached every device


def test_an_agents_case_only_twin_is_a_conflict_on_a_persons_case_sensitive_disk(
    cluster: SyncCluster,
) -> None:
    """Issue 44 finding 8: `Home.MD` from an agent beside the person's `Home.md` was a second
    note on a Linux laptop (and a case conflict only on a Mac or a phone). On a person's device
    it is now a case conflict on every disk: kept as a copy that replaces it everywhere."""
    server = cluster.add_device("server", "agent")
    laptop = cluster.add_device("laptop", "human")
    laptop.write("Home.md", "the person's home\n")
    laptop.sync()
    server.sync()
    server.write("Home.MD", "the agent's twin\n")
    server.sync()
    report = laptop.sync()
    assert [c.outcome for c in report.conflicts] == ["case_collision"]
    files = laptop.files()
    assert files["Home.md"] == b"the person's home\n"
    assert "Home.MD" not in files
    assert sorted(files.values()) == [b"the agent's twin\n", b"the person's home\n"]
    cluster.sync_all()
    converged = cluster.assert_converged()
    assert len({p.casefold() for p in converged}) == len(converged)  # one name per fold, everywhere
    # the person's own twin on their own disk stays theirs: a second note, not a conflict
    laptop.write("Todo.md", "a\n")
    laptop.write("TODO.md", "b\n")
    laptop.sync()
    server.sync()
    assert {"Todo.md", "TODO.md"} <= set(server.files())


# ------------------------------------------------------------------ ':' in a name (issue 42.2)

COLON = "Q: open questions.md"
COLON_TEXT = b"# Open questions\n- does the relay keep 30 days?\n"


def _commit_raw(dev, path: str, data: bytes) -> None:
    """Commit a record naming `path` as it is, past the engine's own checks (a buggy or
    hostile device holding the key)."""
    import hashlib

    from companion.crypto import ChunkRef, FileMeta
    from companion.sync.remote.vault import Outgoing

    core = dev.engine().core
    bid = core.remote.blob_id(data)
    core.remote.upload({bid: data})
    meta = FileMeta(
        path=path, size=len(data), sha256=hashlib.sha256(data).hexdigest(),
        chunks=(ChunkRef(bid, len(data)),), device_id=core.device.device_id,
        device_name=core.name, device_kind=core.kind,
    )  # fmt: skip
    assert core.remote.commit([[Outgoing(meta, 0)]]).committed


def test_a_colon_after_a_first_letter_is_a_name_every_linux_device_holds(
    cluster: SyncCluster, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """`Q: open questions.md` made on a Linux laptop reaches the server byte for byte (it was
    refused as an absolute path, exit 0, the copies different for good). A device that holds
    Windows's rule cannot write it: a problem of that one file, listed by `status` with the
    reason, `sync` exits 1, the rest syncs."""
    from companion.sync.local import pathsafe
    from tests.syncharness import CliRunnerInProcess

    laptop = cluster.add_device("laptop", "human")
    server = cluster.add_device("server", "agent")
    laptop.write(COLON, COLON_TEXT)
    laptop.write("ok.md", "fine\n")
    assert sorted(laptop.sync().uploaded) == [COLON, "ok.md"]
    report = server.sync()
    assert sorted(report.downloaded) == [COLON, "ok.md"] and not report.quarantined
    assert server.files() == {COLON: COLON_TEXT, "ok.md": b"fine\n"}
    server.write(COLON, COLON_TEXT + b"- answered by the agent\n")
    server.sync()
    laptop.sync()
    assert cluster.assert_converged()[COLON] == COLON_TEXT + b"- answered by the agent\n"

    windows = CliRunnerInProcess(cluster, "windows", monkeypatch, capsys)
    code, _, err = windows.init()
    assert code == 0, err
    monkeypatch.setattr(pathsafe, "WINDOWS_NAMES", True)
    code, _, err = windows("sync", str(windows.vault))
    assert code == 1 and COLON in err and "':'" in err
    assert _top_files(windows.vault) == ["ok.md"]
    code, out, _ = windows("status", str(windows.vault), "--json")
    problems = json.loads(out)["problems"]
    assert [p["path"] for p in problems] == [COLON] and "':'" in problems[0]["reason"]


def test_a_record_that_names_no_vault_path_is_quarantined_not_skipped(
    cluster: SyncCluster, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A record naming `../escape.md` or `/etc/x.md` is malformed: quarantined (status, exit
    1), never skipped silently with exit 0 while the copies differ."""
    from tests.syncharness import CliRunnerInProcess

    agent = cluster.add_device("server", "agent")
    agent.write("ok.md", "fine\n")
    agent.sync()
    _commit_raw(agent, "../escape.md", b"out\n")
    person = CliRunnerInProcess(cluster, "laptop", monkeypatch, capsys)
    code, _, err = person.init()
    assert code == 0, err
    code, _, err = person("sync", str(person.vault))
    assert code == 1 and "quarantine" in err
    assert _top_files(person.vault) == ["ok.md"]
    assert not (person.vault.parent / "escape.md").exists()
    code, out, _ = person("status", str(person.vault), "--json")
    (q,) = json.loads(out)["quarantined"]
    assert "escape.md" in q["reason"] and "not a vault path" in q["reason"]
    code, _, _ = person("sync", str(person.vault))
    assert code == 1  # every round, until someone decides


def _top_files(vault: Path) -> list[str]:
    """The files at the top of a copy, less its own folder marker (never synced)."""
    from companion.sync.local.folder import MARKER_NAME

    return sorted(p.name for p in vault.iterdir() if p.is_file() and p.name != MARKER_NAME)
