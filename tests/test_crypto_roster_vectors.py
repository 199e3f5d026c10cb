"""Device keys, roster entries, signed records and the roster's evaluation, byte for byte.

`companion/crypto/signing.py` implements docs/trust.md; the Obsidian plugin must produce and
accept the same bytes and decide the same trusted sets and authors. Every value here comes from
fixed Ed25519 seeds (Ed25519 signatures are deterministic), so the file is stable;
`obsidian-plugin/test/roster-vectors.test.ts` replays it.
Regenerate only on purpose:  python tests/test_crypto_roster_vectors.py --write
"""

from __future__ import annotations

import hashlib
import json
import sys
from dataclasses import asdict, replace
from pathlib import Path

import pytest

from companion.crypto.records import ChunkRef, FileMeta
from companion.crypto.signing import (
    Announcement,
    DeviceKey,
    RosterEntry,
    SignatureError,
    Trusted,
    author_kind,
    b64url,
    entry_message,
    evaluate,
    fingerprint,
    meta_message,
    unb64url,
    verify,
)

VECTORS = Path(__file__).parent / "vectors" / "roster_v1.json"

VAULT = "0123456789abcdef"
OTHER_VAULT = "fedcba9876543210"

# name -> (device id, device name)
DEVICES = {
    "laptop": ("a1a1a1a1a1a1a1a1", "Ana's laptop"),
    "phone": ("b2b2b2b2b2b2b2b2", "Móvil de Ana 📱"),
    "agent": ("c3c3c3c3c3c3c3c3", "server"),
    "agent2": ("d4d4d4d4d4d4d4d4", "Café\u0301 bot"),
    "stranger": ("e5e5e5e5e5e5e5e5", "stranger"),
}


def seed(name: str) -> bytes:
    return hashlib.sha256(b"vault-companion roster vector seed " + name.encode()).digest()


def key(name: str) -> DeviceKey:
    return DeviceKey(seed(name))


def dev(name: str) -> str:
    return DEVICES[name][0]


def entry(
    subject: str,
    kind: str,
    by: str,
    at: int,
    *,
    vault: str = VAULT,
    signer: str | None = None,
    subject_key: str | None = None,
    key_text: str | None = None,
) -> RosterEntry:
    """`by` vouches for `subject` (signed with `signer`'s key, `by`'s unless a forgery)."""
    e = RosterEntry(
        vault_id=vault,
        device_id=dev(subject),
        key=key_text or key(subject_key or subject).public_text,
        kind=kind,
        name=DEVICES[subject][1],
        by=dev(by),
        at=at,
    )
    return e.signed(key(signer or by))


def _entry_obj(e: RosterEntry) -> dict:
    return json.loads(e.to_json())


def keys_section() -> list[dict]:
    return [
        {
            "name": name,
            "device_id": dev(name),
            "seed": seed(name).hex(),
            "public": key(name).public_text,
            "fingerprint": key(name).fingerprint,
            "announcement": Announcement(dev(name), key(name).public_text, DEVICES[name][1])
            .to_json()
            .decode(),
        }
        for name in DEVICES
    ]


def entries_section() -> list[dict]:
    chosen = [
        ("laptop", entry("laptop", "human", "laptop", 1_780_000_000_000_000_000)),
        ("laptop", entry("phone", "human", "laptop", 1_780_000_000_000_000_001)),
        ("laptop", entry("agent", "agent", "laptop", 1_780_000_000_000_000_002)),
        ("phone", entry("agent2", "agent", "phone", 1_780_000_000_000_000_003)),
        ("laptop", entry("agent", "revoked", "laptop", 0)),
    ]
    return [
        {
            "signer": signer,
            "entry": _entry_obj(e),
            "json": e.to_json().decode(),
            "message": e.message().hex(),
        }
        for signer, e in chosen
    ]


def _meta(**kw: object) -> FileMeta:
    base: dict = {
        "path": "notes/a.md",
        "size": 5,
        "sha256": hashlib.sha256(b"hello").hexdigest(),
        "device_id": dev("laptop"),
        "device_name": DEVICES["laptop"][1],
        "device_kind": "human",
        "recorded_ns": 1_780_000_000_123_456_789,
        "mtime_ns": 1_780_000_000_000_000_000,
    }
    base.update(kw)
    if not base.get("deleted") and base["size"]:
        base["chunks"] = (ChunkRef("ab" * 32, base["size"]),)
    return FileMeta(**base)


FID = "5f" * 32
FID2 = "0c" * 32

RECORDS: list[tuple[str, str, int, FileMeta]] = [
    ("laptop", FID, 1, _meta()),
    ("laptop", FID, 7, _meta(recorded_ns=None, rename_from=None)),
    (
        "phone",
        FID2,
        2,
        _meta(
            path="notes/old.md",
            deleted=True,
            size=0,
            sha256="",
            device_id=dev("phone"),
            rename_from=None,
        ),
    ),  # fmt: skip
    (
        "phone",
        FID2,
        3,
        _meta(
            path="Cafe\u0301/Stra\u00dfe.md",
            rename_from="notes/old.md",
            device_id=dev("phone"),
            device_name=DEVICES["phone"][1],
        ),
    ),  # fmt: skip
    (
        "agent",
        FID,
        4,
        _meta(
            path="scripts/run.sh",
            executable=True,
            device_id=dev("agent"),
            device_kind="agent",
            size=0,
            sha256=hashlib.sha256(b"").hexdigest(),
        ),
    ),  # fmt: skip
]


def _meta_obj(meta: FileMeta) -> dict:
    obj = asdict(meta)
    obj["chunks"] = [[c.blob_id, c.length] for c in meta.chunks]
    return obj


def records_section() -> list[dict]:
    out = []
    for signer, fid, rev, meta in RECORDS:
        msg = meta_message(VAULT, fid, rev, meta)
        signed = replace(meta, sig=key(signer).sign(msg))
        out.append(
            {
                "signer": signer,
                "vault_id": VAULT,
                "file_id": fid,
                "rev": rev,
                "meta": _meta_obj(signed),
                "message": msg.hex(),
                "sig": signed.sig,
                "plaintext": signed.to_json().decode(),
            }
        )
    return out


T0 = 1_780_000_000_000_000_000


def _case(name: str, anchor: str, entries: list[RosterEntry | dict]) -> dict:
    return {
        "name": name,
        "vault_id": VAULT,
        "anchor": {"device_id": dev(anchor), "key": key(anchor).public_text},
        "entries": [e if isinstance(e, dict) else _entry_obj(e) for e in entries],
    }


def eval_cases() -> list[dict]:
    base = [
        entry("laptop", "human", "laptop", T0),
        entry("phone", "human", "laptop", T0 + 1),
        entry("agent", "agent", "laptop", T0 + 2),
    ]
    malformed = _entry_obj(entry("agent2", "human", "laptop", T0 + 5))
    malformed["key"] = "AAAA"
    return [
        _case("no entries: the anchor alone", "laptop", []),
        _case("the first device's own entry", "laptop", base[:1]),
        _case("a phone and an agent vouched by the laptop", "laptop", base),
        _case("the same roster seen from the phone", "phone", base),
        _case(
            "a chain: the phone vouches for a second agent",
            "laptop",
            [*base, entry("agent2", "agent", "phone", T0 + 3)],
        ),  # fmt: skip
        _case(
            "forged: the agent signs itself human with its own key",
            "laptop",
            [*base, entry("agent", "human", "agent", T0 + 10)],
        ),  # fmt: skip
        _case(
            "forged: the agent claims the laptop signed, with its own key",
            "laptop",
            [*base, entry("agent", "human", "laptop", T0 + 10, signer="agent")],
        ),  # fmt: skip
        _case(
            "forged: an entry for the agent2 signed by the agent as laptop",
            "laptop",
            [*base, entry("agent2", "human", "laptop", T0 + 10, signer="agent")],
        ),  # fmt: skip
        _case(
            "an entry from another vault is void",
            "laptop",
            [
                *base,
                entry("agent2", "human", "laptop", T0 + 10, vault=OTHER_VAULT),
                entry("agent", "human", "laptop", T0 + 11, vault=OTHER_VAULT),
            ],
        ),  # fmt: skip
        _case(
            "a device vouched as agent extends no trust",
            "laptop",
            [
                *base,
                entry("agent2", "human", "agent", T0 + 10),
                entry("stranger", "agent", "agent", T0 + 11),
            ],
        ),  # fmt: skip
        _case(
            "an unvouched device extends no trust",
            "laptop",
            [*base, entry("agent2", "human", "stranger", T0 + 10)],
        ),  # fmt: skip
        _case(
            "the newest at wins, whatever the order of the list",
            "laptop",
            [entry("phone", "agent", "laptop", T0 + 20), *base],
        ),  # fmt: skip
        _case(
            "an older entry does not undo a newer one",
            "laptop",
            [*base, entry("agent", "human", "laptop", T0 - 5)],
        ),  # fmt: skip
        _case(
            "revoked removes the device",
            "laptop",
            [*base, entry("agent", "revoked", "laptop", T0 + 20)],
        ),  # fmt: skip
        _case(
            "vouched again after a revocation",
            "laptop",
            [
                *base,
                entry("agent", "revoked", "laptop", T0 + 20),
                entry("agent", "agent", "laptop", T0 + 30),
            ],
        ),  # fmt: skip
        _case(
            "a revoked human device vouches no more",
            "laptop",
            [
                *base,
                entry("phone", "revoked", "laptop", T0 + 20),
                entry("agent2", "human", "phone", T0 + 30),
            ],
        ),  # fmt: skip
        _case(
            "what a device vouched before it was revoked stands",
            "laptop",
            [
                *base,
                entry("agent2", "agent", "phone", T0 + 10),
                entry("phone", "revoked", "laptop", T0 + 20),
            ],
        ),  # fmt: skip
        _case(
            "a vouching counts from when the voucher was trusted",
            "phone",
            [
                entry("agent", "agent", "laptop", T0 + 2),
                entry("laptop", "human", "phone", T0 + 5),
                entry("agent2", "agent", "laptop", T0 + 6),
            ],
        ),  # fmt: skip
        _case(
            "the anchor is never replaced nor revoked",
            "laptop",
            [
                *base,
                entry("laptop", "revoked", "phone", T0 + 20),
                entry("laptop", "agent", "phone", T0 + 21, subject_key="agent"),
            ],
        ),  # fmt: skip
        _case(
            "a human device changes another's key",
            "laptop",
            [*base, entry("agent", "agent", "laptop", T0 + 20, subject_key="agent2")],
        ),  # fmt: skip
        _case(
            "a demoted voucher's later entries do not apply",
            "laptop",
            [
                *base,
                entry("phone", "agent", "laptop", T0 + 20),
                entry("agent2", "human", "phone", T0 + 30),
            ],
        ),  # fmt: skip
        _case(
            "equal at: the greater signature applies last",
            "laptop",
            [
                *base,
                entry("agent2", "agent", "laptop", T0 + 40),
                entry("agent2", "human", "laptop", T0 + 40),
            ],
        ),  # fmt: skip
        _case("a malformed entry is ignored", "laptop", [*base, malformed]),
    ]


def parse_entries(objs: list[dict]) -> list[RosterEntry]:
    out = []
    for obj in objs:
        try:
            out.append(RosterEntry.from_obj(obj))
        except SignatureError:
            continue
    return out


def trusted_for(case: dict) -> dict[str, Trusted]:
    anchor = case["anchor"]
    return evaluate(
        parse_entries(case["entries"]),
        case["vault_id"],
        anchor["device_id"],
        unb64url(anchor["key"], 32, "anchor"),
    )


def _expect(trusted: dict[str, Trusted]) -> dict[str, dict[str, str]]:
    return {d: {"kind": t.kind, "key": b64url(t.key)} for d, t in sorted(trusted.items())}


def author_cases() -> list[dict]:
    """(anchored case name or None, record signer, record changes, relay kind) -> author."""
    live = _meta()
    out = []

    def add(name: str, anchored: bool, meta: FileMeta, relay_kind: str | None,
            signer: str | None, rev: int = 3, sign_rev: int | None = None) -> None:  # fmt: skip
        if signer is not None:
            msg = meta_message(VAULT, FID, sign_rev or rev, meta)
            meta = replace(meta, sig=key(signer).sign(msg))
        out.append(
            {
                "name": name,
                "anchored": anchored,
                "record": {"vault_id": VAULT, "file_id": FID, "rev": rev, "meta": _meta_obj(meta)},
                "relay_kind": relay_kind,
            }
        )

    agent = dict(device_id=dev("agent"), device_name="server")
    agent2 = dict(device_id=dev("agent2"), device_name="bot")
    phone = dict(device_id=dev("phone"), device_name="phone")
    add("the laptop's own signed record", True, live, "human", "laptop")
    add("collusion: relay says human, the agent seals human", True,
        replace(live, **agent, device_kind="human"), "human", "agent")  # fmt: skip
    add("the phone's record, the relay calls it an agent's", True,
        replace(live, **phone, device_kind="human"), "agent", "phone")  # fmt: skip
    add("an unsigned record from the vouched phone", True,
        replace(live, **phone), "human", None)  # fmt: skip
    add("a signed record from an unvouched device", True,
        replace(live, **agent2, device_kind="human"), "human", "agent2")  # fmt: skip
    add("a vouched device's record signed by another key", True,
        replace(live, **phone), "human", "agent")  # fmt: skip
    add("a vouched device's record signed for another revision", True,
        replace(live, **phone), "human", "phone", rev=4, sign_rev=3)  # fmt: skip
    add("a vouched device's record with a malformed signature", True,
        replace(live, **phone, sig="not a signature"), "human", None)  # fmt: skip
    add("the agent's own record, correctly signed", True,
        replace(live, **agent, device_kind="agent"), "agent", "agent")  # fmt: skip
    add("a record naming no device", True, replace(live, device_id=""), "human", "laptop")
    add("no anchor: relay and seal say human", False,
        replace(live, **agent, device_kind="human"), "human", "agent")  # fmt: skip
    add("no anchor: the seal says agent", False, replace(live, device_kind="agent"), "human",
        "laptop")  # fmt: skip
    add("no anchor: the relay says agent", False, live, "agent", "laptop")
    add("no anchor: an invalid signature is not looked at", False,
        replace(live, sig="x"), "human", None)  # fmt: skip
    return out


ROSTER_FOR_AUTHORS = "a phone and an agent vouched by the laptop"


def decide_author(case: dict, trusted: dict[str, Trusted] | None) -> str:
    r = case["record"]
    m = dict(r["meta"])
    m["chunks"] = tuple(ChunkRef(b, n) for b, n in m["chunks"])
    meta = FileMeta(**m)
    return author_kind(
        trusted if case["anchored"] else None,
        r["vault_id"],
        r["file_id"],
        r["rev"],
        meta,
        case["relay_kind"],
    )


def build_vectors() -> dict:
    cases = eval_cases()
    evaluation = [{**c, "trusted": _expect(trusted_for(c))} for c in cases]
    roster = next(c for c in cases if c["name"] == ROSTER_FOR_AUTHORS)
    trusted = trusted_for(roster)
    return {
        "format": "vault-companion roster vectors v1",
        "keys": keys_section(),
        "entries": entries_section(),
        "records": records_section(),
        "evaluation": evaluation,
        "authors": {
            "roster": ROSTER_FOR_AUTHORS,
            "cases": [{**c, "author": decide_author(c, trusted)} for c in author_cases()],
        },
    }


@pytest.fixture(scope="module")
def committed() -> dict:
    return json.loads(VECTORS.read_text(encoding="utf-8"))


def test_roster_vectors_are_what_the_python_code_makes(committed) -> None:
    built = build_vectors()
    for name in built:
        assert built[name] == committed[name], name


def test_the_vectors_replay_from_their_own_bytes(committed) -> None:
    """What the TypeScript test does: from the file alone, every byte and decision again."""
    for k in committed["keys"]:
        dk = DeviceKey(bytes.fromhex(k["seed"]))
        assert dk.public_text == k["public"]
        assert fingerprint(dk.public) == k["fingerprint"]
        assert Announcement.from_json(k["announcement"].encode()).key == k["public"]
    pubs = {k["name"]: unb64url(k["public"], 32, "key") for k in committed["keys"]}
    for item in committed["entries"]:
        e = RosterEntry.from_json(item["json"].encode())
        assert e.to_json().decode() == item["json"]
        assert entry_message(e.vault_id, e.device_id, e.key, e.kind, e.name, e.by, e.at).hex() \
            == item["message"]  # fmt: skip
        assert verify(pubs[item["signer"]], e.message(), e.sig)
        assert not verify(pubs[item["signer"]], e.message() + b"x", e.sig)
    for rec in committed["records"]:
        m = dict(rec["meta"])
        m["chunks"] = tuple(ChunkRef(b, n) for b, n in m["chunks"])
        meta = FileMeta(**m)
        assert FileMeta.from_json(rec["plaintext"].encode()) == meta
        assert meta_message(rec["vault_id"], rec["file_id"], rec["rev"], meta).hex() \
            == rec["message"]  # fmt: skip
        assert verify(pubs[rec["signer"]], bytes.fromhex(rec["message"]), rec["sig"])
    by_name = {c["name"]: c for c in committed["evaluation"]}
    for case in committed["evaluation"]:
        assert _expect(trusted_for(case)) == case["trusted"], case["name"]
    trusted = trusted_for(by_name[committed["authors"]["roster"]])
    for case in committed["authors"]["cases"]:
        assert decide_author(case, trusted) == case["author"], case["name"]


def test_the_cases_say_what_their_names_say(committed) -> None:
    """Pins the intent, so a regenerated file that flips a decision fails here too."""
    t = {
        c["name"]: {d: v["kind"] for d, v in c["trusted"].items()} for c in committed["evaluation"]
    }
    L, P, A, A2 = dev("laptop"), dev("phone"), dev("agent"), dev("agent2")
    base = {L: "human", P: "human", A: "agent"}
    assert t["no entries: the anchor alone"] == {L: "human"}
    assert t["a phone and an agent vouched by the laptop"] == base
    assert t["the same roster seen from the phone"] == {P: "human"}
    assert t["a chain: the phone vouches for a second agent"] == {**base, A2: "agent"}
    for name in (
        "forged: the agent signs itself human with its own key",
        "forged: the agent claims the laptop signed, with its own key",
        "forged: an entry for the agent2 signed by the agent as laptop",
        "an entry from another vault is void",
        "a device vouched as agent extends no trust",
        "an unvouched device extends no trust",
        "an older entry does not undo a newer one",
        "the anchor is never replaced nor revoked",
        "a malformed entry is ignored",
    ):
        assert t[name] == base, name
    assert t["the newest at wins, whatever the order of the list"] == {**base, P: "agent"}
    assert t["revoked removes the device"] == {L: "human", P: "human"}
    assert t["vouched again after a revocation"] == base
    assert t["a revoked human device vouches no more"] == {L: "human", A: "agent"}
    assert t["what a device vouched before it was revoked stands"] == {L: "human", A: "agent",
                                                                       A2: "agent"}  # fmt: skip
    assert t["a vouching counts from when the voucher was trusted"] == {P: "human", L: "human",
                                                                        A2: "agent"}  # fmt: skip
    assert t["a demoted voucher's later entries do not apply"] == {**base, P: "agent"}
    assert t["equal at: the greater signature applies last"][A2] in ("agent", "human")
    changed = next(c for c in committed["evaluation"] if c["name"].startswith("a human device ch"))
    assert changed["trusted"][A]["key"] == key("agent2").public_text
    authors = {c["name"]: c["author"] for c in committed["authors"]["cases"]}
    assert authors == {
        "the laptop's own signed record": "human",
        "collusion: relay says human, the agent seals human": "agent",
        "the phone's record, the relay calls it an agent's": "human",
        "an unsigned record from the vouched phone": "agent",
        "a signed record from an unvouched device": "agent",
        "a vouched device's record signed by another key": "tampered",
        "a vouched device's record signed for another revision": "tampered",
        "a vouched device's record with a malformed signature": "tampered",
        "the agent's own record, correctly signed": "agent",
        "a record naming no device": "agent",
        "no anchor: relay and seal say human": "human",
        "no anchor: the seal says agent": "agent",
        "no anchor: the relay says agent": "agent",
        "no anchor: an invalid signature is not looked at": "human",
    }


def test_a_key_changed_in_an_entry_breaks_its_signature() -> None:
    e = entry("agent", "agent", "laptop", T0)
    forged = replace(e, kind="human")
    trusted = evaluate([forged], VAULT, dev("laptop"), key("laptop").public)
    assert dev("agent") not in trusted
    assert dev("agent") in evaluate([e], VAULT, dev("laptop"), key("laptop").public)


if __name__ == "__main__":
    if sys.argv[1:] != ["--write"]:
        sys.exit("usage: python tests/test_crypto_roster_vectors.py --write")
    VECTORS.write_text(
        json.dumps(build_vectors(), indent=2, ensure_ascii=True) + "\n", encoding="utf-8"
    )
    print(f"wrote {VECTORS}")
