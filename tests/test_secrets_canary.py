"""Canary secrets through every `secrets` command: they may appear only where `get` prints them.

Checked: stdout and stderr (with -vv debug logging), the log file, the scan state, JSON output,
error messages, and every other file the product writes under its home. The store itself (the
owner-only secrets file, or the keyring) is where they belong.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import run_companion
from tests.keyring_service import KeyringService, start_keyring_service


@pytest.fixture(scope="module")
def keyring_service(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KeyringService]:
    """A private Secret Service (gnome-keyring on its own D-Bus); skips if not installed."""
    yield from start_keyring_service(tmp_path_factory)


# fake values in three shapes: one the log redactor knows (ghp_), two it does not
CANARY_GH = "ghp_" + "C4n4ryT0k3nZ9x8w7v6u5t4s3r2q1p0o9n8m"
CANARY_PW = "Canary-Pa55w0rd-7Hq2"
CANARY_AWS = "Wq8CnryAwsK3yx9Lm2Nb7Vc4Zp1Kd6FgHj5Tr0Ye"  # 40 chars, AWS secret-key shaped
CANARIES = (CANARY_GH, CANARY_PW, CANARY_AWS)


def _vault(root: Path) -> Path:
    vault = root / "vault"
    (vault / "journal").mkdir(parents=True)
    (vault / "journal" / "2024-11-02.md").write_text(
        "# 2024-11-02\n\n## Hecho\n"
        f"- Token del bot de releases: {CANARY_GH}\n"
        "```bash\n"
        f"export DB_PASSWORD={CANARY_PW}\n"
        f"aws_secret_access_key = {CANARY_AWS}\n"
        "```\n",
        encoding="utf-8",
    )
    return vault


def _assert_clean(text: str, where: str) -> None:
    for canary in CANARIES:
        assert canary not in text, f"canary {canary[:4]}... leaked into {where}"


def _assert_home_clean(home: Path, allowed: set[Path]) -> None:
    for p in home.rglob("*"):
        if p.is_file() and p not in allowed:
            _assert_clean(p.read_bytes().decode("utf-8", "replace"), str(p))


def _run_everything(env: dict[str, str] | None, vault: Path) -> None:
    def run(*args: str, **kw: str) -> tuple[int, str]:
        r = run_companion("-vv", "secrets", *args, env=env, **kw)
        _assert_clean(r.stdout, f"stdout of {args}")
        _assert_clean(r.stderr, f"stderr of {args}")
        return r.returncode, r.stdout

    code, out = run("scan", str(vault))
    assert code == 1 and out.count("journal/2024-11-02.md:") == 3
    code, out = run("scan", str(vault), "--json")
    assert code == 1
    doc = json.loads(out)
    assert {f["kind"] for f in doc["findings"]} == {
        "github-token",
        "secret-assignment",
        "aws-secret-access-key",
    }
    # error paths: several names, a clash, a bad line
    assert run("move", str(vault), "journal/2024-11-02.md:4", "--name", "bad name")[0] == 2
    assert run("move", str(vault), "journal/2024-11-02.md:1", "--name", "x")[0] == 2
    assert run("move", str(vault), "journal/2024-11-02.md:4", "--name", "release-bot")[0] == 0
    assert run("scan", str(vault))[0] == 1
    assert run("move", str(vault), "journal/2024-11-02.md:6", "--name", "release-bot")[0] == 1
    assert run("move", str(vault), "journal/2024-11-02.md:6", "--name", "db-password")[0] == 0
    assert run("move", str(vault), "journal/2024-11-02.md:7", "--name", "aws-ci")[0] == 0
    assert run("scan", str(vault), "--json")[0] == 0
    assert run("set", "copy-of-bot", input=CANARY_GH + "\n")[0] == 0
    code, out = run("list")
    assert out.split() == ["aws-ci", "copy-of-bot", "db-password", "release-bot"]
    assert run("list", "--json")[0] == 0
    assert run("delete", "copy-of-bot")[0] == 0
    # `get` is the one command whose job is to print a secret
    for name, value in (
        ("release-bot", CANARY_GH),
        ("db-password", CANARY_PW),
        ("aws-ci", CANARY_AWS),
    ):
        r = run_companion("-vv", "secrets", "get", f"keyring:{name}", env=env)
        assert r.returncode == 0 and r.stdout == value + "\n"
        _assert_clean(r.stderr, "stderr of get")
    note = (vault / "journal" / "2024-11-02.md").read_text(encoding="utf-8")
    _assert_clean(note, "the note after the moves")
    assert "keyring:release-bot" in note and "keyring:db-password" in note


def test_canaries_with_the_file_backend(tmp_path: Path, companion_home: Path) -> None:
    (companion_home / "config").mkdir(parents=True)
    (companion_home / "config" / "config.toml").write_text('[secrets]\nbackend = "file"\n')
    vault = _vault(tmp_path)
    _run_everything(None, vault)
    secrets_file = companion_home / "config" / "secrets.toml"
    assert CANARY_PW in secrets_file.read_text()  # the store is where it belongs
    log_file = companion_home / "log" / "companion.log"
    assert log_file.exists() and "moved a" in log_file.read_text()
    _assert_home_clean(companion_home, allowed={secrets_file})


def test_canaries_with_a_real_keyring(keyring_service: KeyringService, tmp_path: Path) -> None:
    home = tmp_path / "home"
    env = dict(keyring_service.env, COMPANION_HOME=str(home))
    vault = _vault(tmp_path)
    _run_everything(env, vault)
    assert (home / "log" / "companion.log").exists()
    _assert_home_clean(home, allowed=set())  # nothing under the product's home holds a secret


@pytest.mark.parametrize("canary", CANARIES)
def test_in_process_logging_of_findings_is_masked(canary: str, tmp_path: Path, caplog) -> None:
    from companion.secrets.detect import scan_text

    text = f"token: {canary}\nexport DB_PASSWORD={canary}\naws_secret_access_key={canary}\n"
    findings = scan_text(text, "n.md")
    assert findings
    for f in findings:
        _assert_clean(repr(f) + str(f) + json.dumps(f.to_dict()), "a Finding's text forms")
