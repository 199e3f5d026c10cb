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


def test_the_log_file_is_opened_by_the_first_record_it_takes(tmp_path: Path) -> None:
    """A command that logs nothing at the file's level neither creates the file nor imports
    `logging.handlers` (~8 ms of a quiet `companion sync`); the first record does both, and
    rotation still works. Run in a fresh interpreter: this one imported everything already."""
    import subprocess
    import sys

    script = f"""
import logging, sys
from pathlib import Path
from companion.logs import get_logger, setup_logging, LOG_MAX_BYTES
log_dir = Path({str(tmp_path / "log")!r})
setup_logging(log_dir, verbose=0)
log = get_logger("t")
log.debug("only for -v")
assert "logging.handlers" not in sys.modules, "imported before any record"
assert not log_dir.exists(), "created before any record"
log.info("first line")
for i in range(LOG_MAX_BYTES // 1000 + 10):
    log.info("x" * 1000)
logging.shutdown()
"""
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    files = sorted(p.name for p in (tmp_path / "log").iterdir())
    assert files == ["companion.log", "companion.log.1"]
    assert "INFO companion.t: first line" in (tmp_path / "log" / "companion.log.1").read_text()
    assert "only for -v" not in (tmp_path / "log" / "companion.log.1").read_text()


def test_a_log_folder_that_cannot_be_made_is_given_up_quietly(tmp_path: Path, capsys) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("a file where the log folder should be\n")
    setup_logging(blocker / "log", verbose=0)
    get_logger("t").info("goes nowhere")
    get_logger("t").warning("still on stderr")
    assert "WARNING: still on stderr" in capsys.readouterr().err
    setup_logging(tmp_path / "log2", verbose=0)  # the next set-up closes the old handlers
