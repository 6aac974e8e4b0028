"""Serving the hub app with uvicorn: the open-files limit, the sockets, the native streams.

Every connection costs one file descriptor, so the process raises its soft limit to the
hard one at start-up (as Go's runtime does) and says how many connections that leaves.
"""

from __future__ import annotations

import importlib.util
import logging
import resource
import socket
from typing import Any

from starlette.applications import Starlette

log = logging.getLogger("skipfilter.hub")

#: Descriptors kept for everything but client connections (listeners, SQLite, Redis, the
#: event loop, logs...): past ``limit - RESERVED_FILES`` connections a process answers 503.
RESERVED_FILES = 64


def raise_open_files_limit() -> tuple[int, int]:
    """Raise the soft RLIMIT_NOFILE to the hard limit; return (before, after)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    target = hard if hard != resource.RLIM_INFINITY else max(soft, 1 << 20)
    if soft < target:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
        except (ValueError, OSError):
            return soft, soft
    return soft, resource.getrlimit(resource.RLIMIT_NOFILE)[0]


def split_address(address: str) -> tuple[str, int]:
    """``HOST:PORT`` (``[v6]:PORT``, ``:PORT`` for every interface) as (host, port)."""
    host, _, port = address.rpartition(":")
    if not port.isdigit():
        raise ValueError(f"address {address!r} is not HOST:PORT")
    return host.strip("[]") or "0.0.0.0", int(port)


def listen(address: str, backlog: int = 4096) -> socket.socket:
    """A listening TCP socket on ``address``."""
    host, port = split_address(address)
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    sock.listen(backlog)
    sock.set_inheritable(True)
    return sock


def native_streams_available() -> bool:
    """The native stream path rides on uvicorn's httptools protocol."""
    return importlib.util.find_spec("httptools") is not None


def uvicorn_config(app: Starlette, streams: str, log_level: str) -> Any:
    """The uvicorn configuration: uvloop when installed, and the native protocol unless
    ``streams`` asks for ASGI streams (or httptools is missing)."""
    import uvicorn

    http: Any = "auto"
    if native_streams_available():
        from skipfilter.hub.native import protocol_for

        capacity = resource.getrlimit(resource.RLIMIT_NOFILE)[0] - RESERVED_FILES
        http = protocol_for(app, native_streams=streams == "native", max_connections=capacity)
    elif streams == "native":
        log.warning("httptools is not installed: streams go through ASGI (slower)")
    return uvicorn.Config(
        app,
        http=http,
        loop="auto",
        log_level=log_level,
        timeout_graceful_shutdown=5,
        backlog=4096,
    )


def serve(app: Starlette, sockets: list[socket.socket], streams: str, log_level: str) -> None:
    """Run uvicorn on ``sockets`` until interrupted, ending open streams first at shutdown."""
    import uvicorn

    class Server(uvicorn.Server):
        """uvicorn waits for open responses before shutting down: end the streams first."""

        async def shutdown(self, sockets: Any = None) -> None:
            hub = getattr(app.state, "hub", None)
            if hub is not None:
                hub.stop_streams()
            await super().shutdown(sockets)

    Server(uvicorn_config(app, streams, log_level)).run(sockets=sockets)
