"""The roster as one device reads it (companion/sync/trust.py) and the signing bytes' edges.

No relay here: roster files in a folder, a device state, a file secret store. The end-to-end
attack is tests/test_trust_collusion.py; the shared bytes are tests/vectors/roster_v1.json.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest

from companion.credentials.store import FileStore
from companion.crypto import ChunkRef, FileMeta, TamperedRecord, VaultKey, open_record, seal_record
from companion.crypto.signing import (
    DeviceKey,
    RosterEntry,
    SignatureError,
    b64url,
    normalise_fingerprint,
    unb64url,
    verify,
)
from companion.errors import CompanionError
from companion.paths import device_paths
from companion.sync.device import DeviceState
from companion.sync.trust import (
    Anchor,
    DeviceTrust,
    anchor_file,
    ensure_signing_key,
    load_signing_key,
    read_roster,
    roster_rel,
    save_anchor,
    signing_key_name,
)

VAULT_ID = "0123456789abcdef"


def key(name: str) -> DeviceKey:
    return DeviceKey(hashlib.sha256(name.encode()).digest())


def entry(device: str, kind: str, by: str, at: int, signer: str | None = None) -> RosterEntry:
    return RosterEntry(
        vault_id=VAULT_ID, device_id=device, key=key(device).public_text, kind=kind,
        name=device, by=by, at=at,
    ).signed(key(signer or by))  # fmt: skip


def put(root: Path, e: RosterEntry, name: str | None = None) -> None:
    p = root / roster_rel(name or e.device_id)
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_bytes(e.to_json())


@pytest.fixture
def device(tmp_path: Path):
    root = tmp_path / "vault"
    root.mkdir()
    paths = device_paths(tmp_path / "home")
    state = DeviceState(str(root), "http://127.0.0.1:1", VAULT_ID, "aaaa", "laptop", "human")
    store = FileStore(paths.secrets_file)
    return root, paths, state, store


def test_the_roster_is_read_from_its_files_and_only_from_them(device) -> None:
    root, _paths, _state, _store = device
    put(root, entry("bbbb", "human", "aaaa", 1))
    put(root, entry("cccc", "agent", "aaaa", 2), name="dddd")  # under another device's name
    (root / roster_rel("eeee")).write_text("{not json")
    (root / roster_rel("ffff")).write_bytes(b"x" * 70_000)  # too large: not read at all
    (root / ".companion" / "roster" / "notes.txt").write_text("ignored")
    os.symlink(root / roster_rel("bbbb"), root / roster_rel("link"))
    files = {f.name: f for f in read_roster(root)}
    assert sorted(files) == ["bbbb", "dddd", "eeee"]
    assert files["bbbb"].problem is None and files["bbbb"].entry is not None
    assert files["dddd"].problem == "its file name is not its device's id"
    assert files["eeee"].entry is None and "JSON" in (files["eeee"].problem or "")


def test_the_trusted_set_follows_the_files_and_the_anchor(device) -> None:
    root, paths, state, store = device
    view = DeviceTrust(root, paths, state, store)
    view.refresh()
    assert view.trusted() is None  # no anchor: version 1's rule
    save_anchor(anchor_file(paths, root), Anchor("aaaa", key("aaaa").public_text, "laptop", 1))
    put(root, entry("bbbb", "agent", "aaaa", 5))
    assert view.trusted() is None  # cached until the next pass looks again
    view.refresh()
    assert {d: t.kind for d, t in (view.trusted() or {}).items()} == {"aaaa": "human",
                                                                       "bbbb": "agent"}  # fmt: skip
    put(root, entry("bbbb", "human", "bbbb", 9))  # the agent vouches for itself
    view.refresh()
    assert view.trusted() == {"aaaa": (view.trusted() or {})["aaaa"]}
    put(root, entry("bbbb", "human", "aaaa", 10))
    view.refresh()
    assert (view.trusted() or {})["bbbb"].kind == "human"
    ev = view.evaluation()
    assert ev.not_vouched() == []


def test_the_signing_key_is_made_once_and_kept_secret(device, caplog) -> None:
    root, paths, state, store = device
    assert load_signing_key(store, VAULT_ID) is None
    key1, made = ensure_signing_key(store, state)
    assert made and state.signing_key == key1.public_text
    key2, made = ensure_signing_key(store, state)
    assert not made and key2.public == key1.public
    seed = store.get(signing_key_name(VAULT_ID))
    assert seed and seed not in repr(key1) and seed not in caplog.text
    store.set(signing_key_name(VAULT_ID), "damaged")
    with pytest.raises(Exception, match="damaged") as info:
        load_signing_key(store, VAULT_ID)
    assert seed not in str(info.value)


def test_prepare_announces_only_once_the_vault_has_a_roster(device) -> None:
    root, paths, state, store = device
    view = DeviceTrust(root, paths, state, store)
    assert view.prepare() is None
    assert state.signing_key  # the key is made all the same, for signing
    assert not (root / ".companion").exists()
    put(root, entry("bbbb", "agent", "zzzz", 1))
    assert view.prepare() == ".companion/keys/aaaa.json"
    assert view.prepare() is None  # in place: nothing written again
    assert DeviceState.load(paths, root).signing_key == state.signing_key
    # something else in its place (a folder): one clear error, which the engine logs and skips
    (root / ".companion/keys/aaaa.json").unlink()
    (root / ".companion/keys/aaaa.json").mkdir()
    with pytest.raises(CompanionError, match="not a regular file"):
        view.prepare()


def _meta(**kw: object) -> FileMeta:
    data = b"hello"
    base: dict = dict(path="a.md", size=5, sha256=hashlib.sha256(data).hexdigest(),
                      chunks=(ChunkRef("ab" * 32, 5),), device_id="aaaa",
                      device_kind="human")  # fmt: skip
    base.update(kw)
    return FileMeta(**base)


def test_an_unsigned_record_keeps_version_1s_bytes_and_a_signed_one_round_trips() -> None:
    plain = _meta()
    assert b'"sig"' not in plain.to_json()
    signed = _meta(sig=key("aaaa").sign(b"x"))
    assert FileMeta.from_json(signed.to_json()) == signed
    vk = VaultKey.from_bytes(bytes(32))
    fid, sealed = seal_record(vk, VAULT_ID, 1, signed)
    assert open_record(vk, VAULT_ID, fid, 1, sealed).sig == signed.sig
    with pytest.raises(ValueError, match="sig"):
        _meta(sig=5)
    bad = plain.to_json().replace(b'"size"', b'"sig":["x"],"size"')
    _, sealed = seal_record(vk, VAULT_ID, 1, plain)
    from companion.crypto import records

    forged = records._seal(vk.metadata_aead, 1, bad, records._record_ad(
        VAULT_ID, bytes.fromhex(fid), 1), None)  # fmt: skip
    with pytest.raises(TamperedRecord, match="malformed"):
        open_record(vk, VAULT_ID, fid, 1, forged)


def test_keys_and_signatures_have_one_spelling() -> None:
    pub = key("aaaa").public
    text = b64url(pub)
    assert unb64url(text, 32, "k") == pub
    for bad in (text + "=", text[:-1], text + "A", text.replace(text[-1], "/"), ""):
        with pytest.raises(SignatureError):
            unb64url(bad, 32, "k")
    # the same bytes with non-zero padding bits: another spelling, refused
    last = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".index(text[-1])
    twin = text[:-1] + "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"[last ^ 1]
    with pytest.raises(SignatureError):
        unb64url(twin, 32, "k")
    sig = key("aaaa").sign(b"m")
    assert verify(pub, b"m", sig)
    assert not verify(pub, b"m", sig + "A")
    assert not verify(pub, b"n", sig)
    assert not verify(key("bbbb").public, b"m", sig)
    fp = key("aaaa").fingerprint
    assert normalise_fingerprint(fp.lower().replace("-", " ")) == fp
    assert normalise_fingerprint(fp[:-1] + "1") is None  # 1 is not base32
    assert normalise_fingerprint(fp[:-1]) is None
