"""The secret guard on the sync change stream: each credential reported once, masked, and
sync never blocked (the note still reaches the other copy)."""

from __future__ import annotations

import logging
from pathlib import Path

from companion.secrets.watch import ChangeScanner
from companion.sync.service.daemon import Daemon
from tests.syncharness import cluster

CANARY = "ghp_" + "R7tQ2wX9mK4pL8vN3bZ6cY1dF5gH0jS2aE7u"  # fake GitHub token shape


def test_change_scanner_reports_each_finding_once_across_restarts(tmp_path: Path) -> None:
    vault = tmp_path / "vault"
    (vault / "knowledge").mkdir(parents=True)
    note = vault / "knowledge" / "Deploy.md"
    note.write_text(f"# Deploy\n\nexport GITHUB_TOKEN={CANARY}\n", encoding="utf-8")
    state = tmp_path / "state"
    first = ChangeScanner(vault, state).scan(["knowledge/Deploy.md", "image.png"])
    assert [(f.path, f.line) for f in first] == [("knowledge/Deploy.md", 3)]
    assert CANARY not in repr(first[0]) and CANARY not in first[0].masked
    assert ChangeScanner(vault, state).scan(["knowledge/Deploy.md"]) == []  # a restart
    assert CANARY not in "".join(p.read_text() for p in state.rglob("*.json"))
    note.write_text(note.read_text() + f"second: {CANARY[:-4]}ZZZZ\n", encoding="utf-8")
    again = ChangeScanner(vault, state).scan(["knowledge/Deploy.md"])
    assert [f.line for f in again] == [4]  # only the new one


class _Collect(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())


def test_daemon_warns_once_and_still_syncs(tmp_path: Path) -> None:
    with cluster(tmp_path / "c") as c:
        server = c.add_device("server", "agent")
        laptop = c.add_device("laptop", "human")
        laptop.write("notes/keys.md", f"token: {CANARY}\n")
        laptop.sync()
        daemon = Daemon(server.engine(), rescan_interval_s=None)
        collect = _Collect()
        logging.getLogger("companion").addHandler(collect)  # works whatever propagate says
        import threading

        t = threading.Thread(target=daemon.run, daemon=True)
        t.start()
        try:
            assert daemon.ready.wait(20)
        finally:
            daemon.stop()
            t.join(20)
            logging.getLogger("companion").removeHandler(collect)
        assert (server.vault / "notes" / "keys.md").read_text() == f"token: {CANARY}\n"
        warnings = [m for m in collect.messages if "credential" in m]
        assert len(warnings) == 1
        assert "notes/keys.md line 1" in warnings[0] and "companion secrets move" in warnings[0]
        assert all(CANARY not in m for m in collect.messages)
