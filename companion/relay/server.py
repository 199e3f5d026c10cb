"""Run the relay under uvicorn: bind, announce the URL, serve, shut down gracefully.

The socket is bound here (not by uvicorn) so that `--port 0` can pick a free port and the
chosen URL can be printed and written to `--port-file` once the server is accepting. On
SIGINT/SIGTERM, waiting long-polls are released at once so the graceful shutdown is quick;
in-flight commits finish (each is one transaction, so even a hard kill loses no partial one).
"""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from types import FrameType

import uvicorn

from companion.fileio import write_text_atomic
from companion.logs import get_logger
from companion.relay import logdedup
from companion.relay.app import RelayState, create_app
from companion.relay.backends import StoreChoice, limiter_for, migrate, open_storage
from companion.relay.conn import (
    ConnectionGuard,
    default_max_connections,
    default_max_per_address,
    guarded_protocol,
    raise_nofile_limit,
)
from companion.relay.limits import Limits
from companion.relay.storage import RetentionPolicy

log = get_logger("relay.server")

DEFAULT_PORT = 8787
PRUNE_INTERVAL_S = 6 * 3600.0


@dataclass
class ServeOptions:
    data_dir: Path | None = None  # SQLite + blob files (the embedded default) ...
    database: str | None = None  # ... or PostgreSQL
    blobs: str | None = None  # s3://bucket/prefix: blobs in an object store (PostgreSQL only)
    s3_endpoint: str | None = None
    migrate: bool = False  # apply pending schema migrations before serving
    host: str = "127.0.0.1"
    port: int = DEFAULT_PORT
    port_file: Path | None = None
    certfile: Path | None = None
    keyfile: Path | None = None
    forwarded_allow_ips: str | None = None  # trust X-Forwarded-* from these proxy addresses
    retention: RetentionPolicy | None = None
    log_level: str = "info"
    access_log: bool = True
    limits: Limits | None = None
    header_timeout: float = 10.0  # a request head must arrive within this
    idle_timeout: float = 30.0  # a request body may pause this long
    keep_alive_timeout: float = 15.0  # an idle connection between requests is closed after this
    max_connections: int | None = None  # None: what the open-file limit leaves room for
    max_connections_per_address: int | None = None


def bind_socket(host: str, port: int) -> socket.socket:
    """A listening TCP socket on host:port (port 0: a free one)."""
    family, type_, proto, _, addr = socket.getaddrinfo(
        host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
    )[0]
    sock = socket.socket(family, type_, proto)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind(addr)
    except OSError:
        sock.close()
        raise
    sock.listen(2048)
    sock.set_inheritable(True)
    return sock


def url_for(sock: socket.socket, tls: bool) -> str:
    host, port = sock.getsockname()[:2]
    if ":" in host:
        host = f"[{host}]"
    return f"{'https' if tls else 'http'}://{host}:{port}"


class _Server(uvicorn.Server):
    """uvicorn's server, plus: announce once serving, release long-polls on shutdown."""

    def __init__(
        self, config: uvicorn.Config, state: RelayState, on_started: Callable[[], None]
    ) -> None:
        super().__init__(config)
        self._state = state
        self._on_started = on_started
        self._loop: asyncio.AbstractEventLoop | None = None

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        self._loop = asyncio.get_running_loop()
        await super().startup(sockets)
        if self.started:
            self._on_started()

    def handle_exit(self, sig: int, frame: FrameType | None) -> None:
        super().handle_exit(sig, frame)
        if self._loop is not None and not self._loop.is_closed():
            self._loop.call_soon_threadsafe(self._state.notifier.close)


def _write_port_file(path: Path, port: int) -> None:
    write_text_atomic(path, f"{port}\n", mode=0o644)


def serve(opts: ServeOptions, announce: Callable[[str], None] | None = None) -> None:
    """Serve until interrupted. Raises OSError when the address cannot be bound."""
    if (opts.certfile is None) != (opts.keyfile is None):
        raise ValueError("--certfile and --keyfile go together")
    os.umask(0o077)  # whatever the relay writes (port file, logs, data) is the owner's only
    nofile = raise_nofile_limit()
    max_conn = opts.max_connections or default_max_connections(nofile)
    guard = ConnectionGuard.from_trusted(
        opts.forwarded_allow_ips,
        max_connections=max_conn,
        max_per_address=opts.max_connections_per_address or default_max_per_address(max_conn),
        header_timeout=opts.header_timeout,
        idle_timeout=opts.idle_timeout,
    )
    # the address first: a busy port must fail before the data folder or database is touched
    sock = bind_socket(opts.host, opts.port)
    try:
        choice = StoreChoice(opts.data_dir, opts.database, opts.blobs, opts.s3_endpoint)
        if opts.migrate:
            migrate(choice)
        storage = open_storage(choice)
    except BaseException:
        sock.close()
        raise
    retention = opts.retention or RetentionPolicy()
    app = create_app(
        storage,
        limits=opts.limits,
        limiter=limiter_for(storage),
        retention=retention,
        prune_interval=PRUNE_INTERVAL_S,
    )
    tls = opts.certfile is not None
    url = url_for(sock, tls)
    port = sock.getsockname()[1]

    def started() -> None:
        if opts.port_file is not None:
            _write_port_file(opts.port_file, port)
        (announce or _print)(url)

    config = uvicorn.Config(
        app,
        http=guarded_protocol(guard),
        log_level=opts.log_level,
        access_log=opts.access_log,
        ssl_certfile=str(opts.certfile) if opts.certfile else None,
        ssl_keyfile=str(opts.keyfile) if opts.keyfile else None,
        proxy_headers=opts.forwarded_allow_ips is not None,
        forwarded_allow_ips=opts.forwarded_allow_ips,
        server_header=False,
        timeout_graceful_shutdown=10,
        timeout_keep_alive=max(1, int(opts.keep_alive_timeout)),
    )
    logdedup.install()  # after uvicorn configured its loggers: storms become one line + count
    log.info(
        "at most %d connections (%d per address), header timeout %.0f s, idle timeout %.0f s, "
        "open-file limit %d",
        guard.max_connections,
        guard.max_per_address,
        guard.header_timeout,
        guard.idle_timeout,
        nofile,
    )
    server = _Server(config, app.state.relay, started)
    # uvicorn re-raises the stopping signal once it has shut down gracefully; with these no-op
    # handlers in place that re-raise is absorbed, so cleanup below runs and the exit is 0.
    previous = {sig: signal.signal(sig, _ignore) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        server.run(sockets=[sock])
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        sock.close()
        storage.close()
        if opts.port_file is not None:
            opts.port_file.unlink(missing_ok=True)


def _ignore(sig: int, frame: FrameType | None) -> None:
    pass


def _print(url: str) -> None:
    print(f"relay listening on {url}", flush=True)
    sys.stdout.flush()
