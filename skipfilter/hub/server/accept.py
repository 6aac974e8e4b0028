"""Taking connections from a listening socket only while this process has room for them.

Worker processes share one listening socket; whichever calls ``accept`` first gets the next
connection. A process that accepted while at its connection capacity could only answer
503, though another worker had room. So each process accepts here, one connection at a
time, only while it has room: a full process leaves new connections in the kernel's
queue for the others. Each worker writes the room it has to a board in shared memory;
a full worker takes connections again (and answers them 503) only when no other has
room. A lone process, without a board, always accepts and answers 503 when full.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import logging
import socket
import ssl
from collections.abc import Callable
from typing import Any

log = logging.getLogger("skipfilter.hub")

#: Seconds between the checks of a full process (has it room again? has anyone?), and
#: between refreshes of the room it shows on the board.
CHECK_EVERY = 0.05
#: Seconds a client may take over its TLS handshake before its connection is dropped.
TLS_HANDSHAKE_TIMEOUT = 10.0
#: Connections taken per readiness callback before the loop serves others.
ACCEPTS_PER_TURN = 64
#: Errors of ``accept`` that say the process (or the system) is out of descriptors.
_OUT_OF_FILES = (errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM)


class RoomBoard:
    """Free connection slots of each worker, in shared memory (one writer per slot).

    A slot holds 0 while its worker is not serving (starting, draining or dead).
    """

    def __init__(self, slots: int) -> None:
        import multiprocessing

        self._room: Any = multiprocessing.RawArray("q", slots)

    def __len__(self) -> int:
        return len(self._room)

    def set(self, slot: int, room: int) -> None:
        """Publish ``room`` free connections for ``slot``."""
        self._room[slot] = max(0, room)

    def others_have_room(self, slot: int) -> bool:
        """Whether any worker but ``slot`` has a free connection slot."""
        return any(room > 0 for i, room in enumerate(self._room) if i != slot)


class Acceptor:
    """Accepts from ``sock`` while the process holds fewer than ``capacity`` connections
    (``count()`` of them) and ``serving()``, handing each to ``protocol_factory`` on
    ``loop`` (through a TLS handshake with ``tls``); past that, only when no other worker
    has room (to answer 503)."""

    def __init__(
        self,
        loop: asyncio.AbstractEventLoop,
        sock: socket.socket,
        protocol_factory: Callable[[], asyncio.Protocol],
        capacity: int,
        count: Callable[[], int],
        board: RoomBoard | None = None,
        slot: int = 0,
        serving: Callable[[], bool] = lambda: True,
        tls: ssl.SSLContext | None = None,
    ) -> None:
        self._loop = loop
        self._serving = serving
        self._tls = tls
        self._sock = sock
        self._factory = protocol_factory
        self._capacity = capacity
        self._count = count
        self._board = board
        self._slot = slot
        self._pending = 0  # accepted, not yet handed to a protocol
        self._reading = False
        self._timer: asyncio.TimerHandle | None = None
        self._stopped = True
        self._tasks: set[asyncio.Task[None]] = set()
        self.accepted = 0

    def start(self) -> None:
        """Begin accepting."""
        self._sock.setblocking(False)
        self._stopped = False
        self._resume()
        self._tick()

    async def stop(self) -> None:
        """Accept nothing more (drain); returns once every connection already accepted has
        its protocol (so a drain reaches it too)."""
        self._stopped = True
        self._pause()
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if self._board is not None:
            self._board.set(self._slot, 0)
        await asyncio.gather(*self._tasks, return_exceptions=True)

    @property
    def room(self) -> int:
        """Connections this process can still serve: none while its hub does not serve yet
        (it waits for Redis), so a worker that waits leaves connections to those that serve
        (and, when none does, takes them to answer 503 saying why)."""
        if not self._serving():
            return 0
        return self._capacity - self._count() - self._pending

    def _should_accept(self) -> bool:
        if self.room > 0:
            return True
        # full: take it anyway (to answer 503) only if nobody else can serve it
        return self._board is None or not self._board.others_have_room(self._slot)

    def _ready(self) -> None:
        for _ in range(ACCEPTS_PER_TURN):
            if self._stopped:
                return
            if not self._should_accept():
                self._pause()
                return
            try:
                conn, _ = self._sock.accept()
            except (BlockingIOError, InterruptedError):
                return
            except OSError as exc:
                if exc.errno in _OUT_OF_FILES:
                    log.error("hub: cannot accept connections: %s; pausing", exc)
                    self._pause()  # the tick resumes when there is room again
                    return
                if exc.errno in (errno.ECONNABORTED, errno.EPROTO):
                    continue
                raise
            conn.setblocking(False)
            self._pending += 1
            self.accepted += 1
            task = self._loop.create_task(self._connect(conn))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)
        self._show_room()

    async def _connect(self, conn: socket.socket) -> None:
        handed = False

        def protocol() -> asyncio.Protocol:
            made = self._factory()
            connection_made = made.connection_made

            def hand_over(transport: asyncio.BaseTransport) -> None:
                # from here ``count()`` holds the connection: it leaves ``pending`` in the
                # same step, or the room shown meanwhile counts it twice (and a full
                # worker, seeing no room elsewhere, takes a connection only to answer 503)
                nonlocal handed
                handed = True
                self._pending -= 1
                connection_made(transport)

            made.connection_made = hand_over  # type: ignore[method-assign]
            return made

        try:
            await self._loop.connect_accepted_socket(
                protocol,
                conn,
                ssl=self._tls,
                ssl_handshake_timeout=TLS_HANDSHAKE_TIMEOUT if self._tls else None,
            )
        except OSError:
            with contextlib.suppress(OSError):
                conn.close()
        finally:
            if not handed:
                self._pending -= 1

    def _pause(self) -> None:
        if self._reading:
            self._loop.remove_reader(self._sock.fileno())
            self._reading = False

    def _resume(self) -> None:
        if not self._reading and not self._stopped:
            self._loop.add_reader(self._sock.fileno(), self._ready)
            self._reading = True

    def _tick(self) -> None:
        """Show this process's room on the board; a paused process looks again."""
        if self._stopped:
            return
        self._show_room()
        if not self._reading and self._should_accept():
            self._resume()
        self._timer = self._loop.call_later(CHECK_EVERY, self._tick)

    def _show_room(self) -> None:
        if self._board is not None:
            self._board.set(self._slot, self.room)


#: What a process that stops answers the connections still waiting in its queue.
STOPPING_RESPONSE = (
    b"HTTP/1.1 503 Service Unavailable\r\n"
    b"Content-Type: text/plain; charset=utf-8\r\nRetry-After: 1\r\nConnection: close\r\n"
    b"Content-Length: 71\r\n\r\n"
    b"the hub is shutting down: nothing was done with this request; retry it\n"
)


def refuse_waiting(sock: socket.socket, response: bytes = STOPPING_RESPONSE) -> int:
    """Answer every connection waiting in a listening socket's queue with ``response``
    (a 503 saying nothing was done) and close it; returns how many. A process that stops
    and owns its listening socket calls this before closing it: the kernel would otherwise
    reset those connections, and their clients could not tell whether a publish they had
    sent was stored."""
    sock.setblocking(False)
    answered = 0
    while True:
        try:
            conn, _ = sock.accept()
        except OSError:  # nothing waits any more (or the socket is gone)
            return answered
        with conn:
            conn.setblocking(False)
            with contextlib.suppress(OSError):
                while conn.recv(1 << 16):  # read the request, so closing sends no reset
                    pass
            with contextlib.suppress(OSError):
                conn.send(response)
                conn.shutdown(socket.SHUT_WR)
        answered += 1
