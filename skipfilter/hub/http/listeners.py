"""Which listener a connection came in on: the public address, or ``--metrics-addr``.

One process serves both sockets, so each request is told apart by the local address it
arrived at (host and port: two addresses may share a port on different interfaces). The
metrics listener answers ``/metrics`` and nothing else; the public one never answers it.
"""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Mapping
from typing import Any

from starlette.responses import PlainTextResponse
from starlette.types import ASGIApp, Receive, Scope, Send

METRICS_PATH = "/metrics"
_WILDCARDS = {"", "0.0.0.0", "::"}


class MetricsAddress:
    """``HOST:PORT`` of the metrics listener, matched against a connection's local address.

    A hostname is resolved once, here; a wildcard host matches any local address on the port.
    """

    def __init__(self, address: str) -> None:
        host, _, port = address.rpartition(":")
        host = host.strip("[]")
        self.port = int(port)
        self.hosts: set[str] | None = None  # None: any host (a wildcard)
        if host not in _WILDCARDS:
            self.hosts = {_canonical(host)}
            try:
                found = socket.getaddrinfo(host, self.port, proto=socket.IPPROTO_TCP)
            except OSError:
                found = []
            self.hosts |= {_canonical(str(info[4][0])) for info in found}

    def serves(self, scope: Mapping[str, Any]) -> bool:
        """Whether ``scope``'s connection arrived at this address."""
        server = scope.get("server")
        if not server or server[1] != self.port:
            return False
        return self.hosts is None or _canonical(str(server[0])) in self.hosts


def _canonical(host: str) -> str:
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return host.lower()
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return str(address.ipv4_mapped)
    return str(address)


class MetricsOnly:
    """ASGI middleware: requests on the metrics listener get ``/metrics`` or a 404."""

    def __init__(self, app: ASGIApp, address: MetricsAddress) -> None:
        self.app = app
        self.address = address

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if (
            scope["type"] == "http"
            and self.address.serves(scope)
            and scope.get("path") != METRICS_PATH
        ):
            response = PlainTextResponse(
                f"this is the hub's metrics address: it serves only {METRICS_PATH}\n",
                status_code=404,
            )
            await response(scope, receive, send)
            return
        await self.app(scope, receive, send)


def metrics_listener(scope: Mapping[str, Any], address: MetricsAddress | None) -> bool:
    """Whether a connection (its ASGI scope) came in on the metrics listener."""
    return address is not None and address.serves(scope)
