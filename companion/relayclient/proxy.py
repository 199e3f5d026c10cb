"""Which forward proxy, if any, this machine's settings name for a relay URL.

`RelayClient` builds its own httpcore connection pool (for `TCP_NODELAY` and connect retries),
and httpcore reads no proxy settings: without this module a device behind a corporate proxy
could not reach its relay at all. The settings are the platform's, through the standard
library: `HTTPS_PROXY` / `HTTP_PROXY` / `ALL_PROXY` and `NO_PROXY` (either case) everywhere, the
system proxy settings on macOS and Windows.

A relay on this machine (localhost, a loopback address) never goes through a proxy, as in Go's
`ProxyFromEnvironment`: a proxy elsewhere cannot reach this machine's loopback.

Through a proxy, an https:// relay is reached by a CONNECT tunnel, so the proxy sees the relay's
host name and the amount of traffic, never the token or the (already encrypted) records.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from urllib.parse import urlsplit

from companion.errors import InputError
from companion.logs import register_secret
from companion.relayclient.hosts import is_loopback_host

SCHEMES = ("http", "https", "socks5", "socks5h")


class ProxySettingError(InputError):
    """The proxy setting for a relay URL cannot be used; the message never shows its password."""


@dataclass(frozen=True)
class ProxyChoice:
    url: str  # as set, credentials included: give it to the transport, never show it
    shown: str  # scheme://host:port, for messages and logs

    @property
    def is_socks(self) -> bool:
        return self.url.lower().startswith("socks")


def proxy_for(relay_url: str) -> ProxyChoice | None:
    """The proxy the platform's settings name for `relay_url`, or None to connect directly."""
    parts = urlsplit(relay_url)
    host = parts.hostname or ""
    if not host or is_loopback_host(host):
        return None
    if sys.platform not in ("darwin", "win32") and not any(
        name.lower().endswith("_proxy") for name in os.environ
    ):
        return None  # all `getproxies` reads here; urllib.request costs a one-shot sync ~12 ms
    import urllib.request

    proxies = urllib.request.getproxies()
    setting = proxies.get(parts.scheme.lower()) or proxies.get("all")
    if not setting:
        return None
    netloc = host if parts.port is None else f"{host}:{parts.port}"
    if urllib.request.proxy_bypass(netloc):
        return None
    return _parse(setting.strip(), parts.scheme.lower())


def _parse(setting: str, relay_scheme: str) -> ProxyChoice:
    url = setting if "://" in setting else f"http://{setting}"  # "proxy:3128" is an HTTP proxy
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    try:
        port = parts.port
    except ValueError:
        port = None
        host = None
    else:
        host = parts.hostname
    shown = f"{scheme}://{host or '?'}" + (f":{port}" if port else "")
    where = f"the proxy set for {relay_scheme}:// relays ({shown})"
    if scheme not in SCHEMES:
        raise ProxySettingError(
            f"{where} has a scheme this client cannot use; use http://, https:// or socks5://"
        )
    if not host:
        raise ProxySettingError(f"{where} names no host:port")
    register_secret(parts.password)  # masked in every log line, should anything print it
    return ProxyChoice(url, shown)
