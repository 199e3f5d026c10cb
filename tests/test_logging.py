"""Logging: rotating file, stderr with -v, and no secret ever reaching a log line."""

from __future__ import annotations

import logging
from pathlib import Path

from companion.logs import get_logger, redact, register_secret, setup_logging
from tests.conftest import run_companion

CANARY_TOKEN = "ghp_" + "Zq8" * 12  # fake GitHub token shape, 40 chars


def test_registered_secret_is_masked_in_file_and_stderr(tmp_path: Path, capsys) -> None:
    setup_logging(tmp_path / "log", verbose=2)
    passphrase = "correct horse battery staple 1917"
    register_secret(passphrase)
    log = get_logger("test")
    log.info("unlocking with %s", passphrase)
    log.warning("token=%s", CANARY_TOKEN)
    try:
        raise ValueError(f"bad passphrase {passphrase}")
    except ValueError:
        log.exception("failed")
    for h in logging.getLogger("companion").handlers:
        h.flush()
    text = (tmp_path / "log" / "companion.log").read_text()
    err = capsys.readouterr().err
    for out in (text, err):
        assert passphrase not in out
        assert CANARY_TOKEN not in out
        assert "[REDACTED]" in out
    assert "unlocking with" in text and "failed" in text


def test_redact_credential_shapes() -> None:
    samples = [
        "AKIAABCDEFGHIJKLMNOP",
        "sk-ant-api03-" + "a" * 40,
        "xoxb-123456789012-abcdefghij",
        "https://user:hunter2secret@example.org/path",
        "Authorization: Bearer abcdefghijklmnopqrstuvwxyz012345",
    ]
    for s in samples:
        out = redact(f"value {s} end")
        assert "[REDACTED]" in out
    assert "hunter2secret" not in redact("https://user:hunter2secret@example.org/")
    assert redact("nothing secret here") == "nothing secret here"


def test_verbose_flag_logs_to_stderr_and_file(companion_home: Path) -> None:
    quiet = run_companion("config", "path")
    assert quiet.returncode == 0 and "DEBUG" not in quiet.stderr
    res = run_companion("-vv", "config", "path")
    assert res.returncode == 0
    assert "DEBUG: companion" in res.stderr
    log = companion_home / "log" / "companion.log"
    assert "companion 0.1.0: config" in log.read_text()
