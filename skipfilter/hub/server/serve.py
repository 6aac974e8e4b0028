"""Serving the hub app with uvicorn: the open-files limit, the sockets, the native streams,
and the drain that ends a process without losing anything.

Every connection costs one file descriptor, so the process raises its soft limit to the
hard one at start-up (as Go's runtime does) and says how many connections that leaves.
Connections are taken only while the process has room (``accept.py``).

On SIGTERM (or SIGINT) a process drains: it stops accepting and closes its listening
socket, refuses new subscriptions, ends every stream with a comment saying why (clients
resume elsewhere, or here once restarted, with the last id they got), lets the publishes it
accepted finish (one still unanswered near the deadline gets a 503 saying it may or may not
have been stored), closes its transport and exits, all within ``shutdown_timeout`` seconds.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import errno
import gc
import importlib.util
import logging
import os
import resource
import socket
import ssl
import sys
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from types import FrameType
from typing import Any

import uvicorn
from starlette.applications import Starlette

from skipfilter.hub.http.health import Startup
from skipfilter.hub.http.runtime import HubRuntime, runtime_of
from skipfilter.hub.server.accept import Acceptor, RoomBoard, refuse_waiting
from skipfilter.hub.server.address import parse_address
from skipfilter.hub.settings import SHUTDOWN_TIMEOUT, HubSettings

log = logging.getLogger("skipfilter.hub")

#: Descriptors kept for everything but client connections (listeners, SQLite, Redis, the
#: event loop, logs...): past ``limit - RESERVED_FILES`` connections a process answers 503.
RESERVED_FILES = 64
#: Exit status of a process the drain deadline caught still working.
DRAIN_OVERRUN = 70


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


def split_address(address: str, flag: str = "--addr") -> tuple[str, int]:
    """``HOST:PORT`` (``[v6]:PORT``; ``:PORT`` or ``PORT`` for every interface) as (host,
    port); ValueError naming ``flag`` when it is not one (``address.py``)."""
    parsed = parse_address(address, flag)
    return parsed.bind_host, parsed.port


def listen(address: str, backlog: int = 4096, flag: str = "--addr") -> socket.socket:
    """A listening TCP socket on ``address``; ValueError naming ``flag`` and the address when
    it is not one or cannot be bound (in use, not this machine's, not permitted)."""
    parsed = parse_address(address, flag)
    sock = socket.socket(parsed.family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((parsed.bind_host, parsed.port))
        sock.listen(backlog)
    except OSError as exc:
        sock.close()
        raise ValueError(f"{flag} {address}: cannot listen there: {_why(exc)}") from None
    sock.set_inheritable(True)
    return sock


def _why(exc: OSError) -> str:
    """An OSError from bind or getaddrinfo as a reader wants it (no errno numbers)."""
    if exc.errno == errno.EADDRINUSE:
        return "the port is in use (another process listens on it; pick another port)"
    if exc.errno == errno.EACCES:
        return "permission denied (ports below 1024 need privileges; pick a higher port)"
    if exc.errno == errno.EADDRNOTAVAIL:
        return "this machine has no such address"
    if isinstance(exc, socket.gaierror):
        return f"unknown host ({exc.strerror})"
    return exc.strerror or str(exc)


def bind_listeners(
    addr: str, metrics_addr: str | None, workers: int = 1
) -> tuple[socket.socket, list[socket.socket]]:
    """The public listener on ``addr`` and one metrics listener per worker (port + index;
    port 0: any free port each), bound before the hub says anything, so a taken port is its
    one line; ValueError naming the flag. What was bound first is closed again when a later
    one fails."""
    listener = listen(addr)
    metrics: list[socket.socket] = []
    try:
        if metrics_addr:
            host, port = split_address(metrics_addr, "--metrics-addr")
            for i in range(workers):
                shown = f"[{host}]" if ":" in host else host
                each = port + i if port else 0
                metrics.append(listen(f"{shown}:{each}", flag="--metrics-addr"))
    except ValueError:
        for sock in (listener, *metrics):
            sock.close()
        raise
    return listener, metrics


def native_streams_available() -> bool:
    """The native stream path rides on uvicorn's httptools protocol."""
    return importlib.util.find_spec("httptools") is not None


@dataclass(frozen=True)
class Tls:
    """A certificate chain and its private key (PEM files): the hub serves HTTPS."""

    cert: str
    key: str

    def context(self) -> ssl.SSLContext:
        """A server context for these files; ValueError naming the file that will not load."""
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        try:
            context.load_cert_chain(self.cert, self.key)
        except (OSError, ssl.SSLError) as exc:
            raise ValueError(
                f"--tls-cert {self.cert} / --tls-key {self.key}: cannot load them ({exc})"
            ) from None
        context.set_alpn_protocols(["http/1.1"])  # browsers must not offer h2 to this server
        return context


def uvicorn_config(app: Starlette, streams: str, log_level: str) -> Any:
    """The uvicorn configuration: uvloop when installed, and the native protocol unless
    ``streams`` asks for ASGI streams (or httptools is missing)."""
    http: Any = "auto"
    if native_streams_available():
        from skipfilter.hub.server.fast_paths import protocol_for

        http = protocol_for(
            runtime_of(app), native_streams=streams == "native", max_connections=capacity()
        )
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


def capacity() -> int:
    """Connections this process takes before it is full (its open-files limit less a reserve)."""
    return resource.getrlimit(resource.RLIMIT_NOFILE)[0] - RESERVED_FILES


@dataclass(frozen=True)
class Seat:
    """What a supervised worker gets from its supervisor: its slot on the shared room
    board, and ``ready`` to call once it serves."""

    board: RoomBoard
    slot: int
    ready: Callable[[], None]


def serve(
    app: Starlette,
    listener: socket.socket,
    streams: str,
    log_level: str,
    extra: Sequence[socket.socket] = (),
    shutdown_timeout: float = SHUTDOWN_TIMEOUT,
    seat: Seat | None = None,
    tls: Tls | None = None,
) -> None:
    """Run uvicorn, taking connections from ``listener`` (and serving ``extra`` sockets, such
    as the metrics one), until SIGTERM or SIGINT; then drain within ``shutdown_timeout``.
    With ``tls`` the listener speaks HTTPS (the ``extra`` sockets stay plain HTTP)."""
    config = uvicorn_config(app, streams, log_level)
    server = HubServer(config, app, listener, shutdown_timeout, seat, tls)
    with contextlib.suppress(KeyboardInterrupt):  # uvicorn raises Ctrl-C again once drained
        server.run(sockets=list(extra))


def freeze_startup_objects() -> None:
    """Leave what start-up made (modules, the app, the hub's own structures) out of the
    cyclic collector's full passes: one pass over them stopped the loop for 22-31 ms every few
    seconds under a steady publish load, the slowest acknowledgements' wait. The hub's own
    garbage is collected as before; only objects alive now are exempted."""
    gc.collect()
    gc.freeze()


class HubServer(uvicorn.Server):
    """uvicorn's server, accepting through an ``Acceptor`` and draining on the way out."""

    def __init__(
        self,
        config: Any,
        app: Starlette,
        listener: socket.socket,
        shutdown_timeout: float,
        seat: Seat | None,
        tls: Tls | None = None,
    ) -> None:
        super().__init__(config)
        self.tls = tls.context() if tls is not None else None
        self.runtime: HubRuntime = runtime_of(app)
        self.listener = listener
        self.shutdown_timeout = shutdown_timeout
        self.seat = seat
        self.acceptor: Acceptor | None = None
        self.deadline: float | None = None  # time.monotonic() by which the process is gone
        self._ready_task: asyncio.Task[None] | None = None

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        try:
            await super().startup(sockets=sockets)
        except SystemExit:  # the app did not start (told to stop while it waited)
            self._close_listener()
            raise
        if not self.started or self.should_exit:
            return
        loop = asyncio.get_running_loop()
        config = self.config

        def protocol() -> asyncio.Protocol:
            made: asyncio.Protocol = config.http_protocol_class(  # type: ignore[call-arg]
                config=config,
                server_state=self.server_state,
                app_state=self.lifespan.state,
                _loop=loop,
            )
            return made

        limit = getattr(config.http_protocol_class, "max_connections", capacity())
        board, slot = (self.seat.board, self.seat.slot) if self.seat else (None, 0)
        startup = self.runtime.startup  # this lifespan's start
        self.acceptor = Acceptor(
            loop,
            self.listener,
            protocol,
            limit,
            lambda: len(self.server_state.connections),
            board,
            slot,
            lambda: startup.serving() is not None,
            tls=self.tls,
        )
        self.acceptor.start()
        # a worker's seat is ready once its hub serves (it may wait for Redis first)
        self._ready_task = asyncio.create_task(self._ready_when_serving(startup))

    async def _ready_when_serving(self, startup: Startup[Any]) -> None:
        while await startup.settle() is None and not startup.failed and not self.should_exit:
            await asyncio.sleep(0.1)
        if startup.serving() is None:
            return
        freeze_startup_objects()
        if self.seat is not None:
            self.seat.ready()

    def handle_exit(self, sig: int, frame: FrameType | None) -> None:
        """SIGTERM/SIGINT: start the drain clock (a second signal does not reset it)."""
        super().handle_exit(sig, frame)
        self._begin_drain()

    def _begin_drain(self) -> None:
        if self.deadline is not None:
            return
        self.deadline = time.monotonic() + self.shutdown_timeout
        others_serve = None
        if self.seat is not None:  # a worker: the others may still serve the port
            board, slot = self.seat.board, self.seat.slot
            others_serve = lambda: board.others_have_room(slot)  # noqa: E731
        self.runtime.begin_stopping(others_serve)  # a start waiting for its transport gives up
        watchdog = threading.Timer(self.shutdown_timeout, _overrun, (self.shutdown_timeout,))
        watchdog.daemon = True
        watchdog.start()

    async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
        """Stop accepting, end the streams, finish what was accepted, then let uvicorn close
        the rest within what is left of the drain deadline."""
        self._begin_drain()
        assert self.deadline is not None
        if self.acceptor is not None:
            await self.acceptor.stop()
        self._close_listener()
        left = self.deadline - time.monotonic()
        reserve = min(2.0, max(left, 0.0) / 4)  # for closing the transport afterwards
        self.runtime.drain(give_up_in=max(0.0, left - reserve))
        # uvicorn waits this long for open connections (it takes any number of seconds)
        self.config.timeout_graceful_shutdown = max(0.1, left - reserve / 2)  # type: ignore[assignment]
        await super().shutdown(sockets)

    def _close_listener(self) -> None:
        """Stop listening. A worker leaves the connections waiting in the shared queue to
        the other workers; a lone process answers them (503) before closing."""
        if self.seat is None and self.listener.fileno() >= 0:
            waiting = refuse_waiting(self.listener)
            if waiting:
                log.warning("hub: answered %d waiting connections 503: shutting down", waiting)
        self.listener.close()  # this process's descriptor; other workers keep theirs


def _overrun(timeout: float) -> None:
    """The drain took longer than allowed: leave now (what was acknowledged is stored)."""
    log.error("hub: still draining after %g s (--shutdown-timeout); exiting now", timeout)
    os._exit(DRAIN_OVERRUN)


def serve_one(
    args: argparse.Namespace,
    settings: HubSettings,
    worker: int,
    shared: socket.socket | None = None,
    metrics: socket.socket | None = None,
    seat: Seat | None = None,
) -> int:
    """One hub process: listen on ``args.addr`` (or serve the supervisor's ``shared`` and
    ``metrics`` sockets, from its ``seat``) and serve until stopped, then drain."""
    from skipfilter.hub.http.app import create_app

    try:
        listener = shared if shared is not None else listen(args.addr)
        extra = []
        if settings.metrics_addr:
            host, port = split_address(settings.metrics_addr, "--metrics-addr")
            shown = f"[{host}]" if ":" in host else host
            # each worker its own: port + worker index, or the port its socket was bound to
            # (for port 0, any free one)
            own = metrics.getsockname()[1] if metrics is not None else port + worker
            address = f"{shown}:{own}"
            settings = settings.with_changes(metrics_addr=address)
            extra.append(metrics if metrics is not None else listen(address, flag="--metrics-addr"))
    except (ValueError, OSError) as exc:
        print(f"skipfilter hub: {exc}", file=sys.stderr)
        return 2
    app = create_app(settings)
    tls = tls_of(args)
    serve(app, listener, args.streams, args.log_level, extra, args.shutdown_timeout, seat, tls)
    return 0


def tls_of(args: argparse.Namespace) -> Tls | None:
    """``--tls-cert``/``--tls-key`` as a ``Tls`` (None without them); ValueError when only
    one is given or they do not load, so the hub says so before it listens."""
    cert, key = getattr(args, "tls_cert", None), getattr(args, "tls_key", None)
    if not cert and not key:
        return None
    if not cert or not key:
        raise ValueError("--tls-cert and --tls-key go together (the certificate and its key)")
    tls = Tls(cert, key)
    tls.context()
    return tls
