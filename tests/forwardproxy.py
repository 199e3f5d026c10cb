"""A small forward proxy on loopback, as a corporate network puts between a device and its relay.

It speaks both forms a client uses: CONNECT host:port (a tunnel, for https://) and a request in
absolute form (`GET http://host:port/path`, for http://). Every target it is asked for is
recorded, and mapped through `routes` to a loopback address, so a test can use a host name that
only the proxy knows. `credentials` makes it demand Proxy-Authorization (407 without it).
"""

from __future__ import annotations

import base64
import contextlib
import select
import socket
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field


@dataclass
class ForwardProxy:
    routes: dict[str, tuple[str, int]]  # "host:port" the client asks for -> where it really is
    credentials: tuple[str, str] | None = None
    seen: list[tuple[str, str]] = field(default_factory=list)  # (method, "host:port")
    port: int = 0

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def _authorized(self, head: bytes) -> bool:
        if self.credentials is None:
            return True
        want = base64.b64encode(":".join(self.credentials).encode()).decode()
        for line in head.split(b"\r\n")[1:]:
            name, _, value = line.partition(b":")
            if name.strip().lower() == b"proxy-authorization":
                return value.strip().decode() == f"Basic {want}"
        return False

    def handle(self, client: socket.socket) -> None:
        with client:
            head = b""
            while b"\r\n\r\n" not in head:
                chunk = client.recv(65536)
                if not chunk:
                    return
                head += chunk
            head, _, rest = head.partition(b"\r\n\r\n")
            method, target, version = head.split(b"\r\n", 1)[0].decode().split(" ")
            if method == "CONNECT":
                where = target
            else:  # absolute form: http://host:port/path
                where, _, path = target.removeprefix("http://").partition("/")
            self.seen.append((method, where))
            if not self._authorized(head):
                client.sendall(
                    b"HTTP/1.1 407 Proxy Authentication Required\r\n"
                    b"Proxy-Authenticate: Basic\r\nContent-Length: 0\r\n\r\n"
                )
                return
            dest = self.routes.get(where)
            if dest is None:
                client.sendall(b"HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\n\r\n")
                return
            with socket.create_connection(dest, timeout=10) as upstream:
                if method == "CONNECT":
                    client.sendall(b"HTTP/1.1 200 Connection established\r\n\r\n")
                else:
                    # one request per connection: the upstream answer ends with its close
                    lines = head.split(b"\r\n")[1:]
                    hop = (b"proxy-", b"connection:")
                    kept = [ln for ln in lines if not ln.lower().startswith(hop)]
                    first = f"{method} /{path} {version}".encode()
                    request = b"\r\n".join([first, *kept, b"Connection: close"])
                    upstream.sendall(request + b"\r\n\r\n")
                upstream.sendall(rest)
                _pipe(client, upstream)


def _pipe(a: socket.socket, b: socket.socket) -> None:
    """Copy both ways until either side closes (bounded: each socket has a timeout)."""
    socks = [a, b]
    while True:
        ready, _, _ = select.select(socks, [], [], 10)
        if not ready:
            return
        for s in ready:
            data = s.recv(65536)
            if not data:
                return
            (b if s is a else a).sendall(data)


@contextlib.contextmanager
def forward_proxy(
    routes: dict[str, tuple[str, int]], credentials: tuple[str, str] | None = None
) -> Iterator[ForwardProxy]:
    proxy = ForwardProxy(routes, credentials)
    listener = socket.create_server(("127.0.0.1", 0))
    listener.settimeout(0.2)
    proxy.port = listener.getsockname()[1]
    stop = threading.Event()
    workers: list[threading.Thread] = []

    def serve() -> None:
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
            except TimeoutError:
                continue
            conn.settimeout(10)
            t = threading.Thread(target=proxy.handle, args=(conn,), daemon=True)
            t.start()
            workers.append(t)

    server = threading.Thread(target=serve, daemon=True)
    server.start()
    try:
        yield proxy
    finally:
        stop.set()
        server.join(timeout=5)
        listener.close()
        for t in workers:
            t.join(timeout=5)
