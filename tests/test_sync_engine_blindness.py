"""Relay blindness: after a real sync, no name, path fragment, content or key is readable by the
relay: not in its data directory, not in its logs (at debug level), not on the wire."""

from __future__ import annotations

import os
import unicodedata
from pathlib import Path

from companion.credentials.store import FileStore
from companion.crypto import export_recovery_key, padded_size
from companion.sync.state.device import DeviceState
from tests.syncharness import PASSPHRASE, SyncCluster, WireProxy

NOTES = {
    "Quokka-Expedition-Folder/zebra-migration-plan-77.md": (
        "# Zebra migration\nMARKER-CONTENT-4e1f9b: the launch word is PERIWINKLE-GOBLIN\n"
    ),
    "Quokka-Expedition-Folder/deeper-Narwhal-Subfolder/Tiburón-secreto-ñandú.md": (
        "Contenido MARKER-ESPAÑOL-c0ffee con acentos: canción, pingüino\n" * 40
    ),
    "journal/2031-02-29-axolotl-diary.md": "# Done\n- fed the AXOLOTL-KRAKEN-MARKER\n",
}
RENAMED = "Quokka-Expedition-Folder/renamed-Capybara-Manifesto.md"
FRAGMENTS = [
    "Quokka-Expedition",
    "zebra-migration",
    "Narwhal-Subfolder",
    "Tiburón-secreto",
    "ñandú",
    "axolotl-diary",
    "Capybara-Manifesto",
    "MARKER-CONTENT-4e1f9b",
    "PERIWINKLE-GOBLIN",
    "MARKER-ESPAÑOL",
    "pingüino",
    "AXOLOTL-KRAKEN",
]


def _haystacks(relay_dir: Path, log: str, wire: bytes) -> dict[str, bytes]:
    out = {"relay log": log.encode("utf-8", "replace"), "wire": wire}
    for dirpath, _dirs, files in os.walk(relay_dir):
        for name in files:
            p = Path(dirpath, name)
            out[str(p.relative_to(relay_dir))] = p.read_bytes() + name.encode()
    return out


def test_relay_sees_no_names_contents_or_keys(tmp_path: Path) -> None:
    with SyncCluster(tmp_path, relay="process", relay_log_level="debug") as c:
        proxy = WireProxy(c.relay.url)
        try:
            a = c.add_device("laptop", "human", relay_url=proxy.url)
            b = c.add_device("server", "agent", relay_url=proxy.url)
            for rel, text in NOTES.items():
                a.write(rel, text)
            a.sync()
            b.sync()
            b.rename("Quokka-Expedition-Folder/zebra-migration-plan-77.md", RENAMED)
            b.write(
                "journal/2031-02-29-axolotl-diary.md",
                NOTES["journal/2031-02-29-axolotl-diary.md"] + "- more\n",
            )
            b.sync()
            a.sync()
            c.assert_converged()
            assert a.read(RENAMED) is not None
            key = a.engine().core.remote.key
            a_file_id = a.engine().core.remote.file_id(RENAMED)
            token = DeviceState.load(a.paths, a.vault).load_token(FileStore(a.paths.secrets_file))
            wire = proxy.wire_bytes()
        finally:
            proxy.close()
        c.relay.stop()  # flush logs and the WAL into the data dir
        haystacks = _haystacks(c.relay.data_dir, c.relay.log_text(), wire)

    # positive controls: the capture really holds the traffic and the store
    assert token.encode() in wire
    fid = a_file_id.encode()
    assert fid in wire and any(fid in h for w, h in haystacks.items() if w.startswith("relay.db"))
    secrets = [PASSPHRASE, key.to_bytes().hex(), export_recovery_key(key)]
    needles: list[bytes] = []
    for text in FRAGMENTS + secrets:
        for form in ("NFC", "NFD"):
            needles.append(unicodedata.normalize(form, text).encode())
    needles.append(key.to_bytes())
    for where, data in haystacks.items():
        for needle in needles:
            assert needle not in data, f"{needle[:30]!r} readable in {where}"
    # the token is a bearer secret: on the wire by design, never in the relay's store or logs
    for where, data in haystacks.items():
        if where != "wire":
            assert token.encode() not in data, f"device token readable in {where}"


def test_stored_blob_sizes_are_padded_size_classes(tmp_path: Path) -> None:
    """The relay learns a size class, never a note's exact size."""
    with SyncCluster(tmp_path) as c:
        a = c.add_device("laptop", "human")
        for n in (1, 100, 511, 700, 1000, 3000, 5000, 40_000):
            a.write(f"n{n}.md", os.urandom(n))  # incompressible: the worst case for padding
        a.sync()
        assert c.vault_id is not None
        stored = c.relay.live.storage.list_blobs(c.vault_id, "", 1000)  # rows and files alike
        sizes = sorted({b.info.size for b in stored})
    overhead = 1 + 12 + 16 + 9  # version, nonce, tag, frame header
    classes = {padded_size(n) for n in (1, 100, 511, 700, 1000, 3000, 5000, 40_000)}
    assert {s - overhead for s in sizes} == classes
    assert len(sizes) < 8  # several notes share a size class
