"""`move`: byte-exact, atomic, refuses stale scans, never overwrites another secret."""

from __future__ import annotations

import hashlib
import os
import stat
from pathlib import Path

import pytest

from companion.credentials.store import FileStore
from companion.errors import CompanionError, InputError
from companion.secrets import move as move_mod
from companion.secrets.detect import scan_file, scan_text
from companion.secrets.move import NoteChangedError, move_secret
from tests.conftest import run_companion

GH = "ghp_" + "Qw3Er5Ty7Ui9Op1As3Df5Gh7Jk9Lz1Xc3Vb5N"
SK = "sk_live_" + "4eC39HqLyjWDarjtT1zdp7dc"
PEM_BODY = "\n".join("MIIEpAIBAAKCAQEA" + "q9Lw2Ze4" * 6 for _ in range(5))
PEM = f"-----BEGIN RSA PRIVATE KEY-----\n{PEM_BODY}\n-----END RSA PRIVATE KEY-----"


@pytest.fixture
def store(tmp_path: Path) -> FileStore:
    return FileStore(tmp_path / "state" / "secrets.toml")


def _note(vault: Path, rel: str, data: bytes, mode: int = 0o640) -> Path:
    p = vault / rel
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_bytes(data)
    os.chmod(p, mode)
    return p


def test_move_changes_only_the_secret_bytes(tmp_path: Path, store: FileStore) -> None:
    vault = tmp_path / "vault"
    before = (
        "\ufeff# Días raros 🌧\r\n\r\nEl token del bot: " + GH + " (no compartir)\r\n"
        "línea final sin salto"
    ).encode("utf-8")
    p = _note(vault, "journal/2024-10-21.md", before)
    (f,) = scan_file(p, display_path="journal/2024-10-21.md")
    result = move_secret(vault, "journal/2024-10-21.md", 3, "github-bot", store, expected=f)
    after = p.read_bytes()
    i = before.index(GH.encode())
    assert after == before[:i] + b"keyring:github-bot" + before[i + len(GH) :]
    assert stat.S_IMODE(p.stat().st_mode) == 0o640
    assert store.get("github-bot") == GH
    assert (result.path, result.line, result.kind, result.reference) == (
        "journal/2024-10-21.md",
        3,
        "github-token",
        "keyring:github-bot",
    )
    assert GH not in repr(result)
    assert scan_file(p) == []  # the reference is not a secret
    assert [x.name for x in p.parent.iterdir()] == ["2024-10-21.md"]  # no temp file left


def test_move_a_private_key_block(tmp_path: Path, store: FileStore) -> None:
    vault = tmp_path / "v"
    text = f"# ssh\n\nclave:\n\n{PEM}\n\nfin\n"
    p = _note(vault, "ssh.md", text.encode())
    move_secret(vault, "ssh.md", 5, "ssh-hermes", store)
    assert p.read_text() == "# ssh\n\nclave:\n\nkeyring:ssh-hermes\n\nfin\n"
    assert store.get("ssh-hermes") == PEM


def test_move_refuses_a_note_changed_since_the_scan(tmp_path: Path, store: FileStore) -> None:
    vault = tmp_path / "v"
    p = _note(vault, "n.md", f"a\ntoken {GH}\n".encode())
    (f,) = scan_file(p, display_path="n.md")
    p.write_bytes(f"a person's edit\ntoken {GH}\n".encode())
    edited = p.read_bytes()
    with pytest.raises(NoteChangedError, match="changed since it was scanned"):
        move_secret(vault, "n.md", 2, "gh", store, expected=f)
    with pytest.raises(NoteChangedError):
        move_secret(vault, "n.md", 2, "gh", store, expected=f.file_sha256)
    assert p.read_bytes() == edited and store.names() == []


def test_move_refuses_when_the_line_no_longer_holds_the_scanned_secret(
    tmp_path: Path, store: FileStore
) -> None:
    vault = tmp_path / "v"
    p = _note(vault, "n.md", f"token {GH}\n".encode())
    (f,) = scan_text(f"token {SK}\n", "n.md")  # a finding for other content, no file hash
    with pytest.raises(NoteChangedError, match="no longer holds"):
        move_secret(vault, "n.md", 1, "x", store, expected=f)
    assert p.read_bytes() == f"token {GH}\n".encode()


def test_several_secrets_on_a_line_need_an_index(tmp_path: Path, store: FileStore) -> None:
    vault = tmp_path / "v"
    p = _note(vault, "n.md", f"keys: {GH} and {SK}\n".encode())
    with pytest.raises(InputError, match="choose one with --index") as exc:
        move_secret(vault, "n.md", 1, "k", store)
    assert GH not in str(exc.value) and SK not in str(exc.value)
    with pytest.raises(InputError, match="--index must be 1-2"):
        move_secret(vault, "n.md", 1, "k", store, index=3)
    move_secret(vault, "n.md", 1, "stripe", store, index=2)
    assert p.read_text() == f"keys: {GH} and keyring:stripe\n"
    with pytest.raises(InputError, match="no secret found"):
        move_secret(vault, "n.md", 2, "k", store)


def test_never_overwrites_a_different_secret_of_that_name(tmp_path: Path, store: FileStore) -> None:
    vault = tmp_path / "v"
    store.set("gh", "an-older-secret-value")
    p = _note(vault, "n.md", f"{GH}\n".encode())
    with pytest.raises(CompanionError, match="already exists"):
        move_secret(vault, "n.md", 1, "gh", store)
    assert p.read_text() == f"{GH}\n" and store.get("gh") == "an-older-secret-value"
    # the same value under that name is fine (a second copy of the same token)
    store.set("same", GH)
    move_secret(vault, "n.md", 1, "same", store)
    assert p.read_text() == "keyring:same\n"


def test_paths_outside_the_vault_are_refused(tmp_path: Path, store: FileStore) -> None:
    vault = tmp_path / "v"
    vault.mkdir()
    _note(tmp_path, "outside.md", f"{GH}\n".encode())
    for path in ("../outside.md", str(tmp_path / "outside.md")):
        with pytest.raises(InputError, match="not inside the vault"):
            move_secret(vault, path, 1, "x", store)
    (vault / "link.md").symlink_to(tmp_path / "outside.md")
    with pytest.raises(InputError):
        move_secret(vault, "link.md", 1, "x", store)


def test_a_failed_write_leaves_note_and_store_as_they_were(
    tmp_path: Path, store: FileStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    vault = tmp_path / "v"
    p = _note(vault, "n.md", f"{GH}\n".encode())

    def disk_full(*_a: object, **_k: object) -> None:  # fault injection: the disk is full
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(move_mod, "write_atomic", disk_full)
    with pytest.raises(OSError):
        move_secret(vault, "n.md", 1, "gh", store)
    assert p.read_text() == f"{GH}\n" and store.get("gh") is None


# ---------------------------------------------------------------------------------------------
# Through the command line
# ---------------------------------------------------------------------------------------------


def _file_backend(home: Path) -> None:
    (home / "config").mkdir(parents=True, exist_ok=True)
    (home / "config" / "config.toml").write_text('[secrets]\nbackend = "file"\n')


def test_cli_scan_then_move(tmp_path: Path, companion_home: Path) -> None:
    _file_backend(companion_home)
    vault = tmp_path / "vault"
    p = _note(vault, "projects/billing.md", f"# Billing\n\nStripe: {SK}\n".encode())
    r = run_companion("secrets", "scan", str(vault))
    assert r.returncode == 1
    assert "projects/billing.md:3:9  stripe-key  sk_l" in r.stdout
    r = run_companion("secrets", "move", str(vault), "projects/billing.md:3", "--name", "stripe")
    assert r.returncode == 0, r.stderr
    assert p.read_text() == "# Billing\n\nStripe: keyring:stripe\n"
    assert run_companion("secrets", "get", "stripe").stdout == SK + "\n"
    assert run_companion("secrets", "scan", str(vault)).returncode == 0


def test_cli_move_refuses_a_note_edited_after_the_scan(
    tmp_path: Path, companion_home: Path
) -> None:
    _file_backend(companion_home)
    vault = tmp_path / "vault"
    p = _note(vault, "n.md", f"token {GH}\n".encode())
    assert run_companion("secrets", "scan", str(vault)).returncode == 1
    p.write_text(f"token {GH}\nthe person kept typing\n")
    r = run_companion("secrets", "move", str(vault), "n.md:1", "--name", "gh")
    assert r.returncode == 1
    assert "changed since it was scanned" in r.stderr
    assert p.read_text() == f"token {GH}\nthe person kept typing\n"
    assert run_companion("secrets", "list").stdout == ""


@pytest.mark.parametrize("location", ["n.md", "n.md:0", "n.md:x", ":3"])
def test_cli_bad_locations_exit_2(tmp_path: Path, location: str) -> None:
    vault = tmp_path / "vault"
    _note(vault, "n.md", b"x\n")
    r = run_companion("secrets", "move", str(vault), location, "--name", "a")
    assert r.returncode == 2, r.stderr
    assert "Traceback" not in r.stderr


def test_sha_helper_matches_the_scan(tmp_path: Path) -> None:
    p = _note(tmp_path, "n.md", f"{GH}\n".encode())
    (f,) = scan_file(p)
    assert f.file_sha256 == hashlib.sha256(p.read_bytes()).hexdigest()
