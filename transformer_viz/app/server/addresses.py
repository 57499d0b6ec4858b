"""Which browser a session is, for the limits per address (room starts, codes tried, uploads held).

Behind a trusted proxy (TVIZ_TRUSTED_PROXIES, comma-separated addresses or networks such as 172.16.0.0/12; the
loopback addresses always) the browser is the last address of X-Forwarded-For, the one the proxy added; every
other header may be a lie. None is the server's own computer.
"""

from __future__ import annotations

import ipaddress
import os

TRUSTED_PROXIES = "TVIZ_TRUSTED_PROXIES"  # addresses of the proxies whose X-Forwarded-For names the browser
LOOPBACK = ("127.0.0.1", "::1")


def browser_address(peer: str | None, forwarded: str | None) -> str | None:
    """The browser's address from its connection's `peer` (None or a loopback address: this computer) and the
    X-Forwarded-For header it came with (None or "": none)."""
    peer = None if peer in LOOPBACK else peer
    if peer is None or is_trusted(peer, os.environ.get(TRUSTED_PROXIES, "")):
        last = (forwarded or "").rsplit(",", 1)[-1].strip()[:64]
        return last or peer
    return peer


def is_trusted(peer: str, proxies: str) -> bool:
    """Whether `peer` is one of the comma-separated addresses or networks of `proxies`."""
    try:
        address = ipaddress.ip_address(peer)
        return any(address in ipaddress.ip_network(p.strip(), strict=False) for p in proxies.split(",") if p.strip())
    except ValueError:  # a peer or a setting that is no address: not trusted
        return False
