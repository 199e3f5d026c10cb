"""The Obsidian plugin's sync core (TypeScript, run by Node through `obsidian-plugin/dist/cli.js`)
against a Python device, through a real relay on loopback.

The plugin is always a person's (human) device; the Python device here is the agent. Covered:
join with the same COMPANION_HOME / COMPANION_PASSPHRASE_FILE conventions, edits both ways, a
true conflict (the person's version stays, the agent's goes to a conflict copy, whichever side
detects it), a rename applied as a rename, a deletion, binary and multi-chunk attachments, NFD
names, a held `.obsidian/plugins` change (accepted) and a held config change (refused), the
exit statuses, and `watch` (long-poll and file watching) with a clean SIGTERM. After each
scenario both copies are byte-identical.

Issue #42: a vault folder swapped under the plugin (moved away, an empty folder at its path)
writes and deletes nothing and exits 6, under `sync` and `watch`, and syncs again once it is
back; a merge keeps a UTF-8 BOM byte for byte; a rename racing an edit leaves no duplicate;
quarantined files make `sync` exit 1; `status` lists every conflict copy in the vault and says
when the relay cannot be reached; the weak-KDF test hatch is refused outside the test suite.

`dist/cli.js` is built by the README's test command (`npm run build`); when it is missing the
fixture builds it, and fails if that is impossible (never skipped).
"""

from __future__ import annotations

import base64
import json
import os
import signal
import subprocess
import unicodedata
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import wait_for
from tests.syncharness import Device, SyncCluster, WireProxy

MARKER = ".companion-folder.json"  # each copy's own folder marker (#42): never synced

PLUGIN = Path(__file__).resolve().parent.parent / "obsidian-plugin"
CLI = PLUGIN / "dist" / "cli.js"


def plugin_cli() -> Path:
    """dist/cli.js, built first when missing (tools/test already has). Under a lock: two
    pytest-xdist workers never build it at once, nor run one the other is writing."""
    from filelock import FileLock

    lock = PLUGIN.parent / ".cache" / "plugin-build.lock"
    lock.parent.mkdir(exist_ok=True)
    with FileLock(str(lock), timeout=600):
        if not CLI.exists():
            subprocess.run(["npm", "run", "build"], cwd=PLUGIN, check=True, capture_output=True)
    assert CLI.exists(), "obsidian-plugin/dist/cli.js is missing: run `npm ci && npm run build`"
    return CLI


@pytest.fixture(scope="module")
def cli() -> Path:
    return plugin_cli()


class PluginDevice:
    """The plugin's core as a device: its own COMPANION_HOME and vault folder."""

    def __init__(self, cluster: SyncCluster, cli: Path, name: str = "phone") -> None:
        self.cluster = cluster
        self.cli = cli
        self.name = name
        self.home = cluster.base / "devices" / f"plugin-{name}"
        self.home.mkdir(parents=True, exist_ok=True)
        self.vault = cluster.base / "vaults" / f"plugin-{name}"

    def env(self, **extra: str) -> dict[str, str]:
        env = dict(os.environ)
        env.update(
            COMPANION_HOME=str(self.home),
            COMPANION_PASSPHRASE_FILE=str(self.cluster.passphrase_file),
            COMPANION_TEST_WEAK_KDF="1",
        )
        env.update(extra)
        return env

    def run(self, *args: str, timeout: float = 120, **env: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            ["node", str(self.cli), *args],
            capture_output=True,
            text=True,
            env=self.env(**env),
            timeout=timeout,
        )

    def join(self) -> subprocess.CompletedProcess[str]:
        r = self.run(
            "join", str(self.vault), "--relay", self.cluster.relay.url,
            "--invite", self.cluster.invite("human"), "--device-name", self.name,
        )  # fmt: skip
        assert r.returncode == 0, r.stderr
        return r

    def sync(self, *args: str) -> subprocess.CompletedProcess[str]:
        return self.run("sync", str(self.vault), *args)

    def synced(self) -> str:
        r = self.sync()
        assert r.returncode == 0, r.stdout + r.stderr
        return r.stdout

    def status(self) -> dict:
        r = self.run("status", str(self.vault), "--json")
        assert r.returncode == 0, r.stderr
        return json.loads(r.stdout)

    def write(self, rel: str, data: str | bytes) -> None:
        p = self.vault / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(data.encode() if isinstance(data, str) else data)

    def read(self, rel: str) -> bytes | None:
        try:
            return (self.vault / rel).read_bytes()
        except FileNotFoundError:
            return None

    def files(self) -> dict[str, bytes]:
        out = {}
        for p in self.vault.rglob("*"):
            if p.is_file() and not p.name.startswith(".companion-tmp-") and p.name != MARKER:
                out[p.relative_to(self.vault).as_posix()] = p.read_bytes()
        return out


@pytest.fixture
def pair(tmp_path: Path, cli: Path) -> Iterator[tuple[Device, PluginDevice]]:
    with SyncCluster(tmp_path) as cluster:
        agent = cluster.add_device("server", "agent")
        phone = PluginDevice(cluster, cli)
        phone.join()
        yield agent, phone


def assert_identical(agent: Device, phone: PluginDevice) -> dict[str, bytes]:
    a, b = agent.files(), phone.files()
    a.pop(MARKER, None)  # the Python copy's own marker, if its engine writes one
    assert sorted(a) == sorted(b)
    assert [p for p in a if a[p] != b[p]] == []
    return a


def test_join_edits_rename_delete_binary_and_nfd_names_converge(pair):
    agent, phone = pair
    # folders do not sync: the join made the vault layout's own (#39, item 8e)
    assert all((phone.vault / d).is_dir() for d in ("knowledge", "projects", "journal"))
    noise = os.urandom(300_000)
    big = os.urandom(5 * 1024 * 1024 + 123)  # more than one 4 MiB chunk
    agent.write("Home.md", "# Home\n\nSee [[knowledge/git]].\n")
    agent.write("knowledge/git.md", "rebase with care\n")
    agent.write("attachments/photo.jpg", noise)
    agent.write("attachments/video.bin", big)
    agent.write(unicodedata.normalize("NFD", "notas/café.md"), "de la máquina\n")
    agent.sync()
    out = phone.synced()
    assert "downloaded" in out
    assert phone.read("attachments/video.bin") == big
    assert phone.read("notas/café.md") == "de la máquina\n".encode()

    phone.write("knowledge/git.md", "rebase with care\nfrom the phone\n")
    (phone.vault / "Home.md").rename(phone.vault / "Start.md")
    (phone.vault / "attachments/photo.jpg").unlink()
    phone.write(unicodedata.normalize("NFD", "ideas/niño.md"), "escrita en el teléfono\n")
    phone.write("attachments/scan.pdf", os.urandom(70_000))
    phone.synced()
    report = agent.sync()
    assert ("Home.md", "Start.md") in report.renamed_local
    assert "attachments/photo.jpg" in report.deleted_local
    assert agent.read("ideas/niño.md") == "escrita en el teléfono\n".encode()
    assert agent.read("knowledge/git.md") == b"rebase with care\nfrom the phone\n"
    phone.synced()
    files = assert_identical(agent, phone)
    assert all(p == unicodedata.normalize("NFC", p) for p in files)


def test_a_colon_after_a_first_letter_reaches_the_server_and_the_phone(tmp_path, cli):
    """Issue 42.2: a Python laptop names a note `Q: open questions.md`; the Python server and
    the plugin both receive it, byte for byte, and an edit on the phone comes back. It was
    refused everywhere as an absolute path, exit 0, the copies different for good."""
    name, data = "Q: open questions.md", b"# Open questions\n- how long does the relay keep?\n"
    with SyncCluster(tmp_path) as cluster:
        laptop = cluster.add_device("laptop", "human")
        server = cluster.add_device("server", "agent")
        phone = PluginDevice(cluster, cli)
        phone.join()
        laptop.write(name, data)
        assert laptop.sync().uploaded == [name]
        assert server.sync().downloaded == [name]
        r = phone.sync("--json")
        assert r.returncode == 0, r.stdout + r.stderr
        assert json.loads(r.stdout)["downloaded"] == [name]
        assert server.files() == phone.files() == laptop.files() == {name: data}
        phone.write(name, data + b"- answered on the phone\n")
        phone.synced()
        laptop.sync()
        server.sync()
        assert laptop.read(name) == server.read(name) == data + b"- answered on the phone\n"


def test_true_conflict_keeps_the_person_version_whichever_side_sees_it(pair):
    agent, phone = pair
    agent.write("plan.md", "step one\n")
    agent.write("todo.md", "buy milk\n")
    agent.sync()
    phone.synced()
    # the agent commits first: the plugin detects the conflict
    agent.write("plan.md", "step one, the agent's way\n")
    phone.write("plan.md", "step one, my way\n")
    agent.sync()
    out = phone.synced()
    assert "conflict:" in out
    assert phone.read("plan.md") == b"step one, my way\n"
    copies = [p for p in phone.files() if p.startswith("plan (conflict server ")]
    assert len(copies) == 1 and phone.read(copies[0]) == b"step one, the agent's way\n"
    agent.sync()
    assert agent.read("plan.md") == b"step one, my way\n"
    # the person commits first: the Python agent detects it, and the person still wins
    phone.write("todo.md", "buy oat milk\n")
    agent.write("todo.md", "buy almond milk\n")
    phone.synced()
    report = agent.sync()
    assert len(report.conflicts) == 1
    assert agent.read("todo.md") == b"buy oat milk\n"
    phone.synced()
    assert_identical(agent, phone)


def test_agent_changes_to_obsidian_plugins_are_held_until_the_person_decides(pair):
    agent, phone = pair
    phone.write(".obsidian/hotkeys.json", '{"mine": true}\n')
    phone.synced()
    agent.sync()
    agent.write(".obsidian/plugins/helper/main.js", "module.exports = class {}\n")
    agent.write(".obsidian/hotkeys.json", '{"agent": true}\n')
    agent.write("notes/ok.md", "a normal note\n")
    agent.sync()
    out = phone.synced()
    assert "held:" in out
    assert phone.read(".obsidian/plugins/helper/main.js") is None
    assert phone.read(".obsidian/hotkeys.json") == b'{"mine": true}\n'
    assert phone.read("notes/ok.md") == b"a normal note\n"  # the rest kept syncing
    held = {h["path"] for h in phone.status()["held"]}
    assert held == {".obsidian/plugins/helper/main.js", ".obsidian/hotkeys.json"}
    r = phone.run("held", str(phone.vault), "--accept", ".obsidian/plugins/helper/main.js")
    assert r.returncode == 0, r.stderr
    r = phone.run("held", str(phone.vault), "--refuse", ".obsidian/hotkeys.json")
    assert r.returncode == 0, r.stderr
    assert phone.read(".obsidian/plugins/helper/main.js") == b"module.exports = class {}\n"
    agent.sync()
    assert agent.read(".obsidian/hotkeys.json") == b'{"mine": true}\n'
    phone.synced()
    assert phone.status()["held"] == []
    assert_identical(agent, phone)


def test_help_is_usage_not_an_unknown_command(cli: Path) -> None:
    """`node dist/cli.js --help` (or -h, or `help`) prints the usage, exit 0 (#39, item 8b);
    no command at all is a usage error (2); an unknown one still names itself."""
    for args in (["--help"], ["-h"], ["help"], ["sync", "--help"]):
        r = subprocess.run(["node", str(cli), *args], capture_output=True, text=True, timeout=60)
        assert r.returncode == 0, (args, r.stderr)
        assert "unknown command" not in r.stderr and r.stdout.startswith("usage:"), args
    r = subprocess.run(["node", str(cli)], capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and "usage:" in r.stdout + r.stderr
    r = subprocess.run(["node", str(cli), "frob"], capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and "unknown command 'frob'" in r.stderr


def test_exit_statuses_match_the_companion_cli(pair, tmp_path):
    agent, phone = pair
    # 2: not set up / passphrase file others can read
    other = tmp_path / "not-joined"
    other.mkdir()
    assert phone.run("sync", str(other)).returncode == 2
    loose = tmp_path / "loose-pass.txt"
    loose.write_text("x\n")
    loose.chmod(0o644)
    r = phone.run(
        "join", str(tmp_path / "v2"), "--relay", phone.cluster.relay.url,
        "--invite", phone.cluster.invite("human"), "--device-name", "t",
        COMPANION_PASSPHRASE_FILE=str(loose),
    )  # fmt: skip
    assert r.returncode == 2 and "other users" in r.stderr
    # 5: the relay is unreachable
    r = phone.run(
        "join", str(tmp_path / "v3"), "--relay", "http://127.0.0.1:9", "--invite", "x-y",
        "--device-name", "t",
    )  # fmt: skip
    assert r.returncode == 5, r.stderr
    # 3: a mass deletion is held back (and the rest still goes out)
    for i in range(20):
        phone.write(f"n/{i}.md", f"{i}\n")
    phone.synced()
    for i in range(15):
        (phone.vault / f"n/{i}.md").unlink()
    assert phone.sync().returncode == 3
    assert phone.sync("--allow-mass-delete").returncode == 0
    # 4: another companion holds the lock (a live pid: this test process)
    lock = next((phone.home / "data" / "obsidian-cli").iterdir()) / "engine.lock"
    lock.write_text(json.dumps({"pid": os.getpid(), "command": "pytest"}))
    r = phone.sync()
    assert r.returncode == 4 and str(os.getpid()) in r.stderr
    lock.unlink()
    # 1: a wrong passphrase (the device leaves again; nothing is stored)
    wrong = tmp_path / "wrong.txt"
    wrong.write_text("not the passphrase\n")
    wrong.chmod(0o600)
    r = phone.run(
        "join", str(tmp_path / "v4"), "--relay", phone.cluster.relay.url,
        "--invite", phone.cluster.invite("human"), "--device-name", "t",
        COMPANION_PASSPHRASE_FILE=str(wrong),
    )  # fmt: skip
    assert r.returncode == 1 and "wrong passphrase" in r.stderr
    assert phone.run("sync", str(tmp_path / "v4")).returncode == 2


def test_watch_propagates_both_ways_and_stops_on_sigterm(pair):
    agent, phone = pair
    agent.write("seed.md", "seed\n")
    agent.sync()
    phone.synced()
    proc = subprocess.Popen(
        ["node", str(phone.cli), "watch", str(phone.vault)],
        env=phone.env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        agent.write("from-agent.md", "hello phone\n")
        agent.sync()
        wait_for(lambda: phone.read("from-agent.md") == b"hello phone\n", what="the long-poll")
        phone.write("from-phone.md", "hello server\n")

        def arrived() -> bool:
            agent.sync()
            return agent.read("from-phone.md") == b"hello server\n"

        wait_for(arrived, what="the file watcher")
    finally:
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=30)
    assert proc.returncode == 0, err
    assert_identical(agent, phone)


# ------------------------------------------------------------------------------- issue #42


def _one_line_naming(stderr: str, folder: Path) -> None:
    lines = [ln for ln in stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and "vault folder missing" in lines[0], stderr
    assert str(folder.resolve()) in lines[0], stderr


def test_a_vault_folder_swapped_under_the_plugin_writes_and_deletes_nothing(pair, tmp_path):
    agent, phone = pair
    laptop = phone.cluster.add_device("laptop", "human")
    marker = json.loads((phone.vault / MARKER).read_text())  # written by `cli.js join`
    assert marker["device_id"] and marker["vault_id"] == phone.cluster.vault_id
    agent.write("a.md", "alpha\n")
    agent.write("b.md", "beta\n")
    agent.sync()
    phone.synced()
    laptop.sync()
    assert agent.read(MARKER) is None or json.loads(agent.read(MARKER) or b"{}") != marker
    # the real folder moves away; an empty one (a mount point) takes its path
    away = tmp_path / "away"
    os.rename(phone.vault, away)
    phone.vault.mkdir()
    agent.write("new.md", "written while the phone's folder was away\n")
    agent.sync()
    for _ in range(2):  # every round checks again
        r = phone.sync()
        assert r.returncode == 6, r.stdout + r.stderr
        _one_line_naming(r.stderr, phone.vault)
        assert list(phone.vault.iterdir()) == []  # nothing written into the wrong folder
    st = phone.status()
    assert st["state"] == "vault_missing"
    out = phone.run("status", str(phone.vault)).stdout
    assert "vault folder missing" in out and "synced" not in out
    # nothing was deleted anywhere
    agent.sync()
    laptop.sync()
    for dev in (agent, laptop):
        assert dev.read("a.md") == b"alpha\n" and dev.read("b.md") == b"beta\n"
    # no folder at all at the path: missing too, not "not set up"
    phone.vault.rmdir()
    r = phone.sync()
    assert r.returncode == 6, r.stdout + r.stderr
    _one_line_naming(r.stderr, phone.vault)
    # back: the note written meanwhile arrives, nothing is deleted anywhere
    os.rename(away, phone.vault)
    phone.synced()
    assert phone.read("new.md") == b"written while the phone's folder was away\n"
    assert phone.status()["state"] == "synced"
    agent.sync()
    laptop.sync()
    files = assert_identical(agent, phone)
    assert sorted(files) == ["a.md", "b.md", "new.md"]
    assert {k: v for k, v in laptop.files().items() if k != MARKER} == files


def test_watch_waits_while_the_vault_folder_is_swapped_and_resumes(pair, tmp_path):
    agent, phone = pair
    agent.write("seed.md", "seed\n")
    agent.sync()
    phone.synced()
    proc = subprocess.Popen(
        ["node", str(phone.cli), "watch", str(phone.vault)],
        env=phone.env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    away = tmp_path / "away"
    try:
        os.rename(phone.vault, away)
        phone.vault.mkdir()
        agent.write("late.md", "while away\n")
        agent.sync()  # the long-poll wakes the daemon: its round finds the folder missing
        state = next((phone.home / "data" / "obsidian-cli").iterdir()) / "state.json"
        wait_for(  # the daemon's own round found it (`status` would tell on its own)
            lambda: json.loads(state.read_text())["state"] == "vault_missing",
            what="the daemon's folder check",
        )
        assert proc.poll() is None  # still watching
        assert list(phone.vault.iterdir()) == []
        agent.sync()
        assert agent.read("seed.md") == b"seed\n"
        phone.vault.rmdir()
        os.rename(away, phone.vault)
        wait_for(lambda: phone.read("late.md") == b"while away\n", what="the resumed daemon")
        phone.write("after.md", "the watcher follows the folder that is back\n")

        def arrived() -> bool:
            agent.sync()
            return agent.read("after.md") is not None

        wait_for(arrived, what="the watcher on the folder that is back")
    finally:
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=30)
    assert proc.returncode == 0, err
    assert "vault folder missing" in err
    assert_identical(agent, phone)


BOM = b"\xef\xbb\xbf"


def test_a_merge_keeps_the_persons_exact_bytes_on_every_device(pair):
    agent, phone = pair
    laptop = phone.cluster.add_device("laptop", "human")
    agent.write("bom.md", BOM + b"one\ntwo\nthree\nfour\n")
    agent.sync()
    phone.synced()
    agent.write("bom.md", BOM + b"one\ntwo\nthree\nfour, the agent's\n")
    agent.sync()
    phone.write("bom.md", BOM + b"one, mine\ntwo\nthree\nfour\n")
    out = phone.synced()
    assert "1 merged" in out
    want = BOM + b"one, mine\ntwo\nthree\nfour, the agent's\n"
    agent.sync()
    laptop.sync()
    for dev in (agent, phone, laptop):
        assert dev.read("bom.md") == want, dev.name


def test_a_rename_racing_an_edit_leaves_no_duplicate(pair):
    agent, phone = pair
    agent.write("a.md", "one\ntwo\n")
    agent.write("c.md", "c\n")
    agent.sync()
    phone.synced()
    # renamed on the phone, edited on the server
    agent.write("a.md", "one\ntwo\nthe agent's line\n")
    agent.sync()
    (phone.vault / "a.md").rename(phone.vault / "b.md")
    phone.synced()
    assert phone.read("a.md") is None
    assert phone.read("b.md") == b"one\ntwo\nthe agent's line\n"
    report = agent.sync()
    assert ("a.md", "b.md") in report.renamed_local
    # renamed on the server, edited on the phone
    agent.rename("c.md", "d.md")
    agent.sync()
    phone.write("c.md", "c\nmine\n")
    phone.synced()
    assert phone.read("c.md") is None
    assert phone.read("d.md") == b"c\nmine\n"
    agent.sync()
    phone.synced()
    assert sorted(assert_identical(agent, phone)) == ["b.md", "d.md"]


def test_sync_exits_1_while_a_file_is_quarantined(pair):
    agent, phone = pair
    agent.write("x.md", "x\n")
    agent.sync()
    proxy = WireProxy(phone.cluster.relay.url)
    try:
        dev_file = next((phone.home / "data" / "obsidian-cli").iterdir()) / "device.json"
        dev = json.loads(dev_file.read_text())
        dev["relayUrl"] = proxy.url
        dev_file.write_text(json.dumps(dev))

        def flip(ex):
            if ex.method == "GET" and ("/changes" in ex.path or "/files/" in ex.path):
                if ex.status != 200:
                    return ex
                body = json.loads(ex.response_body)
                for rec in body.get("records", [body]):
                    sealed = bytearray(base64.b64decode(rec["sealed"]))
                    sealed[len(sealed) // 2] ^= 0x04
                    rec["sealed"] = base64.b64encode(bytes(sealed)).decode()
                ex.response_body = json.dumps(body).encode()
            return ex

        proxy.tamper = flip
        r = phone.sync()
        assert r.returncode == 1, r.stdout + r.stderr
        assert "quarantined" in r.stderr
        assert phone.read("x.md") is None
        r = phone.sync()  # asked again, still damaged: still quarantined, so not 0
        assert r.returncode == 1 and "1 quarantined file(s)" in r.stderr, r.stderr
        proxy.tamper = None
        r = phone.sync()  # damage in transit heals by itself: the head is asked for again (R9)
        assert r.returncode == 0, r.stdout + r.stderr
        assert phone.read("x.md") == b"x\n"
        agent.write("x.md", "x, again\n")
        agent.sync()
        phone.synced()
        assert phone.read("x.md") == b"x, again\n"
    finally:
        proxy.close()


def test_status_lists_every_conflict_copy_and_says_when_the_relay_is_down(pair):
    agent, phone = pair
    agent.write("todo.md", "milk\n")
    agent.sync()
    phone.synced()
    # the person commits first: the Python agent detects the conflict and makes the copy
    phone.write("todo.md", "oat milk\n")
    agent.write("todo.md", "almond milk\n")
    phone.synced()
    assert len(agent.sync().conflicts) == 1
    phone.synced()
    st = phone.status()
    copies = [c["copy"] for c in st["conflicts"]]
    assert len(copies) == 1 and copies[0].startswith("todo (conflict server ")
    assert st["conflicts"][0]["path"] == "todo.md"
    assert st["state"] == "conflict" and st["online"] is True
    # the relay cannot be reached: never a plain "synced"
    dev_file = next((phone.home / "data" / "obsidian-cli").iterdir()) / "device.json"
    dev = json.loads(dev_file.read_text())
    dev["relayUrl"] = "http://127.0.0.1:9"
    dev_file.write_text(json.dumps(dev))
    assert phone.status()["online"] is False
    out = phone.run("status", str(phone.vault)).stdout
    assert "offline" in out


def test_the_weak_kdf_hatch_is_refused_outside_the_test_suite(pair, tmp_path):
    _, phone = pair
    env = {k: v for k, v in phone.env().items() if k not in ("PYTEST_CURRENT_TEST", "VITEST")}
    vault = tmp_path / "real"
    r = subprocess.run(
        ["node", str(phone.cli), "join", str(vault), "--relay", phone.cluster.relay.url,
         "--invite", phone.cluster.invite("human"), "--device-name", "real"],
        capture_output=True, text=True, env=env, timeout=120,
    )  # fmt: skip
    assert r.returncode == 2, r.stderr
    assert "COMPANION_TEST_WEAK_KDF" in r.stderr
    assert "only for the companion's own test suite" in r.stderr
    assert not (vault / MARKER).exists()
    # inside the suite (PYTEST_CURRENT_TEST and COMPANION_HOME) it works, as every test here shows
    assert os.environ.get("PYTEST_CURRENT_TEST")
