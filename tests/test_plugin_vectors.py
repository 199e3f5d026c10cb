"""Vectors for the parts of the format and the sync rules the crypto vectors do not pin, shared
with the Obsidian plugin's TypeScript (obsidian-plugin/test/plugin-vectors.test.ts) so the two
implementations cannot drift:

- the Argon2id known answer the plugin checks at start-up (hash-wasm against OpenSSL);
- padding buckets, and frames of large payloads (the sample that skips deflate, > 64 KiB);
- a record with a multi-chunk file, the executable bit and JSON escapes in its strings;
- the relay's batched blob frames;
- path normalisation, the default ignore rules, conflict-copy names and three-way merges.

Inputs come from `_fixed` (SHA-256 of "label/counter"), so the TypeScript side rebuilds them.
Regenerate only on purpose:  python tests/test_plugin_vectors.py --write
"""

from __future__ import annotations

import hashlib
import json
import sys
from datetime import datetime
from pathlib import Path

import pytest
from cryptography.hazmat.primitives.kdf.argon2 import Argon2id

from companion.crypto import ChunkRef, FileMeta, VaultKey, blob_id, seal_record
from companion.crypto.framing import frame, padded_size
from companion.relay.blobframes import encode_frames
from companion.sync.local.ignore import IgnoreRules
from companion.sync.local.pathsafe import UnsafePath, normalize
from companion.sync.round.conflicts import conflict_copy_name, sanitize_device
from companion.sync.round.merge import merge_text

VECTORS = Path(__file__).parent / "vectors" / "plugin_v1.json"
KAT_PASSWORD = "vault-companion argon2id self-test"
KAT_SALT = b"vault-companion-kat"
KAT_PARAMS = {"memory_kib": 64, "iterations": 2, "lanes": 2}
KAT: dict[str, object] = {"password": KAT_PASSWORD, "salt": KAT_SALT.hex(), **KAT_PARAMS}


def _fixed(label: str, n: int) -> bytes:
    out = b""
    counter = 0
    while len(out) < n:
        out += hashlib.sha256(f"{label}/{counter}".encode()).digest()
        counter += 1
    return out[:n]


def _text(label: str, n: int) -> bytes:
    """Compressible deterministic text: hex of `_fixed`, in lines."""
    hexed = _fixed(label, n // 2 + 1).hex()
    return "\n".join(hexed[i : i + 60] for i in range(0, len(hexed), 60)).encode()[:n]


MERGES = [
    ("a\nb\nc\n", "A\nb\nc\n", "a\nb\nC\n"),
    ("a\nb\nc\n", "A\nb\nc\n", "a\nB\nc\n"),
    ("a\r\nb\r\nc\r\n", "A\r\nb\r\nc\r\n", "a\nb\nC\n"),
    ("a\nb", "a\nb\nc", "x\nb"),
    ("one\ntwo\nthree\nfour\n", "one\n2\nthree\nfour\n", "one\ntwo\nthree\n4\n"),
    ("x\n", "x\ny\n", "x\nz\n"),
    ("keep\n", "keep\nsame\n", "keep\nsame\n"),
    ("", "new\n", "other\n"),
    # a UTF-8 byte-order mark is a character of the first line, kept by every merge (R24)
    ("\ufeffa\nb\nc\n", "\ufeffA\nb\nc\n", "\ufeffa\nb\nC\n"),
    ("\ufeffa\r\nb\r\n", "\ufeffa\r\nB\r\n", "\ufeffa\r\nb\r\nc\r\n"),
]
PATHS = [
    "Home.md",
    # a name over 255 bytes is a vault path (R12): a disk that cannot hold it says so on write
    "d/" + "n" * 253 + ".md",
    "\u00e9" * 128,
    "notas\\cafe\u0301.md",
    "/etc/passwd",
    "a/../b.md",
    "a//b.md",
    "C:/x.md",
    "notes/.companion-tmp-x",
    "bad\u0007name.md",
    "ok/./x.md",
    "knowledge/\u202egnp.md",
    "a\u2066b\u2069.md",
    "notes/\u200fx.md",
    "\uff0eobsidian/plugins/x/main.js",
    "\u2024\u2024/x.md",
    "\ufe52hidden.md",
    "Ideas\u2026 later.md",
    "\u2026 later.md",
    "\u2025/x.md",
]
IGNORED = [
    ".obsidian/workspace.json",
    ".obsidian/workspace-mobile.json",
    ".obsidian/app.json",
    ".obsidian/plugins/x/main.js",
    ".trash/old.md",
    ".git/HEAD",
    "notes/.DS_Store",
    "notes/x.swp",
    "notes/x.md~",
    "~$doc.docx",
    ".companionignore",
    ".companion/report.json",
    "Thumbs.db",
    "notes/a.md",
    ".obsidian/workspaces.json",  # named layouts the person saved: synced
    "inbox/video.mp4.crdownload",
    "inbox/paper.pdf.part",
    "inbox/book.epub.partial",
    "inbox/setup.exe.opdownload",
    "inbox/file.zip.download/data",
    "inbox/file.download",
    "inbox/#draft.md#",
    "inbox/#tag.md",
    "inbox/.#draft.md",
    "inbox/lu12345.tmp",
    "notes/4913",
]
DEVICES = ["Ana's laptop", ' my:\tphone/"x" ', "...dots...", "", "ñandú " * 12]


def build_vectors() -> dict:
    key = VaultKey(_fixed("vault-key", 32))
    vid = "vault-test-0001"
    kat = Argon2id(
        salt=KAT_SALT,
        length=32,
        iterations=KAT_PARAMS["iterations"],
        lanes=KAT_PARAMS["lanes"],
        memory_cost=KAT_PARAMS["memory_kib"],
    ).derive(KAT_PASSWORD.encode())
    frames = []
    for label, size, kind in (
        ("frame-noise-20k", 20_000, "noise"),
        ("frame-text-100k", 100_000, "text"),
        ("frame-noise-70k", 70_000, "noise"),
        ("frame-text-600", 600, "text"),
    ):
        data = _fixed(label, size) if kind == "noise" else _text(label, size)
        f = frame(data)
        frames.append(
            {
                "label": label,
                "size": size,
                "kind": kind,
                "input_sha256": hashlib.sha256(data).hexdigest(),
                "frame_len": len(f),
                "flags": f[0],
                "frame_sha256": hashlib.sha256(f).hexdigest(),
            }
        )
    c1, c2 = _fixed("chunk-1", 1000), _fixed("chunk-2", 37)
    meta = FileMeta(
        path='attachments/"quoted" \\ back ☃ 😀.bin',
        size=len(c1) + len(c2),
        sha256=hashlib.sha256(c1 + c2).hexdigest(),
        chunks=(ChunkRef(blob_id(key, c1), len(c1)), ChunkRef(blob_id(key, c2), len(c2))),
        mtime_ns=1_736_930_000_999_999_999,
        executable=True,
        device_id="dev-\u2028",
        device_name='tab\there "q" \u0001',
        device_kind="agent",
        recorded_ns=9_007_199_254_740_993,  # 2^53 + 1: not representable as a JS number
    )
    nonce = _fixed("record-nonce-multi", 12)
    fid, sealed = seal_record(key, vid, 9, meta, _nonce=nonce)
    batch_items = [
        (blob_id(key, c1), hashlib.sha256(c1).hexdigest(), c1[:40]),
        ("ab" * 8, "00" * 32, b""),
    ]
    normalized: list[dict[str, str | None]] = []
    for p in PATHS:
        try:
            normalized.append({"path": p, "normal": normalize(p)})
        except UnsafePath:
            normalized.append({"path": p, "normal": None})
    rules = IgnoreRules(Path("/nonexistent-vault-for-vectors"))
    when = datetime(2025, 1, 15, 9, 5)
    merges = []
    for base, ours, theirs in MERGES:
        m = merge_text(base, ours, theirs)
        merges.append(
            {"base": base, "ours": ours, "theirs": theirs, "clean": m.clean, "text": m.text}
        )
    return {
        "format": "vault-companion plugin vectors v1",
        "argon2id_kat": {**KAT, "output": kat.hex()},
        "padded_size": [
            [n, padded_size(n)] for n in (0, 1, 512, 513, 4096, 4097, 65536, 65537, 1_000_000)
        ],
        "frames": frames,
        "record": {
            "vault_id": vid,
            "rev": 9,
            "meta_json": meta.to_json().decode(),
            "nonce": nonce.hex(),
            "file_id": fid,
            "sealed": sealed.hex(),
        },
        "blob_batch": {
            "items": [{"id": i, "sha256": s, "data": d.hex()} for i, s, d in batch_items],
            "encoded": b"".join(encode_frames(batch_items)).hex(),
        },
        "normalize": normalized,
        "ignored": [{"path": p, "ignored": rules.is_ignored(p)} for p in IGNORED],
        "conflict_names": [
            {
                "path": "notes/plan.md",
                "device": d,
                "when": "2025-01-15T09:05",
                "sanitized": sanitize_device(d),
                "name": conflict_copy_name("notes/plan.md", d, when),
            }
            for d in DEVICES
        ]
        + [
            {
                "path": "x/" + "é" * 130 + ".md",
                "device": "server",
                "when": "2025-01-15T09:05",
                "sanitized": "server",
                "name": conflict_copy_name("x/" + "é" * 130 + ".md", "server", when),
            }
        ],
        "merges": merges,
    }


@pytest.fixture(scope="module")
def committed() -> dict:
    return json.loads(VECTORS.read_text(encoding="utf-8"))


def test_vectors_are_what_the_python_code_builds(committed):
    built = build_vectors()
    for name in built:
        if name == "frames":
            continue
        assert built[name] == committed[name], name


def test_frames_match_unless_zlib_differs(committed):
    built = build_vectors()["frames"]
    differs = [b for b, c in zip(built, committed["frames"], strict=True) if b != c]
    stored = [c for c in committed["frames"] if c["flags"] == 0]
    for c in stored:  # no compression involved: must match on every platform
        assert c in built
    if differs:
        pytest.skip(
            f"{len(differs)} compressed frame(s) differ: this zlib build compresses differently"
        )


def test_vectors_cover_the_deflate_skip_and_large_buckets(committed):
    kinds = {(f["kind"], f["flags"]) for f in committed["frames"]}
    assert ("noise", 0) in kinds and ("text", 1) in kinds
    assert any(f["frame_len"] > 65536 for f in committed["frames"])
    assert committed["argon2id_kat"]["output"] == (
        "7a6de6e8f9038e730be9356ec2f21349aef2ac99c1e979c6a91d71dce7449b00"
    )


if __name__ == "__main__":
    if sys.argv[1:] != ["--write"]:
        sys.exit("usage: python tests/test_plugin_vectors.py --write")
    VECTORS.write_text(
        json.dumps(build_vectors(), indent=2, ensure_ascii=True) + "\n", encoding="utf-8"
    )
    print(f"wrote {VECTORS}")
