"""Whether a relay's host is this machine: plain http:// and a direct connection are allowed
there (no token crosses a network, and no proxy elsewhere could reach it)."""

from __future__ import annotations

import ipaddress


def is_loopback_host(host: str | None) -> bool:
    """localhost (and *.localhost, RFC 6761) or a loopback address; no name is resolved."""
    if not host:
        return False
    host = host.strip("[]").rstrip(".").lower()
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return False
    mapped = getattr(address, "ipv4_mapped", None)  # ::ffff:127.0.0.1 (Python < 3.13 says no)
    return address.is_loopback or (mapped is not None and mapped.is_loopback)
