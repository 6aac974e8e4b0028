"""Loopback ports for servers that are stopped and started again on the same port.

A port from ``bind(("127.0.0.1", 0))`` lies in the kernel's ephemeral range: while its
server is down (a restart, a chaos fault) any process's outgoing connection or ``bind(0)``
may be handed it, and the server cannot come back. Ports below that range are never
handed out that way.
"""

from __future__ import annotations

import random
import socket
from pathlib import Path

__all__ = ["restartable_port"]

_RANGE_FILE = Path("/proc/sys/net/ipv4/ip_local_port_range")
_SPAN = 12_000  # ports below the ephemeral range to draw from


def _ephemeral_low() -> int:
    try:
        return int(_RANGE_FILE.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768  # Linux's default


def _bindable(port: int) -> bool:
    with socket.socket() as probe:
        try:
            probe.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def restartable_port() -> int:
    """A free loopback port below the ephemeral range (any free port if there is none)."""
    low = _ephemeral_low()
    draw = random.SystemRandom()
    if low - _SPAN >= 1024:
        for _ in range(100):
            port = draw.randrange(low - _SPAN, low)
            if _bindable(port):
                return port
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])
