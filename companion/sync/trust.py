"""This device's side of docs/trust.md: its signing key, its anchor and the person's roster.

- The **signing key** (Ed25519) is made at join, or on the first round of a device that joined
  before keys existed, and kept in the secret store as `signing-key-<vault_id>`; its public
  half is announced in the vault at `.companion/keys/<device_id>.json` (a claim: anyone with
  the vault key can write one), written by the engine and synced like any file.
- The **anchor** (one human device's key this device trusts, set by `companion trust init` or
  `accept`) lives in the engine's state folder for the vault copy (`trust.json`), never in the
  vault: the relay cannot take it away or swap it.
- The **roster** is `.companion/roster/<device_id>.json` in the vault, one signed entry per
  vouched device. `DeviceTrust.trusted` evaluates it from the anchor (`signing.evaluate`);
  `RemoteVault.open` then decides each record's author by it (`signing.author_kind`): a
  vouched device's valid signature gives its roster kind, anything else counts as an agent,
  a vouched device's broken signature is tampering. Without an anchor, version 1's rule.

Nothing here imports `cryptography` until a key signs or a signature is checked, so a quiet
round pays for none of it.
"""

from __future__ import annotations

import json
import os
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from companion.errors import CompanionError, InputError
from companion.fileio import write_text_atomic
from companion.logs import get_logger, register_secret
from companion.paths import DevicePaths
from companion.sync.device import DeviceState, vault_dir

if TYPE_CHECKING:
    from companion.credentials.store import SecretStore
    from companion.crypto.signing import Announcement, DeviceKey, RosterEntry, Trusted

log = get_logger("sync.trust")

KEYS_DIR = ".companion/keys"
ROSTER_DIR = ".companion/roster"
ANCHOR_FILE = "trust.json"
MAX_FILE_BYTES = 64 * 1024  # an announcement or an entry is a few hundred bytes


def signing_key_name(vault_id: str) -> str:
    return f"signing-key-{vault_id}"


def announcement_rel(device_id: str) -> str:
    return f"{KEYS_DIR}/{device_id}.json"


def roster_rel(device_id: str) -> str:
    return f"{ROSTER_DIR}/{device_id}.json"


class TrustError(InputError):
    """A trust command cannot do what was asked (bad fingerprint, unknown device, ...)."""


# ------------------------------------------------------------------------------ signing key


def load_signing_key(store: SecretStore, vault_id: str) -> DeviceKey | None:
    """This device's signing key for `vault_id`, or None when none is stored."""
    from companion.crypto.signing import DeviceKey, SignatureError

    name = signing_key_name(vault_id)
    text = store.get(name)
    if not text:
        return None
    register_secret(text)
    try:
        return DeviceKey.from_text(text)
    except SignatureError:
        raise CompanionError(
            f"the stored signing key {name!r} is damaged; delete it from {store.description} "
            "and sync again to make a new one (the person must then vouch for this device again)"
        ) from None


def ensure_signing_key(store: SecretStore, state: DeviceState) -> tuple[DeviceKey, bool]:
    """The stored signing key, made and stored when there is none; (key, made now).

    Records the public key in the device state (`signing_key`); the caller saves the state.
    """
    from companion.crypto.signing import DeviceKey

    key = load_signing_key(store, state.vault_id)
    made = key is None
    if key is None:
        key = DeviceKey.generate()
        seed = key.seed_text()
        register_secret(seed)
        store.set(signing_key_name(state.vault_id), seed)
        log.info("made this device's signing key (fingerprint %s)", key.fingerprint)
    if state.signing_key and state.signing_key != key.public_text and made:
        log.warning(
            "the secret store lost this device's signing key: a new one was made; the person "
            "must vouch for this device again (`companion trust vouch` on a trusted device)"
        )
    state.signing_key = key.public_text
    return key, made


# ----------------------------------------------------------------------------------- anchor


@dataclass(frozen=True)
class Anchor:
    """The human device this device trusts first: its id and public key (base64url)."""

    device_id: str
    key: str
    name: str = ""
    at: int = 0

    @property
    def public(self) -> bytes:
        from companion.crypto.signing import PUBLIC_SIZE, unb64url

        return unb64url(self.key, PUBLIC_SIZE, "anchor key")

    @property
    def fingerprint(self) -> str:
        from companion.crypto.signing import fingerprint

        return fingerprint(self.public)


def anchor_file(paths: DevicePaths, root: str | os.PathLike[str]) -> Path:
    return vault_dir(paths, root) / ANCHOR_FILE


def load_anchor(path: Path) -> Anchor | None:
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:
        raise CompanionError(f"cannot read this device's trust anchor {path}: {exc}") from None
    try:
        anchor = Anchor(
            str(raw["device_id"]), str(raw["key"]), str(raw.get("name", "")), int(raw["at"])
        )
        anchor.public  # noqa: B018 - checks the key
    except (KeyError, TypeError, ValueError) as exc:
        raise CompanionError(f"this device's trust anchor {path} is damaged: {exc}") from None
    return anchor


def save_anchor(path: Path, anchor: Anchor) -> None:
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    obj = {"device_id": anchor.device_id, "key": anchor.key, "name": anchor.name,
           "at": anchor.at, "v": 1}  # fmt: skip
    write_text_atomic(path, json.dumps(obj, indent=2, sort_keys=True) + "\n")


# ----------------------------------------------------------------------- files in the vault


def _vault_files(root: Path, rel_dir: str) -> list[tuple[str, bytes]]:
    """(file stem, bytes) of each regular `*.json` file in `rel_dir` (no symbolic links)."""
    from companion.sync.pathsafe import UnsafePath, resolve_inside

    try:
        folder = resolve_inside(root, rel_dir)
    except UnsafePath:
        return []
    out = []
    try:
        entries = list(os.scandir(folder))
    except (FileNotFoundError, NotADirectoryError):
        return []
    for e in sorted(entries, key=lambda e: e.name):
        if not e.name.endswith(".json") or not e.is_file(follow_symlinks=False):
            continue
        try:
            if e.stat(follow_symlinks=False).st_size > MAX_FILE_BYTES:
                continue
            with open(e.path, "rb") as f:
                out.append((e.name[: -len(".json")], f.read(MAX_FILE_BYTES + 1)))
        except OSError:
            continue
    return out


def _listing(root: Path, rel_dir: str) -> tuple[tuple[str, int, int, int], ...]:
    """What changes when a file of `rel_dir` does: names, sizes, mtimes, inodes."""
    try:
        entries = list(os.scandir(root / rel_dir))
    except OSError:
        return ()
    out = []
    for e in entries:
        try:
            st = e.stat(follow_symlinks=False)
        except OSError:
            continue
        out.append((e.name, st.st_size, st.st_mtime_ns, st.st_ino))
    return tuple(sorted(out))


@dataclass(frozen=True)
class RosterFile:
    """One roster file: its entry, or why it is not one."""

    name: str
    entry: RosterEntry | None
    problem: str | None = None


def read_roster(root: Path) -> list[RosterFile]:
    from companion.crypto.signing import RosterEntry, SignatureError

    out = []
    for stem, data in _vault_files(root, ROSTER_DIR):
        try:
            entry = RosterEntry.from_json(data)
        except SignatureError as exc:
            out.append(RosterFile(stem, None, str(exc)))
            continue
        if entry.device_id != stem:
            out.append(RosterFile(stem, entry, "its file name is not its device's id"))
            continue
        out.append(RosterFile(stem, entry))
    return out


def read_announcements(root: Path) -> dict[str, Announcement]:
    """Device id -> its announced key (file name and content agreeing)."""
    from companion.crypto.signing import Announcement, SignatureError

    out = {}
    for stem, data in _vault_files(root, KEYS_DIR):
        try:
            ann = Announcement.from_json(data)
        except SignatureError:
            continue
        if ann.device_id == stem:
            out[stem] = ann
    return out


def write_in_vault(root: Path, rel: str, data: bytes) -> bool:
    """Write `rel` in the vault (atomically, never through a link) unless it already holds
    `data`; whether it wrote. The engine syncs it as any local change."""
    from companion.sync.atomic import atomic_write
    from companion.sync.filestate import NotRegularFile, current_state
    from companion.sync.pathsafe import resolve_inside

    target = resolve_inside(root, rel)
    try:
        state = current_state(target)
    except NotRegularFile:
        raise CompanionError(f"{rel} in the vault is not a regular file: not written") from None
    if state is not None:
        try:
            if target.read_bytes() == data:
                return False
        except OSError:
            pass
    atomic_write(root, rel, data, state, verify_hash=False)
    return True


# ----------------------------------------------------------------------- the device's view


@dataclass
class Evaluation:
    """The roster as this device sees it now (for `trust show` and `status`)."""

    anchor: Anchor | None
    trusted: dict[str, Trusted] | None
    files: list[RosterFile] = field(default_factory=list)
    announced: dict[str, Announcement] = field(default_factory=dict)
    vault_id: str = ""

    def not_vouched(self) -> list[tuple[str, str]]:
        """(file, why) for each roster file that does not stand."""
        from companion.crypto.signing import why_not

        if self.anchor is None or self.trusted is None:
            return []
        out = []
        for f in self.files:
            if f.entry is None or f.problem:
                out.append((f.name, f.problem or "malformed"))
                continue
            why = why_not(f.entry, self.vault_id, self.trusted, self.anchor.device_id)
            if why:
                out.append((f.name, why))
        return out

    def unvouched_devices(self, own_id: str) -> list[str]:
        """Announced devices (this one aside) that are not in the trusted set."""
        trusted = self.trusted or {}
        return sorted(d for d in self.announced if d not in trusted and d != own_id)


class DeviceTrust:
    """The roster as the engine uses it: the trusted set (cached until a roster file or the
    anchor changes) and this device's signer. `RemoteVault` asks `trusted()` per record."""

    def __init__(
        self,
        root: Path,
        paths: DevicePaths,
        device: DeviceState,
        store: SecretStore | None,
    ) -> None:
        self.root = root
        self.paths = paths
        self.device = device
        self.store = store
        self.anchor_path = anchor_file(paths, root)
        self._lock = threading.Lock()
        self._seen: Any = None
        self._stale = True
        self._trusted: dict[str, Trusted] | None = None
        self._signer: DeviceKey | None = None
        self._signer_loaded = False

    # -- the trusted set ------------------------------------------------------------------
    def refresh(self) -> None:
        """Look again (cheaply) whether the anchor or the roster changed; call once a pass."""
        try:
            st = os.stat(self.anchor_path)
            anchor_sig: tuple[int, int, int] | None = (st.st_size, st.st_mtime_ns, st.st_ino)
        except OSError:
            anchor_sig = None
        seen = (anchor_sig, _listing(self.root, ROSTER_DIR) if anchor_sig else ())
        with self._lock:
            if seen != self._seen:
                self._seen = seen
                self._stale = True

    def trusted(self) -> dict[str, Trusted] | None:
        """The trusted set, or None when this device has no anchor (version 1's rule)."""
        with self._lock:
            if self._stale:
                self._trusted = self._evaluate().trusted
                self._stale = False
            return self._trusted

    def evaluation(self) -> Evaluation:
        return self._evaluate(with_announcements=True)

    def _evaluate(self, with_announcements: bool = False) -> Evaluation:
        from companion.crypto.signing import evaluate

        anchor = load_anchor(self.anchor_path)
        announced = read_announcements(self.root) if with_announcements else {}
        if anchor is None:
            return Evaluation(None, None, [], announced, self.device.vault_id)
        files = read_roster(self.root)
        entries = [f.entry for f in files if f.entry is not None and f.problem is None]
        trusted = evaluate(entries, self.device.vault_id, anchor.device_id, anchor.public)
        return Evaluation(anchor, trusted, files, announced, self.device.vault_id)

    # -- this device's key ----------------------------------------------------------------
    def signer(self) -> DeviceKey | None:
        """This device's signing key (None without a secret store or before it is made: the
        next `prepare` makes one)."""
        with self._lock:
            if not self._signer_loaded and self.store is not None:
                self._signer = load_signing_key(self.store, self.device.vault_id)
                self._signer_loaded = True
            return self._signer

    def has_roster(self) -> bool:
        """Whether the person has started a roster for this vault (here or anywhere)."""
        if self.anchor_path.exists():
            return True
        try:
            with os.scandir(self.root / ROSTER_DIR) as it:
                return any(e.name.endswith(".json") for e in it)
        except OSError:
            return False

    def prepare(self) -> str | None:
        """Make sure this device has a signing key (once: the device state remembers it) and,
        once the vault has a roster, that the vault announces it; the vault path written (to
        sync), or None. Cheap when all is in place: no secret is read."""
        if self.store is None:
            return None
        from companion.crypto.signing import Announcement

        lost = self._signer_loaded and self._signer is None
        if not self.device.signing_key or lost:
            before = self.device.signing_key
            key, _made = ensure_signing_key(self.store, self.device)
            with self._lock:
                self._signer, self._signer_loaded = key, True
            if self.device.signing_key != before:
                self.device.save(self.paths)
        if not self.has_roster():
            return None  # nobody can vouch yet: the vault stays as version 1 left it
        rel = announcement_rel(self.device.device_id)
        ann = Announcement(self.device.device_id, self.device.signing_key, self.device.device_name)
        return rel if write_in_vault(self.root, rel, ann.to_json()) else None


# ---------------------------------------------------------------------- the person's actions


@dataclass
class TrustContext:
    """What the `trust` commands work on: this vault copy, its device state and secrets."""

    root: Path
    paths: DevicePaths
    device: DeviceState
    store: SecretStore
    view: DeviceTrust

    @classmethod
    def open(cls, paths: DevicePaths, config: Any, vault: str | os.PathLike[str]) -> TrustContext:
        from companion.credentials.store import open_store

        root = Path(os.path.realpath(vault))
        device = DeviceState.load(paths, root)
        store = open_store(config)
        return cls(root, paths, device, store, DeviceTrust(root, paths, device, store))

    def key(self) -> DeviceKey:
        before = self.device.signing_key
        key, _ = ensure_signing_key(self.store, self.device)
        if self.device.signing_key != before:
            self.device.save(self.paths)
        return key

    def announce(self, key: DeviceKey) -> None:
        from companion.crypto.signing import Announcement

        ann = Announcement(self.device.device_id, key.public_text, self.device.device_name)
        write_in_vault(self.root, announcement_rel(self.device.device_id), ann.to_json())

    def require_human(self, what: str) -> None:
        if self.device.kind != "human":
            raise TrustError(
                f"this is an agent device ({self.device.device_name}): only a person's device "
                f"(kind human) can {what}; run it on the person's laptop or phone"
            )


def _now_ns() -> int:
    import time

    return time.time_ns()


def trust_init(ctx: TrustContext) -> Anchor:
    """`companion trust init`: this human device signs its own roster entry and anchors on
    its own key (the person's first device, once per vault)."""
    from companion.crypto.signing import HUMAN, RosterEntry

    ctx.require_human("start the person's roster")
    key = ctx.key()
    current = load_anchor(ctx.view.anchor_path)
    if current is not None and current.key != key.public_text:
        raise TrustError(
            f"this device already trusts the roster of {current.name or current.device_id} "
            f"({current.fingerprint}); `trust init` would start another. Vouch for devices "
            "from there, or remove this device's anchor on purpose first "
            f"({ctx.view.anchor_path})"
        )
    at = _now_ns()
    entry = RosterEntry(
        vault_id=ctx.device.vault_id, device_id=ctx.device.device_id, key=key.public_text,
        kind=HUMAN, name=ctx.device.device_name, by=ctx.device.device_id, at=at,
    ).signed(key)  # fmt: skip
    write_in_vault(ctx.root, roster_rel(ctx.device.device_id), entry.to_json())
    ctx.announce(key)
    anchor = Anchor(ctx.device.device_id, key.public_text, ctx.device.device_name, at)
    save_anchor(ctx.view.anchor_path, anchor)
    return anchor


def _fingerprint_arg(text: str) -> str:
    from companion.crypto.signing import normalise_fingerprint

    fp = normalise_fingerprint(text)
    if fp is None:
        raise TrustError(
            f"{text!r} is not a device key fingerprint: it is 28 letters A-Z and digits 2-7, "
            "shown in 7 groups of 4 (ABCD-EFGH-...) by `companion trust show` on that device"
        )
    return fp


def trust_accept(ctx: TrustContext, fingerprint: str) -> Anchor:
    """`companion trust accept`: anchor on the announced key with this fingerprint, which the
    person read on an already trusted human device."""
    fp = _fingerprint_arg(fingerprint)
    announced = read_announcements(ctx.root)
    if not announced:
        raise TrustError(
            "no device of this vault has announced its key here yet: run `companion trust "
            "init` on the person's first device, then sync both devices"
        )
    match = [a for a in announced.values() if a.fingerprint == fp]
    if not match:
        raise TrustError(
            f"no device of this vault announces a key with fingerprint {fp}: check it on the "
            "other device (`companion trust show`), and sync both devices"
        )
    ann = match[0]
    if ann.device_id == ctx.device.device_id:
        raise TrustError(
            "that is this device's own key: accept the fingerprint of another device the "
            "person already trusts, or run `companion trust init` on the person's first device"
        )
    anchor = Anchor(ann.device_id, ann.key, ann.name, _now_ns())
    save_anchor(ctx.view.anchor_path, anchor)
    ctx.announce(ctx.key())  # so a trusted device can vouch for this one
    return anchor


def find_device(ctx: TrustContext, ref: str, ev: Evaluation) -> tuple[str, str]:
    """(device id, name) of `ref`: a device id, or the name of exactly one announced device."""
    names = {d: a.name for d, a in ev.announced.items()}
    for f in ev.files:
        if f.entry is not None and f.entry.device_id == f.name:
            names.setdefault(f.name, f.entry.name)
    if ref in names:
        return ref, names[ref]
    by_name = [d for d, n in names.items() if n == ref]
    if len(by_name) == 1:
        return by_name[0], ref
    known = ", ".join(f"{d} ({n})" for d, n in sorted(names.items())) or "none"
    if by_name:
        raise TrustError(f"{len(by_name)} devices are named {ref!r}: give its id ({known})")
    raise TrustError(
        f"no device {ref!r} has announced its key in this vault (known: {known}); sync that "
        "device first"
    )


def trust_vouch(ctx: TrustContext, ref: str, kind: str, fingerprint: str | None) -> RosterEntry:
    """`companion trust vouch`: sign a roster entry for a device's announced key, only if its
    fingerprint is the one the person read on that device (`revoked`: withdraw it)."""
    from companion.crypto.signing import HUMAN, KINDS, REVOKED, RosterEntry, b64url

    ctx.require_human("vouch for devices")
    if kind not in KINDS:
        raise TrustError(f"--kind is human, agent or revoked, not {kind!r}")
    ev = ctx.view.evaluation()
    if ev.anchor is None or ev.trusted is None:
        raise TrustError(
            "device keys are not set up on this device: run `companion trust init` on the "
            "person's first device, or `companion trust accept FINGERPRINT` here"
        )
    me = ev.trusted.get(ctx.device.device_id)
    key = ctx.key()
    if me is None or me.kind != HUMAN or me.key != key.public:
        raise TrustError(
            "this device is not vouched for as the person's device in the roster it trusts, "
            "so what it signs would not count: vouch for it from a trusted device first "
            f"(`companion trust vouch VAULT {ctx.device.device_id} --kind human "
            f"{key.fingerprint}`)"
        )
    device_id, name = find_device(ctx, ref, ev)
    if device_id == ctx.device.device_id:
        raise TrustError("a device does not vouch for itself: vouch from another device")
    ann = ev.announced.get(device_id)
    if kind == REVOKED:
        current = ev.trusted.get(device_id)
        key_text = b64url(current.key) if current else (ann.key if ann else "")
        if not key_text:
            raise TrustError(f"device {device_id} has no key to revoke")
    else:
        if fingerprint is None:
            raise TrustError(
                "give the FINGERPRINT that `companion trust show` prints on that device: it is "
                "how this device knows the key is that device's and not someone else's"
            )
        fp = _fingerprint_arg(fingerprint)
        if ann is None:
            raise TrustError(f"device {device_id} has not announced its key here yet: sync it")
        if ann.fingerprint != fp:
            raise TrustError(
                f"the fingerprint {fp} is not the key device {device_id} ({ann.name}) announces "
                f"here ({ann.fingerprint}): nothing was vouched. Read it again on that device; "
                "if it still differs, someone else wrote that announcement"
            )
        key_text = ann.key
    newest = max(
        (f.entry.at for f in ev.files if f.entry is not None and f.entry.device_id == device_id),
        default=-1,
    )
    entry = RosterEntry(
        vault_id=ctx.device.vault_id, device_id=device_id, key=key_text, kind=kind,
        name=ann.name if ann else name, by=ctx.device.device_id, at=max(_now_ns(), newest + 1),
    ).signed(key)  # fmt: skip
    write_in_vault(ctx.root, roster_rel(device_id), entry.to_json())
    return entry


def trust_summary(ctx: TrustContext) -> dict[str, Any]:
    """What `trust show --json` and `status` say about this device's keys and roster."""
    from companion.crypto.signing import PUBLIC_SIZE, b64url, fingerprint, unb64url

    ev = ctx.view.evaluation()
    own = ctx.device.signing_key
    out: dict[str, Any] = {
        "device_id": ctx.device.device_id,
        "kind": ctx.device.kind,
        "fingerprint": fingerprint(unb64url(own, PUBLIC_SIZE, "key")) if own else None,
        "anchored": ev.anchor is not None,
        "anchor": None,
        "trusted": [],
        "not_vouched": [{"file": f, "why": w} for f, w in ev.not_vouched()],
        "unvouched_devices": [],
    }
    if ev.anchor is not None:
        out["anchor"] = {"device_id": ev.anchor.device_id, "name": ev.anchor.name,
                         "fingerprint": ev.anchor.fingerprint}  # fmt: skip
    names = {d: a.name for d, a in ev.announced.items()}
    by = {f.name: f.entry.by for f in ev.files if f.entry is not None}
    for d, t in sorted((ev.trusted or {}).items()):
        out["trusted"].append({
            "device_id": d, "kind": t.kind, "name": names.get(d, ""),
            "fingerprint": fingerprint(t.key), "by": by.get(d, d),
            "key": b64url(t.key),
        })  # fmt: skip
    for d in ev.unvouched_devices(ctx.device.device_id):
        a = ev.announced[d]
        out["unvouched_devices"].append(
            {"device_id": d, "name": a.name, "fingerprint": a.fingerprint}
        )
    return out
