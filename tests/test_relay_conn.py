"""Log de-duplication and the connection caps on their own (the end-to-end storm is in
test_relay_slowloris.py)."""

from __future__ import annotations

import io
import logging

from companion.logs import Redactor, register_secret
from companion.relay.conn import ConnectionGuard, default_max_connections
from companion.relay.logdedup import DedupFilter


class Clock:
    def __init__(self) -> None:
        self.t = 0.0

    def __call__(self) -> float:
        return self.t


def make_logger(name: str, clock: Clock) -> tuple[logging.Logger, io.StringIO]:
    out = io.StringIO()
    handler = logging.StreamHandler(out)
    handler.setFormatter(logging.Formatter("%(levelname)s %(message)s"))
    handler.addFilter(Redactor())
    handler.filters.insert(0, DedupFilter(handler, window=60, clock=clock))
    logger = logging.getLogger(name)
    logger.handlers[:] = [handler]
    logger.propagate = False
    logger.setLevel(logging.DEBUG)
    return logger, out


def test_a_storm_of_identical_errors_is_one_line_and_a_count() -> None:
    clock = Clock()
    logger, out = make_logger("test.dedup.storm", clock)
    for i in range(10_000):
        try:
            raise OSError(24, "Too many open files")
        except OSError:
            logger.exception("socket.accept() out of system resource (fd %d)", i)
        logger.warning("dropped a connection from %s: %s", f"10.0.0.{i % 250}", "idle timeout")
        clock.t += 0.001
    logger.info("something else")  # a different template passes at once
    clock.t += 61
    logger.info("after the window")  # and the summaries of the storm come out
    lines = out.getvalue().splitlines()
    text = out.getvalue()
    assert text.count("Traceback") == 1
    assert text.count("dropped a connection") == 1 + 1  # the first, then its summary
    assert "repeated 9999 more time(s)" in text
    assert "something else" in text and "after the window" in text
    assert len(lines) < 20, lines


def test_the_first_line_of_a_run_is_still_redacted() -> None:
    clock = Clock()
    logger, out = make_logger("test.dedup.redact", clock)
    register_secret("s3cret-token-value")
    for _ in range(3):
        logger.error("refused %s", "s3cret-token-value")
    clock.t += 61
    logger.error("refused %s", "s3cret-token-value")
    assert "s3cret-token-value" not in out.getvalue()
    assert "repeated 2 more time(s)" in out.getvalue()


def test_connection_caps() -> None:
    g = ConnectionGuard(max_connections=5, max_per_address=2)
    assert g.admit("10.0.0.1") is None and g.admit("10.0.0.1") is None
    assert g.admit("10.0.0.1") == "per-address connection limit"
    for a in ("10.0.0.2", "10.0.0.3", "10.0.0.4"):
        assert g.admit(a) is None
    assert g.admit("10.0.0.5") == "connection limit"
    g.release("10.0.0.1")
    assert g.admit("10.0.0.1") is None
    proxy = ConnectionGuard.from_trusted("127.0.0.1", max_connections=100, max_per_address=2)
    assert all(proxy.admit("127.0.0.1") is None for _ in range(50))  # a proxy is exempt
    assert default_max_connections(1024) < 1024 // 2
    assert default_max_connections(65536) >= 8000
