"""A throw-away PostgreSQL server for tests and benchmarks: a real cluster in a temp folder.

    with TempCluster() as pg:
        url = pg.create_database("t1")   # postgresql://postgres@127.0.0.1:PORT/t1

It uses the server binaries of Debian's `postgresql` package (`/usr/lib/postgresql/*/bin`,
or `pg_config --bindir`, or PATH). PostgreSQL refuses to run as root, so when the caller is
root (CI) the cluster belongs to, and runs as, an unprivileged system user (created with
`useradd` when missing). It listens on 127.0.0.1 only, on a free port, with trust
authentication: nothing outside this machine can reach it, and it is deleted on exit.

`durable=False` (tests) turns off fsync for speed; benchmarks keep PostgreSQL's defaults.
"""

from __future__ import annotations

import contextlib
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import time
from pathlib import Path

SERVICE_USER = "companion-pgtest"


class PostgresUnavailable(RuntimeError):
    """No PostgreSQL server binaries on this machine (install Debian's `postgresql`)."""


def find_bindir() -> Path:
    env = os.environ.get("COMPANION_PG_BINDIR")
    candidates = [Path(env)] if env else []
    candidates += sorted(Path("/usr/lib/postgresql").glob("*/bin"), reverse=True)
    tool = shutil.which("pg_config")
    if tool:
        with contextlib.suppress(OSError, subprocess.SubprocessError):
            out = subprocess.run([tool, "--bindir"], capture_output=True, text=True, timeout=10)
            candidates.append(Path(out.stdout.strip()))
    which = shutil.which("pg_ctl")
    if which:
        candidates.append(Path(which).parent)
    for c in candidates:
        if (c / "initdb").is_file() and (c / "pg_ctl").is_file():
            return c
    raise PostgresUnavailable(
        "no PostgreSQL server binaries (initdb, pg_ctl): apt-get install postgresql"
    )


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _service_user() -> pwd.struct_passwd | None:
    """The unprivileged user to run the server as when we are root; None when we are not."""
    if os.geteuid() != 0:
        return None
    try:
        return pwd.getpwnam(SERVICE_USER)
    except KeyError:
        subprocess.run(
            ["useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin",
             SERVICE_USER],
            check=True, capture_output=True,
        )  # fmt: skip
        return pwd.getpwnam(SERVICE_USER)


class TempCluster:
    def __init__(self, *, durable: bool = False, max_connections: int = 200) -> None:
        self.bindir = find_bindir()
        self.user = _service_user()
        self.root = Path(tempfile.mkdtemp(prefix="companion-pg-"))
        self.data = self.root / "data"
        self.sockets = self.root / "sockets"
        self.log = self.root / "server.log"
        self.port = _free_port()
        self.durable = durable
        self.max_connections = max_connections
        self._started = False

    # the server runs as `self.user` (when root) ---------------------------------------------
    def _run(self, *argv: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
        cmd = [str(self.bindir / argv[0]), *argv[1:]]
        if self.user is not None:
            cmd = ["setpriv", f"--reuid={self.user.pw_uid}", f"--regid={self.user.pw_gid}",
                   "--clear-groups", *cmd]  # fmt: skip
        res = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout,
                             env={**os.environ, "LC_ALL": "C"})  # fmt: skip
        if res.returncode != 0:
            log = self.log.read_text(errors="replace")[-3000:] if self.log.exists() else ""
            raise RuntimeError(f"{argv[0]} failed: {res.stderr.strip()}\n{log}")
        return res

    def start(self) -> TempCluster:
        self.sockets.mkdir()
        if self.user is not None:
            for p in (self.root, self.sockets):
                os.chown(p, self.user.pw_uid, self.user.pw_gid)
        self._run("initdb", "-D", str(self.data), "-U", "postgres", "--auth=trust", "-E", "UTF8",
                  "--no-instructions")  # fmt: skip
        for attempt in range(5):
            settings = [
                "listen_addresses=127.0.0.1",
                f"port={self.port}",
                f"unix_socket_directories={self.sockets}",
                f"max_connections={self.max_connections}",
                "shared_buffers=128MB",
            ]
            if not self.durable:
                settings += ["fsync=off", "synchronous_commit=off", "full_page_writes=off"]
            opts = " ".join(f"-c {s}" for s in settings)
            try:
                self._run("pg_ctl", "-D", str(self.data), "-l", str(self.log), "-o", opts, "-w",
                          "start")  # fmt: skip
                break
            except RuntimeError as exc:
                # the free port was taken between `_free_port` and the server's bind (another
                # cluster starting at the same moment, as two pytest-xdist workers do)
                if "Address already in use" not in str(exc) or attempt == 4:
                    raise
                self.log.unlink(missing_ok=True)
                self.port = _free_port()
        self._started = True
        return self

    def stop(self) -> None:
        if self._started:
            with contextlib.suppress(Exception):
                self._run("pg_ctl", "-D", str(self.data), "-m", "immediate", "-w", "stop")
            self._started = False
        shutil.rmtree(self.root, ignore_errors=True)

    def __enter__(self) -> TempCluster:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # databases -----------------------------------------------------------------------------
    def url(self, dbname: str = "postgres") -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/{dbname}"

    def execute(self, sql: str) -> None:
        import psycopg

        with psycopg.connect(self.url(), autocommit=True) as conn:
            conn.execute(sql)  # type: ignore[arg-type]

    def create_database(self, name: str, template: str | None = None) -> str:
        """A new, empty database (or a copy of `template`); its URL."""
        extra = f" TEMPLATE {template}" if template else ""
        for attempt in range(50):
            try:
                self.execute(f'CREATE DATABASE "{name}"{extra}')
                break
            except Exception as exc:  # the template is busy for a moment after use
                if "being accessed by other users" not in str(exc) or attempt == 49:
                    raise
                time.sleep(0.1)
        return self.url(name)

    def drop_database(self, name: str) -> None:
        self.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
