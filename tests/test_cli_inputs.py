"""The command line around the desktop app, given bad input: one line, exit 2, nothing written
(#13, item 10)."""

from __future__ import annotations

import http.server
import os
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import run_companion
from tests.fixtures.dream import snapshot


def one_error_line(stderr: str) -> str:
    lines = stderr.strip().splitlines()
    assert len(lines) == 1, stderr
    assert lines[0].startswith("error: "), stderr
    return lines[0]


# ---- init ------------------------------------------------------------------------------------


def test_init_refuses_the_root_of_the_file_system(companion_home: Path) -> None:
    res = run_companion(
        "init", "/", "--relay", "http://127.0.0.1:9", "--invite", "x", "--device-name", "a",
        "--kind", "human",
    )  # fmt: skip
    assert res.returncode == 2
    assert "root of the file system" in one_error_line(res.stderr)


def test_init_refuses_the_whole_home_folder_and_the_devices_own_folders(
    companion_home: Path, tmp_path: Path
) -> None:
    home = tmp_path / "person"
    home.mkdir()
    args = ["--relay", "http://127.0.0.1:9", "--invite", "x", "--device-name", "a"]
    res = run_companion("init", str(home), *args, env={"HOME": str(home)})
    assert res.returncode == 2 and "home folder" in one_error_line(res.stderr)
    res = run_companion("init", str(companion_home.parent), *args)  # holds COMPANION_HOME
    assert res.returncode == 2 and "secrets" in one_error_line(res.stderr)
    assert not (companion_home / "data" / "sync").exists()


# ---- relay invite ------------------------------------------------------------------------------


def test_relay_invite_refuses_a_folder_with_no_relay(companion_home: Path, tmp_path: Path) -> None:
    typo = tmp_path / "typo"
    res = run_companion("relay", "invite", "--data", str(typo))
    assert res.returncode == 2
    line = one_error_line(res.stderr)
    assert "no relay" in line and "--create" in line and "relay serve" in line
    assert res.stdout == "" and not typo.exists()  # no invite that cannot work, no new relay
    made = run_companion("relay", "invite", "--data", str(typo), "--create")
    assert made.returncode == 0 and made.stdout.strip()
    assert (typo / "relay.db").is_file()
    again = run_companion("relay", "invite", "--data", str(typo))  # now it holds one
    assert again.returncode == 0, again.stderr


# ---- a URL that is not a relay -----------------------------------------------------------------

PAGE = b"<!DOCTYPE html><html><head><title>Welcome to nginx!</title></head><body>hi</body></html>"


class _Web(http.server.BaseHTTPRequestHandler):
    def _page(self, status: int) -> None:
        self.send_response(status)
        self.send_header("Content-Type", "text/html")
        self.send_header("Content-Length", str(len(PAGE)))
        self.end_headers()
        self.wfile.write(PAGE)

    def do_GET(self) -> None:  # noqa: N802 - http.server's name
        self._page(200 if self.path == "/" else 404)

    def do_POST(self) -> None:  # noqa: N802
        self._page(405 if self.path.startswith("/v1/join") else 404)

    def log_message(self, *_: object) -> None:
        pass


@pytest.fixture
def web_server() -> Iterator[str]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Web)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def test_a_web_server_that_is_not_a_relay_is_one_clean_line(
    companion_home: Path, tmp_path: Path, web_server: str
) -> None:
    (companion_home / "config").mkdir(parents=True)
    (companion_home / "config" / "config.toml").write_text('[secrets]\nbackend = "file"\n')
    phrase = tmp_path / "pass.txt"
    phrase.write_text("a long enough passphrase for this test\n")
    phrase.chmod(0o600)
    res = run_companion(
        "init", str(tmp_path / "v"), "--relay", web_server, "--invite", "x", "--device-name",
        "a", "--kind", "human", env={"COMPANION_PASSPHRASE_FILE": str(phrase)},
    )  # fmt: skip
    line = one_error_line(res.stderr)
    assert res.returncode == 1
    assert "<" not in line and "nginx" not in line and "not a relay" in line, line
    assert web_server in line
    doctor = run_companion("doctor", "--relay", web_server)
    relay = next(ln for ln in doctor.stdout.splitlines() if ln.split()[1:2] == ["relay"])
    assert "<" not in relay and "nginx" not in relay, relay


# ---- dream -------------------------------------------------------------------------------------


def test_dream_refuses_a_folder_that_is_not_a_vault(companion_home: Path, tmp_path: Path) -> None:
    folder = tmp_path / "Downloads"
    folder.mkdir()
    (folder / "invoice.pdf").write_bytes(b"%PDF-1.4")
    before = snapshot(folder)
    for args in ([], ["--dry-run"]):
        res = run_companion("dream", str(folder), *args)
        assert res.returncode == 2, res.stdout
        line = one_error_line(res.stderr)
        assert "not a vault" in line and "companion vault init" in line
        assert snapshot(folder) == before and sorted(os.listdir(folder)) == ["invoice.pdf"]


# ---- path errors are one line --------------------------------------------------------------------


@pytest.mark.parametrize(
    "args",
    [
        ("history", "/definitely/not/here", "a.md"),
        ("relay", "serve", "--data", "/etc/passwd", "--port", "0"),
        ("dream", "/etc/passwd"),
        ("init", "/etc/passwd", "--invite", "x"),
        ("doctor", "--vault", "/etc/passwd"),
    ],
)
def test_path_errors_are_one_line(companion_home: Path, args: tuple[str, ...]) -> None:
    res = run_companion(*args)
    assert res.returncode == 2
    line = one_error_line(res.stderr)
    assert "Usage:" not in res.stderr and "Try '" not in res.stderr
    assert any(p in line for p in ("/definitely/not/here", "/etc/passwd")), line


def test_a_wrong_option_still_shows_the_usage(companion_home: Path) -> None:
    res = run_companion("sync", "--no-such-option")
    assert res.returncode == 2 and "Usage:" in res.stderr
