"""The detector: recall on a corpus of fake credentials, false positives on ordinary notes,
masking, silencing, multi-line keys, and the fast paths the dream and the sync daemon use."""

from __future__ import annotations

import pickle
import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from companion.errors import ConfigError
from companion.secrets import detect
from companion.secrets.detect import (
    Finding,
    compile_allowlist,
    contains_secret,
    mask,
    scan_file,
    scan_text,
    scan_vault,
)

CORPUS = Path(__file__).parent / "corpus" / "secrets"
GH = "ghp_" + "aB3dE5fG7hJ9kL1mN3pQ5rS7tU9vW1xY3zA5"  # fake, GitHub-token shaped


def _expected() -> list[tuple[str, int, set[str]]]:
    rows = []
    for raw in (CORPUS / "positive-expected.tsv").read_text().splitlines():
        if raw.startswith("#") or not raw.strip():
            continue
        name, line, kinds = raw.split("\t")
        rows.append((name, int(line), set(kinds.split("|"))))
    return rows


def test_positive_corpus_recall_at_least_95_percent() -> None:
    expected = _expected()
    assert len(expected) >= 30
    langs = {p.name for p in (CORPUS / "positive").glob("*.md")}
    assert len(langs) >= 10
    found: dict[tuple[str, int], set[str]] = {}
    for p in sorted((CORPUS / "positive").glob("*.md")):
        for f in scan_file(p, display_path=p.name):
            found.setdefault((f.path, f.line), set()).add(f.kind)
    missed = [(n, ln, k) for n, ln, k in expected if not found.get((n, ln), set()) & k]
    recall = 1 - len(missed) / len(expected)
    assert recall >= 0.95, f"recall {recall:.0%}, missed: {missed}"


def test_positive_corpus_reports_nothing_unexpected() -> None:
    expected = {(n, ln) for n, ln, _ in _expected()}
    extra = []
    for p in sorted((CORPUS / "positive").glob("*.md")):
        extra += [
            str(f) for f in scan_file(p, display_path=p.name) if (f.path, f.line) not in expected
        ]
    assert extra == []


def test_negative_corpus_false_positives_at_most_2_percent() -> None:
    notes = sorted((CORPUS / "negative").glob("*.md"))
    assert len(notes) >= 100
    flagged = [str(f) for p in notes for f in scan_file(p, display_path=p.name)]
    noisy = {s.split(":")[0] for s in flagged}
    assert len(noisy) / len(notes) <= 0.02, flagged


def test_negative_corpus_exercises_the_hard_cases() -> None:
    """The corpus must contain what the issue lists, or the FP test proves nothing."""
    text = "\n".join(p.read_text() for p in (CORPUS / "negative").glob("*.md"))
    assert re.search(r"\b[0-9a-f]{40}\b", text)  # git SHAs
    assert re.search(r"\b[0-9a-f]{64}\b", text)  # sha256
    assert re.search(r"\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b", text)
    assert "data:image/png;base64," in text
    assert re.search(r"https://\S+\?\S+=\S+&\S+=", text)
    assert "```" in text and "[[" in text and "|---|" in text
    assert "AKIAIOSFODNN7EXAMPLE" in text and "keyring:github" in text


def test_finding_never_shows_the_secret() -> None:
    (f,) = scan_text(f"token for the bot: {GH}\n", "n.md")
    assert f.kind == "github-token" and f.line == 1 and f.column == 20
    for shown in (repr(f), str(f), str(f.to_dict()), f.masked, f.fingerprint):
        assert GH not in shown
    assert f.masked == "ghp_" + "*" * 16 + "A5"
    assert f.reveal() == GH  # the one accessor, used by move
    assert not hasattr(f, "__dict__")
    assert pickle.loads(pickle.dumps(f)) == f


def test_mask_rules() -> None:
    assert mask("short-pass") == "********"
    assert mask("x" * 15) == "********"
    long = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
    assert mask(long) == "ABCD" + "*" * 16 + "YZ"
    assert "\n" not in mask("-----BEGIN KEY-----\nabc\n-----END KEY-----")


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet=st.characters(blacklist_characters="*"), min_size=1, max_size=200))
def test_mask_never_reveals_more_than_six_characters(secret: str) -> None:
    m = mask(secret)
    assert len(m.replace("*", "")) <= 6
    if len(secret) >= 7:
        assert secret not in m


def test_inline_markers_silence_a_line() -> None:
    lines = [
        f"{GH} <!-- companion:allow-secret -->",
        f"export GITHUB_TOKEN={GH}  # companion:allow-secret",
        f"token = '{GH}'  # pragma: allowlist secret",
    ]
    for line in lines:
        assert scan_text(line + "\n") == [], line
    nextline = f"# pragma: allowlist nextline secret\n{GH}\n{GH}\n"
    assert [f.line for f in scan_text(nextline)] == [3]


def test_config_allowlist() -> None:
    allow = compile_allowlist([r"^ghp_aB3d"])
    assert scan_text(GH, allowlist=allow) == []
    assert len(scan_text(GH, allowlist=compile_allowlist([r"^ghp_zzzz"]))) == 1
    with pytest.raises(ConfigError):
        compile_allowlist(["(unclosed"])


@pytest.mark.parametrize(
    "line",
    [
        "export GITHUB_TOKEN=keyring:github",
        "password: keyring:db-prod",
        '"api_key": "keyring:openai"',
        "DB_PASSWORD=${DB_PASSWORD}",
        "token: <your-token-here>",
        "password = os.environ['DB_PASSWORD']",
        "La clave del éxito es la constancia.",
        "The password is stored in 1Password.",
        "max tokens: 4096",
        "postgres://user:password@localhost:5432/db",
    ],
)
def test_references_placeholders_and_prose_are_not_secrets(line: str) -> None:
    assert scan_text(line) == []


@pytest.mark.parametrize(
    ("line", "kind"),
    [
        ("La contraseña del wifi de invitados es Girasol2024#", "password"),
        ("the wifi password is Blue123Harbor!", "password"),
        ("wifi password: Blue123Harbor!", "secret-assignment"),
        ("export DB_PASSWORD=s3cr3t-Pa55", "secret-assignment"),
        ("redis://:Xk9vB2mQ7wL4pZ8nR3tY@cache:6379/0", "url-password"),
        ("Authorization: Bearer Zm9vYmFyYmF6cXV4MTIzNDU2Nzg5MGFi", "bearer-token"),
    ],
)
def test_spanish_and_english_prose_and_config_lines(line: str, kind: str) -> None:
    assert [f.kind for f in scan_text(line)] == [kind]


def test_private_key_block_reported_once_on_its_begin_line() -> None:
    body = "\n".join("MIIEow" + "Ab9" * 19 + "x" for _ in range(6))
    pem = f"-----BEGIN RSA PRIVATE KEY-----\n{body}\n-----END RSA PRIVATE KEY-----"
    text = f"# keys\n\nold key:\n{pem}\nafter\n"
    (f,) = scan_text(text)
    assert (f.kind, f.line, f.column) == ("private-key", 4, 1)
    start, end = f.span
    assert text[start:end].startswith("-----BEGIN") and text[start:end].endswith("KEY-----")
    # truncated paste: no END line, runs to the blank line
    cut = f"-----BEGIN OPENSSH PRIVATE KEY-----\n{body}\n\nnext paragraph\n"
    (g,) = scan_text(cut)
    assert cut[g.span[0] : g.span[1]].endswith(body.splitlines()[-1])
    # a documentation stub is not a key
    assert scan_text("-----BEGIN RSA PRIVATE KEY-----\n...\n-----END RSA PRIVATE KEY-----\n") == []


def test_crlf_and_bom_keep_line_numbers_and_spans() -> None:
    text = "\ufeff# t\r\nline two\r\n" + f"token: {GH}\r\nend\r\n"
    (f,) = scan_text(text)
    assert f.line == 3
    assert text[f.span[0] : f.span[1]] == GH


def test_detect_secrets_plugins_are_wired_in() -> None:
    square = "sq0csp-" + "q7Xk2Lm9Pz4Rw8Tn1Vb6Hc3Jd5Fg0Sa-Ye_Ui7Ko2Nq"
    (f,) = scan_text(f"square: {square}")
    assert f.detector == "detect-secrets:SquareOAuthDetector" and f.kind == "square-oauth-secret"


def test_contains_secret_fast_path() -> None:
    assert contains_secret(f"a note\nwith {GH}\n")
    assert not contains_secret("a note about tokens and keys: nothing here\n" * 50)
    assert not contains_secret(f"{GH} companion:allow-secret")


def test_scan_file_skips_binary(tmp_path: Path) -> None:
    p = tmp_path / "img.md"
    p.write_bytes(b"\x89PNG\x00\x00" + GH.encode())
    assert scan_file(p) == []


def test_scan_vault_paths_and_folders(tmp_path: Path) -> None:
    for rel in (
        "a.md",
        "sub/b.md",
        ".obsidian/plugins/x/notes.md",
        ".git/c.md",
        ".trash/d.md",
        ".companion/dreams/r.md",
        "img.png",
    ):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(f"x {GH}\n")
    result = scan_vault(tmp_path)
    assert sorted(f.path for f in result.findings) == [".companion/dreams/r.md", "a.md", "sub/b.md"]
    assert all(f.file_sha256 and len(f.file_sha256) == 64 for f in result.findings)


def test_scan_vault_in_worker_processes_matches_sequential(tmp_path: Path, monkeypatch) -> None:
    for i in range(12):
        (tmp_path / f"n{i:02d}.md").write_text(
            f"note {i}\n" + (f"key {GH}\n" if i % 3 == 0 else "")
        )
    monkeypatch.setattr(detect, "_CHUNK", 3)
    seq = scan_vault(tmp_path)
    par = scan_vault(tmp_path, jobs=2)
    assert [(f.path, f.line, f.fingerprint) for f in par.findings] == [
        (f.path, f.line, f.fingerprint) for f in seq.findings
    ]
    assert par.files == seq.files == 12


def test_scan_one_note_is_fast() -> None:
    note = (CORPUS / "negative" / "note-000.md").read_text() * 3
    import time

    t = time.perf_counter()
    for _ in range(20):
        scan_text(note)
    assert (time.perf_counter() - t) / 20 < 0.02


def test_finding_equality_is_by_location_and_fingerprint() -> None:
    a = Finding(
        path="n.md",
        line=1,
        column=1,
        kind="jwt",
        value="v" * 20,
        start=0,
        end=20,
        detector="companion",
    )
    b = Finding(
        path="n.md",
        line=1,
        column=1,
        kind="jwt",
        value="v" * 20,
        start=0,
        end=20,
        detector="companion",
    )
    assert a == b and hash(a) == hash(b)
