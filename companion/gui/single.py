"""One tray app per user and COMPANION_HOME.

A `QLockFile` in the state folder decides who is first (a crashed owner's stale lock is taken
over); the first instance listens on a `QLocalServer` whose name is derived from the user and
the device folder, and a later start sends it "show" and exits.
"""

from __future__ import annotations

import getpass
import hashlib
import os
from pathlib import Path

from PySide6.QtCore import QLockFile, QObject, Signal
from PySide6.QtNetwork import QLocalServer, QLocalSocket

from companion.logs import get_logger
from companion.paths import DevicePaths

log = get_logger("gui.single")


def server_name(paths: DevicePaths) -> str:
    """A local socket name unique to this user and device folder (no path characters)."""
    try:
        user = getpass.getuser()
    except (KeyError, OSError):
        user = str(os.getuid()) if hasattr(os, "getuid") else "user"
    key = f"{user}\0{paths.config_dir.resolve()}"
    return "vault-companion-" + hashlib.sha256(key.encode("utf-8")).hexdigest()[:20]


class SingleInstance(QObject):
    """`acquire()` True makes this the running instance; it then emits `message` per request."""

    message = Signal(str)

    def __init__(self, name: str, lock_file: Path, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.name = name
        lock_file.parent.mkdir(parents=True, exist_ok=True)
        self.lock = QLockFile(str(lock_file))
        self.lock.setStaleLockTime(0)  # stale only when its process is gone
        self.server: QLocalServer | None = None
        self._buffers: dict[QLocalSocket, bytearray] = {}

    def acquire(self) -> bool:
        if not self.lock.tryLock(200):
            return False
        QLocalServer.removeServer(self.name)  # a socket file left by a crash
        server = QLocalServer(self)
        server.setSocketOptions(QLocalServer.SocketOption.UserAccessOption)
        if not server.listen(self.name):
            log.warning("single-instance server could not listen: %s", server.errorString())
        server.newConnection.connect(self._accept)
        self.server = server
        return True

    def _accept(self) -> None:
        assert self.server is not None
        while self.server.hasPendingConnections():
            sock = self.server.nextPendingConnection()
            self._buffers[sock] = bytearray()
            sock.readyRead.connect(self._on_ready_read)
            sock.disconnected.connect(self._on_disconnected)
            self._read(sock)

    def _on_ready_read(self) -> None:
        sock = self.sender()
        if isinstance(sock, QLocalSocket):
            self._read(sock)

    def _on_disconnected(self) -> None:
        sock = self.sender()
        if isinstance(sock, QLocalSocket):
            self._read(sock)
            self._buffers.pop(sock, None)
            sock.deleteLater()

    def _read(self, sock: QLocalSocket) -> None:
        buffer = self._buffers.get(sock)
        if buffer is None:
            return
        buffer.extend(sock.readAll().data())
        while b"\n" in buffer:
            line, _, rest = bytes(buffer).partition(b"\n")
            buffer[:] = rest
            text = line.decode("utf-8", "replace").strip()
            if text:
                self.message.emit(text)

    def send(self, message: str = "show", timeout_ms: int = 3000) -> bool:
        """Send `message` to the running instance; False if it does not answer."""
        sock = QLocalSocket()
        sock.connectToServer(self.name)
        if not sock.waitForConnected(timeout_ms):
            return False
        sock.write((message + "\n").encode("utf-8"))
        ok = sock.waitForBytesWritten(timeout_ms)
        sock.disconnectFromServer()
        if sock.state() != QLocalSocket.LocalSocketState.UnconnectedState:
            sock.waitForDisconnected(timeout_ms)
        return ok

    def release(self) -> None:
        for sock in list(self._buffers):
            sock.abort()
        self._buffers.clear()
        if self.server is not None:
            self.server.close()
            self.server = None
        self.lock.unlock()
