"""Logging: a rotating file under the log dir, stderr with -v, and a redaction filter.

Every record passes through `Redactor` before any handler formats it: values registered with
`register_secret` (passphrases, tokens, keys the process has handled) and strings shaped like
well-known credentials are replaced by a mask, so no secret reaches a log line.
"""

from __future__ import annotations

import logging
import re
import threading
from pathlib import Path

LOGGER_NAME = "companion"

# High-signal credential shapes; the secret guard (companion.secrets) has the full detector.
_PATTERNS = [
    re.compile(r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b"),
    re.compile(r"\bgh[pousr]_[A-Za-z0-9]{36,}\b"),
    re.compile(r"\bglpat-[A-Za-z0-9_\-]{20,}\b"),
    re.compile(r"\bsk-(?:ant-|proj-)?[A-Za-z0-9_\-]{20,}\b"),
    re.compile(r"\bxox[abposr]-[A-Za-z0-9-]{10,}\b"),
    re.compile(r"\beyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}\b"),
    re.compile(r"(?i)(bearer\s+)[A-Za-z0-9._~+/=\-]{16,}"),
    re.compile(r"(?i)(://[^/\s:@]+:)[^@\s/]+(@)"),
    re.compile(r"-----BEGIN [A-Z ]*PRIVATE KEY-----[\s\S]*?(?:-----END [A-Z ]*PRIVATE KEY-----|$)"),
]
MASK = "[REDACTED]"

_lock = threading.Lock()
_secrets: set[str] = set()


def register_secret(value: str | bytes | None) -> None:
    """Remember a secret value this process handles so it is masked in every log line."""
    if not value:
        return
    text = value.decode("utf-8", "replace") if isinstance(value, bytes) else value
    if len(text) >= 6:
        with _lock:
            _secrets.add(text)


def redact(text: str) -> str:
    """Mask registered secrets and credential-shaped strings in `text`."""
    with _lock:
        known = sorted(_secrets, key=len, reverse=True)
    for s in known:
        if s in text:
            text = text.replace(s, MASK)
    for pat in _PATTERNS:
        if pat.groups == 2:
            text = pat.sub(lambda m: m.group(1) + MASK + m.group(2), text)
        elif pat.groups == 1:
            text = pat.sub(lambda m: m.group(1) + MASK, text)
        else:
            text = pat.sub(MASK, text)
    return text


class Redactor(logging.Filter):
    """Rewrites each record's final message with secrets masked (args included)."""

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            msg = record.getMessage()
        except Exception:  # a bad format string must not hide the record
            msg = str(record.msg)
        record.msg = redact(msg)
        record.args = None
        if record.exc_info and record.exc_info[1] is not None:
            # format the traceback now so it can be redacted too
            record.exc_text = redact(logging.Formatter().formatException(record.exc_info))
            record.exc_info = None
        return True


LOG_MAX_BYTES = 2_000_000
LOG_BACKUPS = 5


class FileOnFirstRecord(logging.Handler):
    """The rotating log file (`companion.log` in `log_dir`), opened at the first record that
    reaches it. Most one-shot commands log nothing at INFO, and `logging.handlers` alone
    (with the socket, pickle and queue modules it imports) costs a quiet `companion sync` ~8 ms
    of its 150 ms. A folder that cannot be written is given up on quietly, as before: the log
    must never stop the product."""

    def __init__(self, log_dir: Path, level: int) -> None:
        super().__init__(level)
        self.log_dir = log_dir
        self._file: logging.Handler | None = None
        self._unusable = False

    def emit(self, record: logging.LogRecord) -> None:
        if self._file is None:
            if self._unusable:
                return
            import logging.handlers

            try:
                self.log_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
                self._file = logging.handlers.RotatingFileHandler(
                    self.log_dir / "companion.log",
                    maxBytes=LOG_MAX_BYTES,
                    backupCount=LOG_BACKUPS,
                    encoding="utf-8",
                )
            except OSError:
                self._unusable = True
                return
            self._file.setFormatter(self.formatter)
        self._file.emit(record)  # under this handler's lock, after its filters

    def flush(self) -> None:
        self.acquire()
        try:
            if self._file is not None:
                self._file.flush()
        finally:
            self.release()

    def close(self) -> None:
        self.acquire()
        try:
            if self._file is not None:
                self._file.close()
                self._file = None
        finally:
            self.release()
        super().close()


def setup_logging(log_dir: Path, verbose: int = 0) -> logging.Logger:
    """Configure the 'companion' logger: rotating file always, stderr when verbose."""
    logger = logging.getLogger(LOGGER_NAME)
    logger.setLevel(logging.DEBUG)
    for h in list(logger.handlers):
        logger.removeHandler(h)
        h.close()
    fmt = logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s")
    fh = FileOnFirstRecord(log_dir, logging.DEBUG if verbose else logging.INFO)
    fh.setFormatter(fmt)
    fh.addFilter(Redactor())
    logger.addHandler(fh)
    sh = logging.StreamHandler()
    sh.setLevel(
        logging.DEBUG if verbose >= 2 else logging.INFO if verbose == 1 else logging.WARNING
    )
    sh.setFormatter(logging.Formatter("%(levelname)s: %(message)s"))
    sh.addFilter(Redactor())
    logger.addHandler(sh)
    logger.propagate = False
    return logger


def get_logger(name: str) -> logging.Logger:
    return logging.getLogger(f"{LOGGER_NAME}.{name}")
