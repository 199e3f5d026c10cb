"""Who may call the MCP server over HTTP: the holder of the vault's bearer token, from no page
origin the person has not listed.

Loopback is not a boundary: every local process, and every web page the person opens (a page
on `http://localhost:1234` can POST to `http://127.0.0.1:8765`), can reach the port. So:

- **A bearer token** per vault, 256 random bits, generated on first use and kept in the secret
  store (`companion.credentials.store`: the OS keyring, or the owner-only file), never in the
  vault, a log line or an error message. `companion mcp token VAULT` prints it (the only place
  it is ever shown) and `--rotate` replaces it; a running server takes the new token at its
  next request (the rotation touches a stamp file the server watches). Compared with
  `hmac.compare_digest`, so the time taken does not tell how much of a guess was right.
- **Origins**: a request with an `Origin` header (a browser's) is refused unless that origin is
  listed in `[mcp] allowed_origins` (none by default). A request without one (what CLI agents
  send) passes this check and still needs the token.

stdio needs neither: the agent starts the server as its own child, and the pipe is the channel.
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import os
import secrets
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from starlette.datastructures import Headers
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Receive, Scope, Send

from companion.credentials.store import SecretStore
from companion.fileio import write_atomic
from companion.logs import get_logger, register_secret
from companion.paths import DevicePaths

log = get_logger("mcp.auth")

TOKEN_BYTES = 32


def _vault_key(root: str | os.PathLike[str]) -> str:
    return hashlib.sha256(os.fsencode(os.path.realpath(root))).hexdigest()[:16]


def secret_name(root: str | os.PathLike[str]) -> str:
    """The secret store's name for this vault's MCP token (`mcp-token-<16 hex>`)."""
    return f"mcp-token-{_vault_key(root)}"


def stamp_file(paths: DevicePaths, root: str | os.PathLike[str]) -> Path:
    """Rewritten at each rotation: a running server reloads the token when it changes."""
    return paths.data_dir / "mcp" / f"{_vault_key(root)}.token-stamp"


def new_token() -> str:
    return secrets.token_urlsafe(TOKEN_BYTES)


@contextlib.contextmanager
def _token_lock(paths: DevicePaths, root: str | os.PathLike[str]) -> Iterator[None]:
    """One get-or-create at a time per vault on this device (a server starting while
    `companion mcp token` runs must not end up with two different tokens)."""
    lock = stamp_file(paths, root).with_suffix(".lock")
    lock.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    try:
        import fcntl
    except ImportError:  # Windows: no advisory lock; a race there is only a retry away
        yield
        return
    fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def ensure_token(
    store: SecretStore, paths: DevicePaths, root: str | os.PathLike[str]
) -> tuple[str, bool]:
    """(the vault's token, whether it was generated now)."""
    name = secret_name(root)
    with _token_lock(paths, root):
        token = store.get(name)
        if token:
            register_secret(token)
            return token, False
        token = new_token()
        store.set(name, token)
    log.info("generated the MCP token %r (see it with `companion mcp token`)", name)
    return token, True


def rotate_token(store: SecretStore, paths: DevicePaths, root: str | os.PathLike[str]) -> str:
    token = new_token()
    with _token_lock(paths, root):
        store.set(secret_name(root), token)
        write_atomic(stamp_file(paths, root), secrets.token_hex(8).encode("ascii") + b"\n")
    log.info("rotated the MCP token %r", secret_name(root))
    return token


def same_token(presented: str, expected: str) -> bool:
    """Constant-time comparison (bytes: `compare_digest` refuses non-ASCII str)."""
    return hmac.compare_digest(presented.encode("utf-8"), expected.encode("utf-8"))


class TokenSource:
    """The current token, read from the store again whenever the stamp file changes."""

    def __init__(self, store: SecretStore, paths: DevicePaths, root: str | os.PathLike[str]):
        self.store = store
        self.paths = paths
        self.root = root
        self.stamp = stamp_file(paths, root)
        self._seen = self._stamp()
        self._token, self.generated = ensure_token(store, paths, root)

    def _stamp(self) -> tuple[int, int, int] | None:
        try:
            st = self.stamp.stat()
        except OSError:
            return None
        return st.st_ino, st.st_mtime_ns, st.st_size

    def current(self) -> str:
        seen = self._stamp()
        if seen != self._seen:
            self._seen = seen
            self._token, _ = ensure_token(self.store, self.paths, self.root)
        return self._token


def bearer(headers: Headers) -> str | None:
    scheme, _, value = headers.get("authorization", "").partition(" ")
    if scheme.lower() != "bearer" or not value.strip():
        return None
    return value.strip()


def _refusal(status: int, message: str, extra: dict[str, str] | None = None) -> Any:
    return JSONResponse(
        {"error": "unauthorized" if status == 401 else "forbidden", "message": message},
        status_code=status,
        headers=extra or {},
    )


class HttpGate:
    """ASGI middleware in front of the MCP app: the Origin check, then the bearer token."""

    def __init__(
        self,
        app: ASGIApp,
        tokens: TokenSource | None,
        allowed_origins: tuple[str, ...] = (),
    ) -> None:
        self.app = app
        self.tokens = tokens
        self.allowed_origins = frozenset(o.rstrip("/") for o in allowed_origins)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":  # lifespan
            await self.app(scope, receive, send)
            return
        response = self.check(Headers(scope=scope))
        if response is not None:
            await response(scope, receive, send)
            return
        await self.app(scope, receive, send)

    def check(self, headers: Headers) -> Any:
        origin = headers.get("origin")
        if origin is not None and origin.rstrip("/") not in self.allowed_origins:
            return _refusal(
                403,
                "this origin may not call the vault's MCP server; list it in "
                "[mcp] allowed_origins to allow it",
            )
        if self.tokens is None:  # [mcp] require_token = false
            return None
        presented = bearer(headers)
        if presented is None or not same_token(presented, self.tokens.current()):
            return _refusal(
                401,
                "send the vault's MCP token as 'Authorization: Bearer <token>' "
                "(`companion mcp token VAULT` prints it)",
                {"WWW-Authenticate": 'Bearer realm="vault-companion-mcp"'},
            )
        return None
