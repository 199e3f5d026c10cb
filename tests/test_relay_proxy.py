"""A device behind a forward proxy reaches its relay through it, as the platform's settings say.

The relay and the proxy both run on loopback. The relay is named `relay.vault.test`, a name only
the proxy knows (it maps it to the relay's loopback port): the one stand-in is name resolution,
which refuses that name here, so a client that skips the proxy fails at once instead of asking
a DNS server on the network.
"""

from __future__ import annotations

import os
import socket
import sys

import pytest

from companion.logs import redact
from companion.relay.testing import running_relay, self_signed_cert
from companion.relayclient.client import Record, RelayClient
from companion.relayclient.errors import RelayError, RelayUnreachable
from companion.relayclient.proxy import ProxySettingError, proxy_for
from tests.forwardproxy import forward_proxy

HOST = "relay.vault.test"


@pytest.fixture(autouse=True)
def no_proxy_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test sets the proxy variables it needs, and nothing else names a proxy."""
    for name in list(os.environ):
        if name.lower().endswith("_proxy"):
            monkeypatch.delenv(name)


@pytest.fixture
def names_resolve_locally_only(monkeypatch: pytest.MonkeyPatch) -> None:
    real = socket.getaddrinfo

    def getaddrinfo(host, *args, **kw):  # type: ignore[no-untyped-def]
        if isinstance(host, str) and host.endswith(".vault.test"):
            raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")
        return real(host, *args, **kw)

    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)


def fid(n: int) -> str:
    return f"{n:032x}"


@pytest.mark.parametrize(
    ("env", "url", "expected"),
    [
        ({}, "https://relay.example.org", None),
        (
            {"HTTPS_PROXY": "http://proxy.corp:3128"},
            "https://relay.example.org",
            "http://proxy.corp:3128",
        ),
        (
            {"https_proxy": "http://proxy.corp:3128"},
            "https://relay.example.org",
            "http://proxy.corp:3128",
        ),
        ({"HTTPS_PROXY": "proxy.corp:3128"}, "https://relay.example.org", "http://proxy.corp:3128"),
        ({"HTTP_PROXY": "http://proxy.corp:3128"}, "https://relay.example.org", None),
        (
            {"HTTP_PROXY": "http://proxy.corp:3128"},
            "http://relay.example.org",
            "http://proxy.corp:3128",
        ),
        (
            {"ALL_PROXY": "socks5://proxy.corp:1080"},
            "https://relay.example.org",
            "socks5://proxy.corp:1080",
        ),
        (
            {"HTTPS_PROXY": "http://p:1", "NO_PROXY": "example.org"},
            "https://relay.example.org",
            None,
        ),
        (
            {"HTTPS_PROXY": "http://p:1", "no_proxy": "other.org,relay.example.org"},
            "https://relay.example.org",
            None,
        ),
        (
            {"HTTPS_PROXY": "http://p:1", "NO_PROXY": "other.org"},
            "https://relay.example.org",
            "http://p:1",
        ),
        ({"HTTPS_PROXY": "http://p:1", "NO_PROXY": "*"}, "https://relay.example.org", None),
        ({"HTTPS_PROXY": "http://p:1"}, "https://127.0.0.1:8443", None),
        ({"HTTPS_PROXY": "http://p:1"}, "http://localhost:8080", None),
        ({"HTTPS_PROXY": "http://p:1"}, "https://[::1]:8443", None),
        ({"HTTPS_PROXY": "http://p:1"}, "http://[::ffff:127.0.0.1]:8080", None),
        (
            {"HTTPS_PROXY": "http://user:pa55word@proxy.corp:3128"},
            "https://relay.example.org",
            "http://proxy.corp:3128",
        ),
    ],
)
def test_which_proxy_the_settings_name(monkeypatch, env, url, expected):
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    choice = proxy_for(url)
    assert (choice.shown if choice else None) == expected
    if choice is not None and "pa55word" in choice.url:
        assert "pa55word" not in choice.shown
        assert "pa55word" not in redact("a log line naming the bare password pa55word")


@pytest.mark.parametrize(
    "setting", ["ftp://user:pa55word@proxy.corp:21", "http://user:pa55word@:3128"]
)
def test_an_unusable_proxy_setting_is_a_clear_error_without_its_password(monkeypatch, setting):
    monkeypatch.setenv("HTTPS_PROXY", setting)
    with pytest.raises(ProxySettingError) as err:
        RelayClient("https://relay.example.org")
    assert "proxy" in str(err.value) and "pa55word" not in str(err.value)


def test_a_socks_proxy_without_socksio_says_what_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "socksio", None)  # as when httpx[socks] is not installed
    monkeypatch.setenv("ALL_PROXY", "socks5://user:pa55word@127.0.0.1:1080")
    with pytest.raises(ProxySettingError, match=r"socksio.*httpx\[socks\]") as err:
        RelayClient("https://relay.example.org")
    assert "pa55word" not in str(err.value)


def test_plain_http_relay_through_the_proxy(tmp_path, monkeypatch, names_resolve_locally_only):
    with running_relay(tmp_path / "relay") as relay:
        port = int(relay.url.rsplit(":", 1)[1])
        target = f"{HOST}:{port}"
        with forward_proxy({target: ("127.0.0.1", port)}) as proxy:
            monkeypatch.setenv("HTTP_PROXY", proxy.url)
            with RelayClient(f"http://{target}", insecure_http=True, timeout=10) as c:
                assert c.proxy is not None and c.proxy.shown == proxy.url
                assert c.health()["status"] == "ok"
                c.join(relay.invite(new_vault=True, kind="human"), "laptop", "human")
                assert c.commit([Record(fid(1), 1, 0, b"through the proxy")]).ok
                assert [r.sealed for r in c.changes(0).records] == [b"through the proxy"]
            assert proxy.seen and all(where == target for _, where in proxy.seen)
            assert {method for method, _ in proxy.seen} >= {"GET", "POST"}


def test_https_relay_through_a_connect_tunnel(tmp_path, monkeypatch, names_resolve_locally_only):
    certfile, keyfile = self_signed_cert(tmp_path, HOST)
    with running_relay(
        tmp_path / "relay", ssl_certfile=str(certfile), ssl_keyfile=str(keyfile)
    ) as relay:
        port = int(relay.url.rsplit(":", 1)[1])
        target = f"{HOST}:{port}"
        with forward_proxy({target: ("127.0.0.1", port)}) as proxy:
            monkeypatch.setenv("HTTPS_PROXY", proxy.url)
            with RelayClient(f"https://{target}", verify=str(certfile), timeout=10) as c:
                c.join(relay.invite(new_vault=True, kind="human"), "laptop", "human")
                assert c.commit([Record(fid(1), 1, 0, b"tunnelled")]).ok
            assert proxy.seen and set(proxy.seen) == {("CONNECT", target)}  # the rest is TLS


def test_proxy_credentials_are_sent_and_never_shown(
    tmp_path, monkeypatch, names_resolve_locally_only
):
    with running_relay(tmp_path / "relay") as relay:
        port = int(relay.url.rsplit(":", 1)[1])
        target = f"{HOST}:{port}"
        with forward_proxy({target: ("127.0.0.1", port)}, credentials=("me", "pa55word")) as proxy:
            monkeypatch.setenv("HTTP_PROXY", f"http://me:pa55word@127.0.0.1:{proxy.port}")
            with RelayClient(f"http://{target}", insecure_http=True, timeout=10) as c:
                assert c.health()["status"] == "ok"
            monkeypatch.setenv("HTTP_PROXY", f"http://me:wrong-pa55word@127.0.0.1:{proxy.port}")
            wrong = RelayClient(f"http://{target}", insecure_http=True, timeout=10)
            with wrong, pytest.raises(RelayError) as err:
                wrong.health()
            assert "407" in str(err.value) and "pa55word" not in str(err.value)


def test_no_proxy_naming_the_relay_connects_directly(
    tmp_path, monkeypatch, names_resolve_locally_only
):
    with forward_proxy({}) as proxy:
        monkeypatch.setenv("HTTP_PROXY", proxy.url)
        monkeypatch.setenv("NO_PROXY", ".vault.test")
        with RelayClient(f"http://{HOST}:9", insecure_http=True, timeout=5) as c:
            assert c.proxy is None
            with pytest.raises(RelayUnreachable, match="cannot reach the relay at http://relay"):
                c.health()
        assert proxy.seen == []


def test_a_relay_on_this_machine_never_goes_through_the_proxy(tmp_path, monkeypatch):
    with running_relay(tmp_path / "relay") as relay, forward_proxy({}) as proxy:
        monkeypatch.setenv("HTTP_PROXY", proxy.url)
        monkeypatch.setenv("HTTPS_PROXY", proxy.url)
        with RelayClient(relay.url, timeout=10) as c:
            assert c.proxy is None and c.health()["status"] == "ok"
        assert proxy.seen == []


def test_a_proxy_that_is_down_is_named_in_the_error(monkeypatch, names_resolve_locally_only):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    monkeypatch.setenv("HTTPS_PROXY", f"http://me:pa55word@127.0.0.1:{port}")
    with RelayClient(f"https://{HOST}", timeout=5) as c, pytest.raises(RelayUnreachable) as err:
        c.health()
    message = str(err.value)
    assert f"through the proxy http://127.0.0.1:{port}" in message and "pa55word" not in message


def _doctor_relay(*args: str) -> dict[str, str]:
    import json

    from click.testing import CliRunner

    from companion.cli import cli

    res = CliRunner().invoke(cli, ["doctor", "--json", *args])
    assert res.exception is None or isinstance(res.exception, SystemExit), res.output
    return next(c for c in json.loads(res.output)["checks"] if c["name"] == "relay")


def test_doctor_names_the_proxy_it_reached_the_relay_through(
    tmp_path, monkeypatch, names_resolve_locally_only
):
    with running_relay(tmp_path / "relay") as relay:
        port = int(relay.url.rsplit(":", 1)[1])
        target = f"{HOST}:{port}"
        with forward_proxy({target: ("127.0.0.1", port)}) as proxy:
            monkeypatch.setenv("HTTP_PROXY", proxy.url)
            check = _doctor_relay("--relay", f"http://{target}")
    assert f"through the proxy {proxy.url}" in check["detail"], check
    assert check["status"] == "warn"  # plain http to another host: said so
    assert proxy.seen == [("GET", target)]


def test_doctor_reports_an_unusable_proxy_setting(monkeypatch):
    monkeypatch.setenv("HTTPS_PROXY", "ftp://me:pa55word@proxy.corp:21")
    check = _doctor_relay("--relay", f"https://{HOST}")
    assert check["status"] == "FAIL" and "scheme" in check["detail"], check
    assert "HTTPS_PROXY" in check["fix"] and "pa55word" not in json_text(check)


def test_doctor_points_at_the_proxy_when_it_is_down(monkeypatch, names_resolve_locally_only):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    monkeypatch.setenv("HTTPS_PROXY", f"http://127.0.0.1:{port}")
    check = _doctor_relay("--relay", f"https://{HOST}")
    assert check["status"] == "FAIL" and f"proxy http://127.0.0.1:{port}" in check["fix"], check


def json_text(check: dict[str, str]) -> str:
    return " ".join(check.values())
