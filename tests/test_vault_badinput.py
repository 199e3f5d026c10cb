"""Bad input never crashes a command and never rewrites a file.

Each case builds a small vault around one kind of bad file, runs `vault check --json` and
`vault search` through the real entry point, and checks the report, the exit status, and that
every file in the vault is byte-for-byte and timestamp-for-timestamp as it was.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
import traceback
import unicodedata
from pathlib import Path

import pytest

from companion.cli import main
from companion.vault.check import run_check
from companion.vault.vault import Vault

posix_only = pytest.mark.skipif(os.name != "posix", reason="POSIX file system features")


@pytest.fixture(autouse=True)
def home(tmp_path, monkeypatch) -> Path:
    h = tmp_path / "home"
    monkeypatch.setenv("COMPANION_HOME", str(h))
    return h


@pytest.fixture()
def vault(tmp_path) -> Path:
    v = tmp_path / "vault"
    v.mkdir()
    (v / "Home.md").write_text("# Home\n- [[Good]]\n", encoding="utf-8")
    (v / "Good.md").write_text("# Good\nA fine note about zebras.\n", encoding="utf-8")
    return v


def snapshot(root: Path) -> dict[str, tuple[bytes, int]]:
    out = {}
    for dirpath, _dirs, files in os.walk(root):
        for name in files:
            p = os.path.join(dirpath, name)
            if os.path.islink(p) or not os.path.isfile(p):
                continue
            try:
                with open(p, "rb") as fh:
                    data = fh.read()
            except OSError:
                data = b"<unreadable>"
            out[p] = (data, os.lstat(p).st_mtime_ns)
    return out


def run(capsys, *args: str) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as ei:
        main(list(args))
    out, err = capsys.readouterr()
    return (0 if ei.value.code is None else int(ei.value.code)), out, err


def check(capsys, vault: Path) -> tuple[int, dict]:
    before = snapshot(vault)
    code, out, err = run(capsys, "vault", "check", str(vault), "--json")
    assert "Traceback" not in err
    code_text, text, err_text = run(capsys, "vault", "check", str(vault))
    assert code_text == code and "Traceback" not in err_text and text.strip()
    scode, _sout, serr = run(capsys, "vault", "search", str(vault), "zebras")
    assert scode == 0 and "Traceback" not in serr
    assert snapshot(vault) == before, "a command changed a file in the vault"
    return code, json.loads(out)


def warnings_of(report: dict) -> dict[str, str]:
    return {w["path"]: w["message"] for w in report["warnings"]}


def test_broken_yaml_frontmatter(capsys, vault):
    (vault / "Bad.md").write_text(
        "---\ntags: [oops\n---\nLinks to [[Good]] and [[Home]]\n", encoding="utf-8"
    )
    code, r = check(capsys, vault)
    assert "not valid YAML" in warnings_of(r)["Bad.md"]
    assert r["counts"]["links"] == 3  # the note was still read, as body
    assert "Bad.md" in r["orphans"]


def test_non_utf8_text(capsys, vault):
    (vault / "Latin.md").write_bytes("Café con [[Good]] ñ".encode("latin-1"))
    code, r = check(capsys, vault)
    assert "not valid UTF-8" in warnings_of(r)["Latin.md"]
    assert r["counts"]["links"] == 2


def test_utf16_text_with_bom(capsys, vault):
    (vault / "Wide.md").write_bytes(b"\xff\xfe" + "See [[Good]]".encode("utf-16-le"))
    code, r = check(capsys, vault)
    assert "UTF-16" in warnings_of(r)["Wide.md"]
    assert r["counts"]["links"] == 2


def test_binary_file_with_md_name(capsys, vault):
    (vault / "Blob.md").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(range(256)))
    code, r = check(capsys, vault)
    assert code == 1
    assert r["unreadable"] == [{"path": "Blob.md", "reason": "binary file (contains NUL bytes)"}]
    # a binary attachment is simply a file
    (vault / "Blob.md").rename(vault / "blob.bin")
    code, r = check(capsys, vault)
    assert r["unreadable"] == [] and r["counts"]["files"] == 1


def test_zero_byte_note(capsys, vault):
    (vault / "Empty.md").write_bytes(b"")
    (vault / "Home.md").write_text("- [[Good]]\n- [[Empty]]\n", encoding="utf-8")
    code, r = check(capsys, vault)
    assert code == 0, r
    assert r["counts"]["notes"] == 3 and r["warnings"] == []


@posix_only
def test_symlink_loops(capsys, vault):
    os.symlink("b.md", vault / "a.md")
    os.symlink("a.md", vault / "b.md")
    (vault / "sub").mkdir()
    os.symlink("..", vault / "sub" / "up")  # a folder loop
    os.symlink("missing.md", vault / "dangling.md")
    code, r = check(capsys, vault)
    w = warnings_of(r)
    assert w["a.md"] == "symlink loop: skipped" and w["b.md"] == "symlink loop: skipped"
    assert w["sub/up"] == "symlink to a folder: not followed"
    assert w["dangling.md"] == "broken symlink: skipped"
    assert r["counts"]["notes"] == 2


@posix_only
def test_symlinks_out_of_the_vault_are_not_followed(capsys, vault, tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.md").write_text("zebras outside the vault [[Good]]", encoding="utf-8")
    os.symlink(outside / "secret.md", vault / "Leak.md")
    os.symlink(outside, vault / "leakdir")
    os.symlink(vault / "Good.md", vault / "Alias.md")  # inside: a linkable file, not read
    (vault / "Home.md").write_text("- [[Good]]\n- [[Alias]]\n- [[Leak]]\n", encoding="utf-8")
    code, r = check(capsys, vault)
    w = warnings_of(r)
    assert w["Leak.md"] == w["leakdir"] == "symlink points outside the vault: not followed"
    assert [b["target"] for b in r["broken_links"]] == ["Leak"]
    _, out, _ = run(capsys, "vault", "search", str(vault), "outside", "--json")
    assert json.loads(out)["results"] == []


def test_file_over_the_size_cap(capsys, vault, home):
    (home / "config").mkdir(parents=True)
    (home / "config" / "config.toml").write_text("[vault]\nmax_file_mb = 0.01\n")
    (vault / "Huge.md").write_text("[[Good]] zebras " * 2000, encoding="utf-8")
    (vault / "Home.md").write_text("- [[Good]]\n- [[Huge]]\n", encoding="utf-8")
    code, r = check(capsys, vault)
    assert "larger than the size cap of 10.2 KB (31.2 KB)" in warnings_of(r)["Huge.md"]
    assert r["broken_links"] == [] and r["counts"]["links"] == 2  # Huge.md was not read
    _, out, _ = run(capsys, "vault", "search", str(vault), "zebras", "--json")
    assert [h["path"] for h in json.loads(out)["results"]] == ["Good.md"]


def test_vault_api_size_cap_and_no_cap(tmp_path):
    (tmp_path / "n.md").write_text("x" * 5000)
    assert Vault(tmp_path, max_file_bytes=1000).scan().too_large.keys() == {"n.md"}
    assert Vault(tmp_path, max_file_bytes=0).scan().notes.keys() == {"n.md"}  # 0: no cap


def _check_as_nobody(vault: Path, data: Path) -> dict:
    """Run the check in a forked child that dropped root, so permissions apply."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - child
        try:
            os.close(r)
            os.setgid(65534)
            os.setuid(65534)
            rep = run_check(Vault(vault), data).to_dict()
        except BaseException:
            rep = {"error": traceback.format_exc()}
        try:
            os.write(w, json.dumps(rep).encode())
        finally:
            os._exit(0)
    os.close(w)
    chunks = []
    while chunk := os.read(r, 65536):
        chunks.append(chunk)
    os.close(r)
    os.waitpid(pid, 0)
    rep = json.loads(b"".join(chunks))
    assert "error" not in rep, rep.get("error")
    return rep


@posix_only
def test_unreadable_file_and_folder(capsys, tmp_path):
    base = Path(tempfile.mkdtemp(prefix="vault-perm-"))
    try:
        os.chmod(base, 0o755)
        v = base / "vault"
        v.mkdir()
        (v / "Home.md").write_text("- [[Locked]]\n- [[Open]]\n")
        (v / "Open.md").write_text("[[Home]]")
        (v / "Locked.md").write_text("secret")
        (v / "closed").mkdir()
        (v / "closed" / "Inside.md").write_text("x")
        os.chmod(v / "Locked.md", 0)
        os.chmod(v / "closed", 0)
        data = base / "data"
        data.mkdir()
        os.chmod(data, 0o777)
        if os.geteuid() == 0:
            rep = _check_as_nobody(v, data)
        else:
            rep = run_check(Vault(v), data).to_dict()
        reasons = {u["path"]: u["reason"] for u in rep["unreadable"]}
        assert (
            reasons["Locked.md"].startswith("cannot open") and "ermission" in reasons["Locked.md"]
        )
        assert reasons["closed"].startswith("cannot list folder")
        assert rep["ok"] is False
        assert rep["broken_links"] == []  # Locked.md exists, so links to it are fine
    finally:
        for p in (base / "vault" / "Locked.md", base / "vault" / "closed"):
            if p.exists():
                os.chmod(p, 0o755)
        shutil.rmtree(base, ignore_errors=True)


ODD_NAMES = [
    unicodedata.normalize("NFD", "Café crème"),  # macOS-style decomposed
    "日本語のノート",
    "emoji 🚀 rocket",
    "עברית right-to-left",
    "zero\u200bwidth",
    "double  spaced name",
    "semi;colon&amp 100%",
]


def test_odd_unicode_names(capsys, vault):
    for name in ODD_NAMES:
        (vault / f"{name}.md").write_text(f"# {name}\n[[Good]]\n", encoding="utf-8")
    links = "".join(f"- [[{unicodedata.normalize('NFC', n)}]]\n" for n in ODD_NAMES)
    (vault / "Home.md").write_text("- [[Good]]\n" + links, encoding="utf-8")
    code, r = check(capsys, vault)
    assert r["broken_links"] == [], r["broken_links"]  # NFC links reach the NFD file
    assert r["orphans"] == [] and r["not_in_home"] == []
    assert code == 0
    _, out, _ = run(capsys, "vault", "search", str(vault), "rocket")
    assert out.startswith("emoji 🚀 rocket.md:1:")


@pytest.mark.skipif(sys.platform != "linux", reason="only Linux file systems accept such names")
def test_name_that_is_not_utf8(capsys, vault):
    raw = os.path.join(os.fsencode(vault), b"bad-\xff\xfe-name.md")
    with open(raw, "wb") as fh:
        fh.write(b"[[Good]]")
    os.mkdir(os.path.join(os.fsencode(vault), b"dir-\xff"))
    code, r = check(capsys, vault)
    w = warnings_of(r)
    assert w["bad-\ufffd\ufffd-name.md"] == "name is not valid UTF-8: skipped"
    assert w["dir-\ufffd"] == "name is not valid UTF-8: skipped"


@posix_only
def test_fifo_and_other_special_files_do_not_hang(capsys, vault):
    os.mkfifo(vault / "Pipe.md")
    code, r = check(capsys, vault)
    assert warnings_of(r)["Pipe.md"] == "not a regular file: skipped"


def test_a_folder_named_like_a_note(capsys, vault):
    (vault / "Folder.md").mkdir()
    (vault / "Folder.md" / "Inner.md").write_text("[[Good]]")
    (vault / "Home.md").write_text("- [[Good]]\n- [[Inner]]\n", encoding="utf-8")
    code, r = check(capsys, vault)
    assert code == 0 and r["counts"]["notes"] == 3


def test_hidden_and_app_folders_are_ignored(capsys, vault):
    for d in (".obsidian", ".trash", ".companion/dreams", ".git"):
        (vault / d).mkdir(parents=True)
        (vault / d / "x.md").write_text("[[Nowhere]]")
    (vault / ".hidden.md").write_text("[[Nowhere]]")
    code, r = check(capsys, vault)
    assert code == 0 and r["counts"]["notes"] == 2
