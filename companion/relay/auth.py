"""Invite codes, device tokens and failed-auth rate limiting.

An invite code is `<vault_id>-<secret>`: it names the vault it admits to, and its secret (128
random bits, base32) is stored only as a SHA-256 hash, looked up by that hash. It is one-time
and expires (24 h by default).

A device token is `<device_id>.<secret>` with a 256-bit secret. The relay stores SHA-256 of the
secret and compares hashes with `hmac.compare_digest`. A fast hash is enough here: the secrets
are random and long, so there is nothing for a slow hash to protect against a dictionary.

`FailureLimiter` is a token bucket per client address: every failed authentication takes a
token, and while an address's bucket is empty its *failing* requests are answered 429 (a valid
token or invite is always served; see `gate.py` and docs/relay.md). `SharedFailureLimiter`
keeps the buckets in the database, for several relay processes.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import re
import secrets
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal, Protocol

from companion.relay.storage import Device, RelayStorage

ID_RE = re.compile(r"^[0-9a-f]{16}$")
_INVITE_RE = re.compile(r"^([0-9a-f]{16})-([a-z2-7]{26})$")
_TOKEN_RE = re.compile(r"^([0-9a-f]{16})\.([A-Za-z0-9_-]{43})$")

DEFAULT_INVITE_TTL = 24 * 3600.0


def new_id() -> str:
    """A vault or device id: 64 random bits as 16 lowercase hex characters."""
    return secrets.token_hex(8)


def hash_secret(secret: str) -> bytes:
    return hashlib.sha256(secret.encode("ascii")).digest()


def make_invite(vault_id: str) -> tuple[str, bytes]:
    """A fresh invite code for `vault_id` and the hash the store keeps."""
    secret = base64.b32encode(secrets.token_bytes(16)).decode("ascii").rstrip("=").lower()
    return f"{vault_id}-{secret}", hash_secret(secret)


def parse_invite(code: str) -> tuple[str, bytes] | None:
    """(vault_id, secret hash) of a well-formed invite code, else None."""
    m = _INVITE_RE.match(code.strip().lower())
    if m is None:
        return None
    return m.group(1), hash_secret(m.group(2))


def make_token(device_id: str) -> tuple[str, bytes]:
    """A fresh bearer token for `device_id` and the hash the store keeps."""
    secret = secrets.token_urlsafe(32)
    return f"{device_id}.{secret}", hash_secret(secret)


AuthReason = Literal["missing", "malformed", "invalid", "revoked"]


@dataclass(frozen=True)
class AuthResult:
    device: Device | None
    reason: AuthReason | None = None


def check_token(storage: RelayStorage, token: str | None) -> AuthResult:
    """The device a bearer token belongs to, or why it is refused."""
    if not token:
        return AuthResult(None, "missing")
    m = _TOKEN_RE.match(token)
    if m is None:
        return AuthResult(None, "malformed")
    device = storage.get_device(m.group(1))
    presented = hash_secret(m.group(2))
    # Compare even when the device is unknown, so timing does not tell ids apart.
    stored = device.token_hash if device is not None else b"\0" * len(presented)
    if not hmac.compare_digest(presented, stored) or device is None:
        return AuthResult(None, "invalid")
    if device.revoked is not None:
        return AuthResult(None, "revoked")
    return AuthResult(device)


class FailureLimiter:
    """Token bucket per client key: `capacity` failures at once, refilled at `rate` per second."""

    def __init__(
        self,
        capacity: float = 10,
        rate: float = 10 / 60,
        max_keys: int = 10_000,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if capacity < 1 or rate <= 0:
            raise ValueError("capacity must be >= 1 and rate > 0")
        self.capacity = float(capacity)
        self.rate = float(rate)
        self.max_keys = max_keys
        self._clock = clock
        self._buckets: OrderedDict[str, tuple[float, float]] = OrderedDict()
        self._lock = threading.Lock()

    def _level(self, key: str, now: float) -> float:
        tokens, stamp = self._buckets.get(key, (self.capacity, now))
        return min(self.capacity, tokens + (now - stamp) * self.rate)

    def retry_after(self, key: str) -> float:
        """Seconds until `key` may try again; 0 when it may try now."""
        with self._lock:
            if key not in self._buckets:
                return 0.0
            level = self._level(key, self._clock())
            return 0.0 if level >= 1 else (1 - level) / self.rate

    def failure(self, key: str) -> None:
        with self._lock:
            now = self._clock()
            level = self._level(key, now)
            self._buckets[key] = (max(0.0, level - 1), now)
            self._buckets.move_to_end(key)
            while len(self._buckets) > self.max_keys:
                self._buckets.popitem(last=False)  # forget the longest-quiet address


class BucketStore(Protocol):
    """Where a shared limiter keeps its buckets (the PostgreSQL store: every relay process)."""

    def limiter_level(self, key: str) -> tuple[float, float] | None: ...

    def limiter_take(self, key: str, capacity: float, rate: float, now: float) -> None: ...


class SharedFailureLimiter(FailureLimiter):
    """The same token buckets, kept in the database so that every relay process behind a load
    balancer counts the same failures (wall-clock time: the processes share no monotonic
    clock). Only failing requests touch it."""

    def __init__(
        self,
        store: BucketStore,
        capacity: float = 10,
        rate: float = 10 / 60,
        clock: Callable[[], float] = time.time,
    ) -> None:
        super().__init__(capacity, rate, clock=clock)
        self.store = store

    def retry_after(self, key: str) -> float:
        row = self.store.limiter_level(key)
        if row is None:
            return 0.0
        tokens, stamp = row
        level = min(self.capacity, tokens + max(0.0, self._clock() - stamp) * self.rate)
        return 0.0 if level >= 1 else (1 - level) / self.rate

    def failure(self, key: str) -> None:
        self.store.limiter_take(key, self.capacity, self.rate, self._clock())


class InviteTargetError(ValueError):
    """`issue_invite` cannot tell which vault the invite is for."""


@dataclass(frozen=True)
class IssuedInvite:
    code: str
    vault_id: str
    new_vault: bool
    expires: float
    kind: str = "agent"


def issue_invite(
    storage: RelayStorage,
    *,
    vault_id: str | None = None,
    new_vault: bool = False,
    ttl: float = DEFAULT_INVITE_TTL,
    now: float | None = None,
    kind: str = "agent",
) -> IssuedInvite:
    """A one-time invite code for one device of `kind` (human or agent; agent by default, the
    kind with fewer powers): to a new vault when the relay has none (or `new_vault`), to the
    only vault, or to `vault_id` when there are several."""
    now = time.time() if now is None else now
    if kind not in ("human", "agent"):
        raise InviteTargetError(f"the kind must be human or agent, not {kind!r}")
    if new_vault and vault_id:
        raise InviteTargetError("choose either an existing vault or a new one, not both")
    vaults = storage.list_vaults()
    ids = ", ".join(v.vault_id for v in vaults)
    created = False
    if new_vault or (not vaults and vault_id is None):
        target = storage.create_vault(new_id(), now).vault_id
        created = True
    elif vault_id is not None:
        if storage.get_vault(vault_id) is None:
            raise InviteTargetError(f"no vault {vault_id} on this relay (vaults: {ids or 'none'})")
        target = vault_id
    elif len(vaults) == 1:
        target = vaults[0].vault_id
    else:
        raise InviteTargetError(
            f"this relay has {len(vaults)} vaults; choose one with --vault ID ({ids})"
        )
    code, code_hash = make_invite(target)
    storage.add_invite(target, code_hash, now, now + ttl, kind)
    return IssuedInvite(code, target, created, now + ttl, kind)
