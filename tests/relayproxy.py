"""A small HTTP proxy on loopback in front of one or more real relays, for tests.

It stands for what sits between devices and relays in production (a reverse proxy or a load
balancer): requests go round-robin to the upstreams (one upstream: plain forwarding), and the
proxy can be told to answer every request itself for a while with a status and a Retry-After
(a rate limit, a relay being restarted behind the balancer). Bodies are buffered, which is fine
for tests; long-polls simply wait in their handler thread.
"""

from __future__ import annotations

import http.server
import itertools
import threading
from collections.abc import Sequence

import httpx

_HOP = {"connection", "keep-alive", "transfer-encoding", "te", "trailer", "upgrade", "host",
        "content-length", "proxy-connection"}  # fmt: skip


class RelayProxy:
    def __init__(self, upstreams: str | Sequence[str]) -> None:
        self.upstreams = [upstreams] if isinstance(upstreams, str) else list(upstreams)
        self._next = itertools.cycle(range(len(self.upstreams)))
        self._lock = threading.Lock()
        self._refuse: tuple[int, int] | None = None  # (status, retry_after)
        self.refused = 0
        self.forwarded = [0] * len(self.upstreams)
        self._client = httpx.Client(timeout=httpx.Timeout(120.0, connect=5.0))
        proxy = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: object) -> None:
                pass

            def _handle(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                refuse, upstream = proxy._route()
                if refuse is not None:
                    status, retry = refuse
                    payload = b'{"error": "rate_limited", "message": "slow down (test proxy)"}'
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Retry-After", str(retry))
                    self.send_header("Content-Length", str(len(payload)))
                    self.end_headers()
                    self.wfile.write(payload)
                    return
                headers = {k: v for k, v in self.headers.items() if k.lower() not in _HOP}
                try:
                    resp = proxy._client.request(
                        self.command, upstream + self.path, headers=headers, content=body
                    )
                except httpx.HTTPError:
                    self.send_response(502)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                data = resp.content
                self.send_response(resp.status_code)
                for k, v in resp.headers.items():
                    if k.lower() not in _HOP and k.lower() != "content-encoding":
                        self.send_header(k, v)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            do_GET = do_POST = do_PUT = do_DELETE = _handle  # noqa: N815

        self._server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()

    def _route(self) -> tuple[tuple[int, int] | None, str]:
        with self._lock:
            if self._refuse is not None:
                self.refused += 1
                return self._refuse, ""
            i = next(self._next)
            self.forwarded[i] += 1
            return None, self.upstreams[i]

    def refuse(self, status: int = 429, retry_after: int = 1) -> None:
        """Answer every request with `status` and Retry-After until `allow()`."""
        with self._lock:
            self._refuse = (status, retry_after)

    def allow(self) -> None:
        with self._lock:
            self._refuse = None

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._client.close()

    def __enter__(self) -> RelayProxy:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
