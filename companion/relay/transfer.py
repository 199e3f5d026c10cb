"""`companion relay export | import`: move a relay's data between stores (SQLite <-> PostgreSQL,
blobs in PostgreSQL or S3) as it is, without any vault key: everything copied is ciphertext,
hashes of secrets, ids and numbers.

The export is a folder::

    manifest.json     format, version, source, counts (checked by import)
    vaults.jsonl      vault id, created, seq, the wrapped key and every earlier wrap
    invites.jsonl     invite hashes (unused invites stay usable), devices.jsonl (token hashes)
    records.jsonl     every retained record with its seq, device and time
    blobs.jsonl       each blob's id, size, SHA-256 and creation time
    blobs/<vault>/<ab>/<id>   the blob bytes

Sequence numbers, revisions and device ids are kept, so devices carry on where they were: no
resynchronisation, no token or invite to reissue. Import refuses a store that already holds
data, checks each blob against its SHA-256 and the counts against the manifest. Leases (held a
few hours at most) and failed-authentication counters are not carried over. Memory stays
bounded (records in pages, one blob at a time); progress goes to a callback.
"""

from __future__ import annotations

import base64
import json
import os
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from companion.errors import InputError
from companion.relay import fsmodes
from companion.relay.storage import BlobInfo as _BlobInfo
from companion.relay.storage import (
    Device,
    InviteRow,
    KeyWrap,
    RelayStorage,
    StoredBlob,
    StoredRecord,
    VaultRow,
)

FORMAT = "vault-companion-relay-export"
VERSION = 1
PAGE = 2000

Progress = Callable[[str], None]


def _b64(data: bytes | None) -> str | None:
    return None if data is None else base64.b64encode(data).decode("ascii")


def _unb64(text: str | None) -> bytes | None:
    return None if text is None else base64.b64decode(text)


class _Lines:
    def __init__(self, path: Path) -> None:
        fd = fsmodes.create_private(path)
        self.f = os.fdopen(fd, "w", encoding="utf-8")
        self.count = 0

    def write(self, obj: dict[str, Any]) -> None:
        self.f.write(json.dumps(obj, separators=(",", ":")) + "\n")
        self.count += 1

    def close(self) -> None:
        self.f.flush()
        os.fsync(self.f.fileno())
        self.f.close()


def export_relay(store: RelayStorage, dest: Path, source: str,
                 progress: Progress = lambda _m: None) -> dict[str, int]:  # fmt: skip
    """Write everything `store` holds to the new folder `dest`; the counts written."""
    if dest.exists() and any(dest.iterdir()):
        raise InputError(f"{dest} is not empty: export into a new folder")
    fsmodes.private_dir(dest)
    files = {n: _Lines(dest / f"{n}.jsonl")
             for n in ("vaults", "invites", "devices", "records", "blobs")}  # fmt: skip
    blob_bytes = 0
    try:
        vaults = store.dump_vaults()
        for v in vaults:
            files["vaults"].write({
                "vault_id": v.vault_id, "created": v.created, "seq": v.seq,
                "key": _b64(v.key_blob), "key_updated": v.key_updated,
                "wraps": [{"key": _b64(w.key), "sha256": w.sha256, "set_at": w.set_at,
                           "device_id": w.device_id} for w in store.key_history(v.vault_id)],
            })  # fmt: skip
        for i in store.dump_invites():
            files["invites"].write({
                "code_hash": _b64(i.code_hash), "vault_id": i.vault_id, "created": i.created,
                "expires": i.expires, "used": i.used, "used_by": i.used_by, "kind": i.kind,
            })  # fmt: skip
        for d in store.list_devices():
            files["devices"].write({
                "device_id": d.device_id, "vault_id": d.vault_id, "name": d.name,
                "kind": d.kind, "token_hash": _b64(d.token_hash), "created": d.created,
                "revoked": d.revoked,
            })  # fmt: skip
        for v in vaults:
            since = 0
            while True:
                page = store.changes(v.vault_id, since, PAGE, 64 * 1024 * 1024)
                for r in page.records:
                    files["records"].write({
                        "vault_id": v.vault_id, "seq": r.seq, "file_id": r.file_id,
                        "rev": r.rev, "parent_rev": r.parent_rev, "sealed": _b64(r.sealed),
                        "blobs": list(r.blobs), "device_id": r.device_id,
                        "committed_at": r.committed_at,
                    })  # fmt: skip
                since = page.seq
                if not page.more:
                    break
            progress(f"vault {v.vault_id}: {files['records'].count} records so far")
            after = ""
            while True:
                batch = store.list_blobs(v.vault_id, after, PAGE)
                for b in batch:
                    _, data = store.read_blob(v.vault_id, b.info.blob_id)
                    path = dest / "blobs" / v.vault_id / b.info.blob_id[:2] / b.info.blob_id
                    fsmodes.private_dir(path.parent)
                    with os.fdopen(fsmodes.create_private(path), "wb") as out:
                        out.write(data)
                    blob_bytes += len(data)
                    files["blobs"].write({
                        "vault_id": v.vault_id, "blob_id": b.info.blob_id, "size": b.info.size,
                        "sha256": b.info.sha256, "created": b.created,
                    })  # fmt: skip
                if len(batch) < PAGE:
                    break
                after = batch[-1].info.blob_id
            progress(f"vault {v.vault_id}: {files['blobs'].count} blobs so far")
    finally:
        for f in files.values():
            f.close()
    counts = {n: f.count for n, f in files.items()}
    manifest = {"format": FORMAT, "version": VERSION, "source": source,
                "exported_at": time.time(), "counts": counts, "blob_bytes": blob_bytes}  # fmt: skip
    with os.fdopen(fsmodes.create_private(dest / "manifest.json"), "w") as out:
        json.dump(manifest, out, indent=2)
    return counts


def _read(src: Path, name: str) -> Iterator[dict[str, Any]]:
    with open(src / f"{name}.jsonl", encoding="utf-8") as f:
        for line in f:
            if line.strip():
                yield json.loads(line)


def import_relay(store: RelayStorage, src: Path,
                 progress: Progress = lambda _m: None) -> dict[str, int]:  # fmt: skip
    """Load an export into the empty `store`; the counts loaded."""
    try:
        manifest = json.loads((src / "manifest.json").read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise InputError(f"{src} is not a relay export (manifest.json: {exc})") from None
    if manifest.get("format") != FORMAT or manifest.get("version") != VERSION:
        raise InputError(f"{src} is not a relay export this version reads")
    if not store.is_empty():
        raise InputError(
            "the target store already holds vaults or devices: import into an empty one "
            "(a new --data folder, or a new, migrated database)"
        )
    counts = dict.fromkeys(("vaults", "invites", "devices", "records", "blobs"), 0)
    for v in _read(src, "vaults"):
        wraps = [KeyWrap(_unb64(w["key"]) or b"", w["sha256"], w["set_at"], w["device_id"])
                 for w in v["wraps"]]  # fmt: skip
        store.load_vault(VaultRow(v["vault_id"], v["created"], v["seq"], _unb64(v["key"]),
                                  v["key_updated"]), wraps)  # fmt: skip
        counts["vaults"] += 1
    for i in _read(src, "invites"):
        store.load_invite(InviteRow(_unb64(i["code_hash"]) or b"", i["vault_id"], i["created"],
                                    i["expires"], i["used"], i["used_by"], i["kind"]))  # fmt: skip
        counts["invites"] += 1
    for d in _read(src, "devices"):
        token_hash = _unb64(d["token_hash"]) or b""
        store.load_device(Device(d["device_id"], d["vault_id"], d["name"], d["kind"],
                                 token_hash, d["created"], d["revoked"]))  # fmt: skip
        counts["devices"] += 1
    # blobs before records: a record never names a blob the store does not have
    for b in _read(src, "blobs"):
        path = src / "blobs" / b["vault_id"] / b["blob_id"][:2] / b["blob_id"]
        data = path.read_bytes()
        info = StoredBlob(_BlobInfo(b["blob_id"], b["size"], b["sha256"]), b["created"])
        store.load_blob(b["vault_id"], info, data)
        counts["blobs"] += 1
        if counts["blobs"] % 1000 == 0:
            progress(f"{counts['blobs']} blobs")
    batch: list[StoredRecord] = []
    vault = None
    for r in _read(src, "records"):
        if batch and (r["vault_id"] != vault or len(batch) >= PAGE):
            store.load_records(vault or "", batch)
            counts["records"] += len(batch)
            progress(f"{counts['records']} records")
            batch = []
        vault = r["vault_id"]
        batch.append(StoredRecord(r["file_id"], r["rev"], r["parent_rev"],
                                  _unb64(r["sealed"]) or b"", tuple(r["blobs"]), r["seq"],
                                  r["device_id"], r["committed_at"]))  # fmt: skip
    if batch:
        store.load_records(vault or "", batch)
        counts["records"] += len(batch)
    if counts != manifest["counts"]:
        raise InputError(f"the export's manifest says {manifest['counts']}, it held {counts}")
    return counts
