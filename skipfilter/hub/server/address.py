"""A listen address as ``--addr`` (and ``--metrics-addr``) take it, read before anything binds.

``HOST:PORT``, ``[IPv6]:PORT``, ``:PORT`` and a bare ``PORT`` (both: every interface, as
Caddy's ``:PORT`` site address, the form Mercure's ``SERVER_NAME`` uses for one; Caddy reads
a bare number as a host name, which no one means). A mistake is one ValueError naming the
flag and the fix; what was bound is said from the socket itself (``bound``).
"""

from __future__ import annotations

import ipaddress
import re
import socket
from collections.abc import Callable
from dataclasses import dataclass

__all__ = ["Address", "bound", "parse_address"]

_NAME = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9.-]*[A-Za-z0-9])?")
#: What a wildcard host binds: every IPv4 interface (the hub's ``:PORT`` as ever).
EVERY_INTERFACE = "0.0.0.0"


@dataclass(frozen=True, slots=True)
class Address:
    """A host (``""``: every interface; an IP literal or a name) and a port (0: any free)."""

    host: str
    port: int

    @property
    def bind_host(self) -> str:
        """The host given to ``bind``."""
        return self.host or EVERY_INTERFACE

    @property
    def family(self) -> socket.AddressFamily:
        return socket.AF_INET6 if ":" in self.bind_host else socket.AF_INET

    def __str__(self) -> str:
        return f"{_literal(self.host)}:{self.port}"


def parse_address(text: str, flag: str = "--addr") -> Address:
    """``text`` as an Address; ValueError ``"FLAG 'TEXT': what is wrong (the fix)"``."""
    value = text.strip()

    def bad(why: str) -> ValueError:
        return ValueError(f"{flag} {text!r}: {why}")

    if value.isdigit():  # a bare port: every interface, as ":PORT"
        return Address("", _port(value, bad))
    if value.startswith("["):
        inside, bracket, rest = value[1:].partition("]")
        if not bracket or not rest.startswith(":"):
            raise bad("write an IPv6 address with its port as [::1]:3000")
        try:
            host = str(ipaddress.IPv6Address(inside))
        except ValueError:
            raise bad(f"{inside!r} is not an IPv6 address") from None
        return Address(host, _port(rest[1:], bad))
    host, colon, port = value.rpartition(":")
    if not colon:
        raise bad("no port: write HOST:PORT (127.0.0.1:3000), :PORT or PORT (every interface)")
    if ":" in host:
        raise bad(f"an IPv6 address goes in brackets: [{host}]:{port}")
    if host and not _NAME.fullmatch(host):
        raise bad(f"{host!r} is neither an IP address nor a host name")
    return Address(host, _port(port, bad))


def _port(text: str, bad: Callable[[str], ValueError]) -> int:
    if not text.isdigit() or not text.isascii():
        raise bad(f"port {text!r} is not a number from 0 to 65535")
    port = int(text)
    if port > 65535:
        raise bad(f"port {port} is out of range (0 to 65535)")
    return port


def _literal(host: str) -> str:
    return f"[{host}]" if ":" in host else host


def bound(sock: socket.socket, scheme: str = "http") -> str:
    """What ``sock`` listens on, exactly: its URL and who can reach it."""
    host, port = sock.getsockname()[:2]
    url = f"{scheme}://{_literal(host)}:{port}"
    address = ipaddress.ip_address(host)
    if address.is_unspecified:
        every = "every IPv4 interface" if address.version == 4 else "every interface"
        return f"{url} ({every}: other machines can connect)"
    if address.is_loopback:
        return f"{url} (loopback: this machine only)"
    return f"{url} (other machines on its network can connect)"
