"""A real relay on 127.0.0.1 in a background thread, for tests (this project's and others').

    with running_relay(tmp_path / "relay") as relay:
        client = RelayClient(relay.url)
        client.join(relay.invite(kind="human"), "laptop")

The server is the production stack (uvicorn + the FastAPI app + a store: SqliteStorage by
default, or any `RelayStorage` passed in) on a free port; only the thread differs from
`companion relay serve`.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import uvicorn
from fastapi import FastAPI

from companion.relay.app import create_app
from companion.relay.auth import FailureLimiter, issue_invite
from companion.relay.conn import ConnectionGuard, guarded_protocol
from companion.relay.limits import Limits
from companion.relay.server import bind_socket, url_for
from companion.relay.sqlite_storage import SqliteStorage
from companion.relay.storage import RelayStorage

if TYPE_CHECKING:
    from cryptography import x509


@dataclass
class LiveRelay:
    url: str
    data_dir: Path
    storage: RelayStorage
    app: FastAPI

    def invite(
        self,
        vault_id: str | None = None,
        ttl: float = 3600,
        new_vault: bool = False,
        kind: str = "agent",
    ) -> str:
        """A one-time invite code for a device of `kind` (creates the vault when the relay
        has none)."""
        return issue_invite(
            self.storage, vault_id=vault_id, new_vault=new_vault, ttl=ttl, kind=kind
        ).code

    def revoke(self, device_id: str) -> None:
        self.storage.revoke_device(device_id, time.time())


@contextlib.contextmanager
def running_relay(
    data_dir: str | Path,
    *,
    limits: Limits | None = None,
    limiter: FailureLimiter | None = None,
    ssl_certfile: str | None = None,
    ssl_keyfile: str | None = None,
    storage: RelayStorage | None = None,
) -> Iterator[LiveRelay]:
    """A relay over `storage` (closed afterwards), by default SQLite in `data_dir`."""
    data = Path(data_dir)
    storage = storage if storage is not None else SqliteStorage(data)
    app = create_app(storage, limits=limits, limiter=limiter or FailureLimiter(capacity=1000))
    sock = bind_socket("127.0.0.1", 0)
    guard = ConnectionGuard(max_connections=1024, max_per_address=1024)
    config = uvicorn.Config(
        app,
        http=guarded_protocol(guard),
        log_level="warning",
        access_log=False,
        ssl_certfile=ssl_certfile,
        ssl_keyfile=ssl_keyfile,
        timeout_graceful_shutdown=2,
    )
    server = uvicorn.Server(config)  # off the main thread, it installs no signal handlers
    loop_box: list[asyncio.AbstractEventLoop] = []

    async def main() -> None:
        loop_box.append(asyncio.get_running_loop())
        await server.serve(sockets=[sock])

    thread = threading.Thread(target=asyncio.run, args=(main(),), daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            raise RuntimeError("the test relay did not start")
        time.sleep(0.01)
    try:
        yield LiveRelay(url_for(sock, ssl_certfile is not None), data, storage, app)
    finally:
        server.should_exit = True
        if loop_box:
            with contextlib.suppress(RuntimeError):
                loop_box[0].call_soon_threadsafe(app.state.relay.notifier.close)
        thread.join(timeout=15)
        sock.close()
        storage.close()


def _san(host: str) -> x509.GeneralName:
    import ipaddress

    from cryptography import x509

    try:
        return x509.IPAddress(ipaddress.ip_address(host))
    except ValueError:
        return x509.DNSName(host)


def self_signed_cert(directory: str | Path, host: str = "127.0.0.1") -> tuple[Path, Path]:
    """A throwaway self-signed certificate and key for `host` (an IP address or a DNS name),
    as PEM files."""
    import datetime

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, host)])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(
            x509.SubjectAlternativeName([_san(host)]),
            critical=False,
        )
        .sign(key, hashes.SHA256())
    )
    certfile, keyfile = Path(directory) / "cert.pem", Path(directory) / "key.pem"
    certfile.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    keyfile.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    keyfile.chmod(0o600)
    return certfile, keyfile
