"""A real relay on 127.0.0.1 and N devices with their own COMPANION_HOME, for tests, the demo
and the benchmarks.

    with SyncCluster(tmp_path) as cluster:          # in-process relay (fast)
        laptop = cluster.add_device("laptop", "human")
        server = cluster.add_device("server", "agent")
        laptop.write("notes/a.md", "hello\\n")
        laptop.sync(); server.sync()
        assert server.read("notes/a.md") == b"hello\\n"

`SyncCluster(tmp, relay="process")` runs `companion relay serve` as a subprocess instead (needed
to kill the relay with SIGKILL, and to read its logs). Devices join through the real `init`
code (`join_vault`: invite, key blob, passphrase) with the file secret backend and cheap
Argon2id parameters; `Device.cli(...)` runs the real command line for that device.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from companion.config import load_config
from companion.credentials.store import FileStore
from companion.paths import DevicePaths, device_paths
from companion.relay.auth import issue_invite
from companion.relay.limits import Limits
from companion.relay.sqlite_storage import SqliteStorage
from companion.relay.testing import running_relay
from companion.sync.commands.join import TEST_KDF_PARAMS, join_vault
from companion.sync.local.folder import MARKER_NAME
from companion.sync.local.pathsafe import TEMP_PREFIX
from companion.sync.round.engine import SyncEngine
from companion.sync.round.report import RoundReport

PASSPHRASE = "correct horse battery staple, but longer"


# ------------------------------------------------------------------------------------ relays


def _die_with_parent() -> None:
    """In a child before exec: SIGTERM when the parent goes (Linux; elsewhere nothing)."""
    import ctypes

    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG


class ProcessRelay:
    """`companion relay serve` in a subprocess on a free port of 127.0.0.1."""

    def __init__(
        self,
        data_dir: Path,
        *,
        log_level: str = "info",
        port: int = 0,
        die_with_parent: bool = False,
        database: str | None = None,
    ) -> None:
        """`die_with_parent`: the relay gets SIGTERM when the thread that started it ends
        (Linux PR_SET_PDEATHSIG), so a killed test or script leaves no relay behind. Only
        for relays started and used from the main thread. `database`: PostgreSQL instead of
        SQLite in `data_dir`."""
        self.die_with_parent = die_with_parent
        self.data_dir = Path(data_dir)
        self.data_dir.mkdir(parents=True, exist_ok=True)
        self.log_file = self.data_dir.parent / f"{self.data_dir.name}.log"
        self.log_level = log_level
        self.port = port
        self.database = database  # PostgreSQL instead of SQLite in data_dir
        self.proc: subprocess.Popen[bytes] | None = None
        self.url = ""
        self.start()

    def start(self, timeout: float = 30.0) -> None:
        port_file = self.data_dir.parent / f"{self.data_dir.name}.port"
        port_file.unlink(missing_ok=True)
        env = dict(os.environ)
        env["COMPANION_HOME"] = str(self.data_dir.parent / f"{self.data_dir.name}-home")
        log = open(self.log_file, "ab")  # noqa: SIM115 - owned by the child
        self.proc = subprocess.Popen(
            [
                sys.executable, "-m", "companion", "relay", "serve",
                *(["--database", self.database] if self.database else
                  ["--data", str(self.data_dir)]),
                "--port", str(self.port), "--port-file", str(port_file),
                "--log-level", self.log_level,
            ],
            stdout=log,
            stderr=log,
            env=env,
            preexec_fn=_die_with_parent if self.die_with_parent else None,  # noqa: PLW1509
        )  # fmt: skip
        log.close()
        deadline = time.monotonic() + timeout
        while not port_file.exists():
            if self.proc.poll() is not None:
                raise RuntimeError(f"the relay exited: {self.log_file.read_text()[-2000:]}")
            if time.monotonic() > deadline:
                raise RuntimeError("the relay did not start")
            time.sleep(0.02)
        self.port = int(port_file.read_text().strip())
        self.url = f"http://127.0.0.1:{self.port}"

    def invite(
        self, vault_id: str | None = None, new_vault: bool = False, kind: str = "agent"
    ) -> str:
        store = open_store(self.data_dir, self.database)
        try:
            return issue_invite(
                store, vault_id=vault_id, new_vault=new_vault, ttl=3600, kind=kind
            ).code
        finally:
            store.close()

    def revoke(self, device_id: str) -> None:
        store = open_store(self.data_dir, self.database)
        try:
            store.revoke_device(device_id, time.time())
        finally:
            store.close()

    def kill(self) -> None:
        """SIGKILL: no graceful anything."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait(10)

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                self.kill()

    def restart(self) -> None:
        """Start again on the same port (devices keep their URL)."""
        self.stop()
        for _ in range(100):
            try:
                self.start()
                return
            except RuntimeError:
                time.sleep(0.1)
        raise RuntimeError("the relay did not restart")

    def log_text(self) -> str:
        try:
            return self.log_file.read_text(errors="replace")
        except OSError:
            return ""

    def close(self) -> None:
        self.stop()


def open_store(data_dir: Path, database: str | None) -> Any:
    if database is None:
        return SqliteStorage(data_dir)
    from companion.relay.pg_storage import PgStorage

    return PgStorage(database)


class TwoRelays:
    """Two `companion relay serve --database URL` processes on one PostgreSQL database, behind
    a round-robin proxy: consecutive requests of a device alternate between them."""

    def __init__(self, base: Path, *, log_level: str = "info") -> None:
        from tests.pgcluster import fresh_database
        from tests.relayproxy import RelayProxy

        self.database = fresh_database()
        self.relays = [
            ProcessRelay(base / name, log_level=log_level, database=self.database)
            for name in ("relay-a", "relay-b")
        ]
        self.proxy = RelayProxy([r.url for r in self.relays])
        self.url = self.proxy.url
        self.data_dir = base / "relay-a"

    def invite(
        self, vault_id: str | None = None, new_vault: bool = False, kind: str = "agent"
    ) -> str:
        return self.relays[0].invite(vault_id=vault_id, new_vault=new_vault, kind=kind)

    def revoke(self, device_id: str) -> None:
        self.relays[0].revoke(device_id)

    def kill(self) -> None:
        for r in self.relays:
            r.kill()

    def start(self) -> None:
        for r in self.relays:
            r.start()

    def stop(self) -> None:
        for r in self.relays:
            r.stop()

    def restart(self) -> None:
        for r in self.relays:
            r.restart()

    def log_text(self) -> str:
        return "".join(r.log_text() for r in self.relays)

    def close(self) -> None:
        from tests.pgcluster import release

        self.stop()
        self.proxy.close()
        release(self.database)


class ThreadRelay:
    """The production relay stack in a background thread (`relay.testing.running_relay`)."""

    def __init__(self, data_dir: Path, limits: Limits | None = None) -> None:
        self.data_dir = Path(data_dir)
        self._cm = running_relay(self.data_dir, limits=limits)
        self.live = self._cm.__enter__()
        self.url = self.live.url

    def invite(
        self, vault_id: str | None = None, new_vault: bool = False, kind: str = "agent"
    ) -> str:
        return self.live.invite(vault_id=vault_id, new_vault=new_vault, kind=kind)

    def revoke(self, device_id: str) -> None:
        self.live.revoke(device_id)

    def log_text(self) -> str:
        return ""

    def close(self) -> None:
        self._cm.__exit__(None, None, None)


# ------------------------------------------------------------------------------------ devices


@dataclass
class Device:
    """One vault copy on its own simulated machine (its own COMPANION_HOME)."""

    name: str
    kind: str
    home: Path
    vault: Path
    cluster: SyncCluster
    relay_url: str = ""
    passphrase_file: Path | None = None
    vault_id: str = ""
    _engine: SyncEngine | None = field(default=None, repr=False)
    engine_options: dict[str, Any] = field(default_factory=dict)

    @property
    def paths(self) -> DevicePaths:
        return device_paths(self.home)

    @property
    def config(self) -> Any:
        return load_config(self.paths)

    def env(self) -> dict[str, str]:
        env = dict(os.environ)
        env["COMPANION_HOME"] = str(self.home)
        env["COMPANION_TEST_WEAK_KDF"] = "1"
        if self.passphrase_file is not None:
            env["COMPANION_PASSPHRASE_FILE"] = str(self.passphrase_file)
        return env

    # -- engine ---------------------------------------------------------------------------
    def engine(self) -> SyncEngine:
        if self._engine is None:
            opts = {"settle_ns": 0, **self.engine_options}
            self._engine = SyncEngine(self.vault, self.paths, self.config, **opts)
        return self._engine

    def sync(self, **kw: Any) -> RoundReport:
        return self.engine().round(**kw)

    def restart(self) -> None:
        """Forget the engine (as if the process restarted); the next sync opens a new one."""
        if self._engine is not None:
            self._engine.close()
            self._engine = None

    def cli(self, *args: str, timeout: float = 120, input: str | None = None) -> Any:
        return subprocess.run(
            [sys.executable, "-m", "companion", *args],
            capture_output=True,
            text=True,
            env=self.env(),
            timeout=timeout,
            input=input,
        )

    # -- files ----------------------------------------------------------------------------
    def path(self, rel: str) -> Path:
        return self.vault / rel

    def write(self, rel: str, data: str | bytes) -> None:
        p = self.path(rel)
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(data.encode() if isinstance(data, str) else data)

    def read(self, rel: str) -> bytes | None:
        try:
            return self.path(rel).read_bytes()
        except FileNotFoundError:
            return None

    def delete(self, rel: str) -> None:
        self.path(rel).unlink()

    def rename(self, old: str, new: str) -> None:
        dst = self.path(new)
        dst.parent.mkdir(parents=True, exist_ok=True)
        os.rename(self.path(old), dst)

    def files(self) -> dict[str, bytes]:
        """Every regular file in the vault (relative path -> bytes), engine temp files and the
        vault folder's marker (`sync/local/folder.py`, never synced) excluded."""
        out: dict[str, bytes] = {}
        for dirpath, _dirnames, filenames in os.walk(self.vault):
            for name in filenames:
                if name.startswith(TEMP_PREFIX) or name == MARKER_NAME:
                    continue
                full = Path(dirpath, name)
                out[full.relative_to(self.vault).as_posix()] = full.read_bytes()
        return out

    def temp_files(self) -> list[Path]:
        return [p for p in self.vault.rglob(TEMP_PREFIX + "*")]

    def close(self) -> None:
        self.restart()


class SyncCluster:
    """A relay plus devices joined to one vault. Use as a context manager."""

    def __init__(
        self,
        base: str | os.PathLike[str],
        *,
        relay: str = "thread",
        passphrase: str = PASSPHRASE,
        relay_log_level: str = "info",
        relay_limits: Limits | None = None,  # the in-thread relay only
    ) -> None:
        self.base = Path(base)
        self.base.mkdir(parents=True, exist_ok=True)
        self.passphrase = passphrase
        data = self.base / "relay-data"
        self.relay: ThreadRelay | ProcessRelay | TwoRelays
        if relay == "process":
            self.relay = ProcessRelay(data, log_level=relay_log_level)
        elif relay == "pg2":  # two relay processes on PostgreSQL, requests alternating
            self.relay = TwoRelays(self.base, log_level=relay_log_level)
        else:
            self.relay = ThreadRelay(data, relay_limits)
        self.devices: list[Device] = []
        self.vault_id: str | None = None
        self.passphrase_file = self.base / "passphrase.txt"
        fd = os.open(self.passphrase_file, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as f:
            f.write(passphrase + "\n")

    def __enter__(self) -> SyncCluster:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        for d in self.devices:
            with contextlib.suppress(Exception):
                d.close()
        self.relay.close()

    def invite(self, kind: str = "agent") -> str:
        """An invite to the cluster's vault for a device of `kind` (the relay fixes it)."""
        return self.relay.invite(vault_id=self.vault_id, kind=kind)

    def new_home(self, name: str) -> Path:
        home = self.base / "devices" / name
        cfg = home / "config"
        cfg.mkdir(parents=True, exist_ok=True, mode=0o700)
        (cfg / "config.toml").write_text('[secrets]\nbackend = "file"\n', encoding="utf-8")
        return home

    def add_device(
        self,
        name: str,
        kind: str = "human",
        *,
        vault: Path | None = None,
        relay_url: str | None = None,
        invite: str | None = None,
        passphrase: str | None = None,
        **engine_options: Any,
    ) -> Device:
        """A new device joined through the real init code (invite, key blob, passphrase).

        By default it joins the cluster's vault; pass `invite` (e.g. from
        ``relay.invite(new_vault=True)``) to join another vault on the same relay.
        """
        home = self.new_home(name)
        vault = vault or (self.base / "vaults" / name)
        url = relay_url or self.relay.url
        dev = Device(
            name, kind, home, vault, self, url, self.passphrase_file, engine_options=engine_options
        )
        paths = dev.paths
        result = join_vault(
            paths,
            FileStore(paths.secrets_file),
            vault,
            relay_url=url,
            invite=invite or self.invite(kind),
            device_name=name,
            kind=kind,
            passphrase=lambda _vid, _creating: passphrase or self.passphrase,
            kdf=TEST_KDF_PARAMS,
        )
        dev.vault_id = result.state.vault_id
        if invite is None:
            self.vault_id = result.state.vault_id
        self.devices.append(dev)
        return dev

    def sync_all(self, rounds: int = 2, **kw: Any) -> list[RoundReport]:
        """Sync every device, `rounds` times over (two rounds let everyone see everything)."""
        reports = []
        for _ in range(rounds):
            for d in self.devices:
                reports.append(d.sync(**kw))
        return reports

    def assert_converged(self) -> dict[str, bytes]:
        """Every device holds exactly the same files, byte for byte; returns them."""
        first = self.devices[0].files()
        for d in self.devices[1:]:
            other = d.files()
            if other != first:
                only_a = sorted(set(first) - set(other))
                only_b = sorted(set(other) - set(first))
                differ = sorted(p for p in set(first) & set(other) if first[p] != other[p])
                raise AssertionError(
                    f"{self.devices[0].name} and {d.name} differ: only in first {only_a}, "
                    f"only in second {only_b}, different content {differ}"
                )
        return first


@contextlib.contextmanager
def cluster(base: str | os.PathLike[str], **kw: Any) -> Iterator[SyncCluster]:
    c = SyncCluster(base, **kw)
    try:
        yield c
    finally:
        c.close()


class CliRunnerInProcess:
    """Run `companion.cli.main` in-process as a new device (pytest only: needs the
    `monkeypatch` and `capsys` fixtures). Returns (exit status, stdout, stderr) as a user sees
    them, much faster than a subprocess."""

    def __init__(self, cluster: SyncCluster, name: str, monkeypatch, capsys) -> None:
        self.home = cluster.new_home(name)
        self.vault = cluster.base / "vaults" / name
        self.cluster = cluster
        self.mp = monkeypatch
        self.capsys = capsys
        self.passphrase_file: Path | None = cluster.passphrase_file

    def __call__(self, *args: str) -> tuple[int, str, str]:
        self.mp.setenv("COMPANION_HOME", str(self.home))
        self.mp.setenv("COMPANION_TEST_WEAK_KDF", "1")
        if self.passphrase_file is None:
            self.mp.delenv("COMPANION_PASSPHRASE_FILE", raising=False)
        else:
            self.mp.setenv("COMPANION_PASSPHRASE_FILE", str(self.passphrase_file))
        self.capsys.readouterr()
        from companion.cli import main

        try:
            main(list(args))
            code = 0
        except SystemExit as exc:
            code = int(exc.code or 0)
        out = self.capsys.readouterr()
        return code, out.out, out.err

    def init(self, *extra: str, invite: str | None = None, kind: str = "human") -> tuple:
        code = invite if invite is not None else self.cluster.invite(kind)
        return self(
            "init", str(self.vault), "--relay", self.cluster.relay.url, "--invite", code,
            "--device-name", self.vault.name, "--kind", kind, *extra,
        )  # fmt: skip


# ------------------------------------------------------------------------------------ the wire


def parse_frames(body: bytes) -> list[tuple[str, bytes]]:
    """A batched blob body (`application/x-companion-blobs`) as (blob id, data) pairs."""
    from companion.relay.blobframes import FrameHeader, FrameParser

    parser = FrameParser(1 << 30)
    out: list[tuple[str, bytes]] = []
    header: FrameHeader | None = None
    parts: list[bytes] = []
    for ev in parser.feed(body):
        if isinstance(ev, FrameHeader):
            header, parts = ev, []
        elif ev is None:
            assert header is not None
            out.append((header.blob_id, b"".join(parts)))
        else:
            parts.append(ev)
    parser.close()
    return out


def encode_blob_frames(items: list[tuple[str, bytes]]) -> bytes:
    """The inverse of `parse_frames`, with fresh transport checksums (a relay that lies well)."""
    import hashlib

    from companion.relay.blobframes import encode_frames

    return b"".join(encode_frames((bid, hashlib.sha256(d).hexdigest(), d) for bid, d in items))


@dataclass
class Exchange:
    """One request and its response as seen on the wire (bodies decoded from any encoding)."""

    method: str
    path: str
    request_headers: dict[str, str]
    request_body: bytes
    status: int
    response_headers: dict[str, str]
    response_body: bytes

    def raw(self) -> bytes:
        head = f"{self.method} {self.path}\n" + "".join(
            f"{k}: {v}\n" for k, v in self.request_headers.items()
        )
        resp = f"{self.status}\n" + "".join(f"{k}: {v}\n" for k, v in self.response_headers.items())
        return head.encode() + self.request_body + resp.encode() + self.response_body


class WireProxy:
    """An HTTP proxy between devices and the relay: records every exchange, and can lie.

    `tamper(exchange) -> exchange` (set at any time) may rewrite a response before the device
    sees it: that is a relay that lies, as far as any device can tell.
    """

    _HOP = {"connection", "keep-alive", "transfer-encoding", "content-length", "content-encoding"}

    def __init__(self, upstream: str) -> None:
        import http.server
        import threading

        import httpx

        self.upstream = upstream.rstrip("/")
        self.exchanges: list[Exchange] = []
        self.tamper: Any = None
        self._http = httpx.Client(base_url=self.upstream, timeout=120)
        proxy = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def _body(self) -> bytes:
                if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
                    out = b""
                    while True:
                        size = int(self.rfile.readline().split(b";")[0].strip(), 16)
                        if size == 0:
                            self.rfile.readline()
                            return out
                        out += self.rfile.read(size)
                        self.rfile.readline()
                n = int(self.headers.get("Content-Length") or 0)
                return self.rfile.read(n) if n else b""

            def _any(self) -> None:
                body = self._body()
                headers = {k: v for k, v in self.headers.items() if k.lower() not in proxy._HOP}
                headers.pop("Host", None)
                try:
                    resp = proxy._http.request(
                        self.command, self.path, headers=headers, content=body
                    )
                except Exception:
                    self.send_response(502)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                ex = Exchange(
                    self.command, self.path, dict(self.headers.items()), body, resp.status_code,
                    {k: v for k, v in resp.headers.items() if k.lower() not in proxy._HOP},
                    resp.content,
                )  # fmt: skip
                if proxy.tamper is not None:
                    ex = proxy.tamper(ex) or ex
                proxy.exchanges.append(ex)
                self.send_response(ex.status)
                for k, v in ex.response_headers.items():
                    self.send_header(k, v)
                self.send_header("Content-Length", str(len(ex.response_body)))
                self.end_headers()
                self.wfile.write(ex.response_body)

            do_GET = do_POST = do_PUT = do_DELETE = _any

        self._server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()

    def wire_bytes(self) -> bytes:
        return b"".join(ex.raw() for ex in self.exchanges)

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._http.close()
