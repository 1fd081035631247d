"""Which ``Host`` headers a local server answers, and which addresses reach only this machine.

The servers (``agentgym view``, ``agentgym serve``, ``agentgym env serve``) bind 127.0.0.1 by
default. A browser tab on any web site can still send requests there, and with DNS rebinding (a
name that first resolves to the site, then to 127.0.0.1) read the answers: the browser thinks it
talks to the site. The ``Host`` header still names the site, so a server that answers only its
own address and the loopback names cannot be read that way (:mod:`agentgym.gate` also checks
``Origin``, for the requests a page sends without reading the answer).
"""

from __future__ import annotations

import ipaddress
from collections.abc import Collection

LOOPBACK = ("localhost", "127.0.0.1", "::1")
API_KEY_ENV = "AGENTGYM_API_KEY"
"""The environment variable ``agentgym serve`` reads its key from (a flag shows in ``ps``)."""
EVERY_INTERFACE = ("0.0.0.0", "::", "")


def allowed_hosts(bound: str) -> set[str] | None:
    """Host names a request may carry for a server bound to ``bound`` (None: any).

    Bound to loopback or one address: that address and the loopback names. Bound to every
    interface (``0.0.0.0``, ``::``): the user chose to serve any name; no check.
    """
    if bound in EVERY_INTERFACE:
        return None
    return {bound.lower(), *LOOPBACK}


def host_name(header: str) -> str:
    """``example.com:8765`` -> ``example.com``; ``[::1]:8765`` -> ``::1``."""
    if header.startswith("["):
        return header[1:].split("]", 1)[0].lower()
    return header.rsplit(":", 1)[0].lower() if header.count(":") == 1 else header.lower()


def is_loopback(host: str) -> bool:
    """Whether binding ``host`` reaches only this machine (``localhost``, 127.0.0.0/8, ``::1``).
    Any other name may resolve to a public address, so it counts as public."""
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def refused_host(header: str | None, allowed: Collection[str] | None) -> str | None:
    """Why a request with this ``Host`` header is refused, or None when it may be answered."""
    if allowed is None or host_name(header or "") in allowed:
        return None
    return f"Host header {header!r} is not this server's address ({', '.join(sorted(allowed))})"


def check_exposure(host: str, api_key: str | None) -> None:
    """Refuse to serve the model without a key on an address other machines can reach."""
    if api_key is not None and not api_key.strip():
        raise ValueError("--api-key: the key is empty; give a non-empty key or none at all")
    if not api_key and not is_loopback(host):
        raise ValueError(
            f"--host {host} is reachable from other machines: set a key with --api-key or "
            f"{API_KEY_ENV} (clients send it as their api_key), or bind 127.0.0.1"
        )
