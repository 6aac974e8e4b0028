"""A subscriber stream as a plain ASGI response, for the hub mounted in any ASGI server.

The fan-out wakes the stream's task only when it is a recipient; the task then writes what
the ring holds for it after its cursor, each write bounded by ``dispatch_timeout``. Under
``skipfilter hub`` the native path (``server/fast_paths.py``) serves HTTP/1.1 streams instead; this
one serves the rest and every embedding. A server that offers the ``skipfilter.abort``
scope extension (``HubProtocol`` does) lets a stalled stream drop its socket at once.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from starlette.types import Receive, Scope, Send

from skipfilter.hub.core.ring import FellBehind
from skipfilter.hub.core.stream import Stream
from skipfilter.hub.sse import HEARTBEAT, comment
from skipfilter.hub.update import Batch, Entry

if TYPE_CHECKING:
    from skipfilter.hub.core.session import Plan, Sessions

log = logging.getLogger("skipfilter.hub")


class _Stalled(Exception):
    """A write did not complete within the dispatch timeout."""


class AsgiStream(Stream):
    """A stream whose writes go through an ASGI ``send``, from its own task."""

    __slots__ = ("_abort", "_beat", "_reason", "_send", "wake")

    def __init__(self, *args: Any, send: Send, abort: Callable[[], None] | None) -> None:
        super().__init__(*args)
        self.wake = asyncio.Event()
        self._send = send
        self._abort = abort
        self._beat = False
        self._reason: tuple[str, str] | None = None

    def offer(self, entry: Entry) -> None:
        if self.live:
            self.wake.set()

    def offer_batch(self, batch: Batch) -> None:
        if self.live:
            self.wake.set()

    def heartbeat(self) -> None:
        self._beat = True
        self.wake.set()

    def go_live(self) -> None:
        self.live = True
        self.wake.set()

    def close(self, reason: str, detail: str = "") -> None:
        if self._reason is None:
            self._reason = (reason, detail)
            self.wake.set()

    async def write_replayed(self, entries: Sequence[Entry]) -> int:
        """Write each entry, waiting (within the dispatch timeout) when the client lags: an
        ASGI server does not say when its socket is full."""
        for written, entry in enumerate(entries):
            if self._reason is not None:
                return written
            try:
                await self._write(entry.event)
            except _Stalled:
                self.close("write timeout")
                self.stalled()
                return written
        return len(entries)

    async def _write(self, body: bytes | memoryview) -> None:
        try:
            async with asyncio.timeout(self.host.settings.dispatch_timeout or None):
                await self._send({"type": "http.response.body", "body": body, "more_body": True})
        except TimeoutError:
            raise _Stalled from None
        self.active = True

    async def pump(self) -> str:
        """Write what is owed whenever woken, until closed; returns the reason."""
        ring = self.host.ring
        while self._reason is None:
            await self.wake.wait()
            self.wake.clear()
            if self._beat:
                self._beat = False
                await self._write(HEARTBEAT)
            if not self.live or self._reason is not None:
                continue
            head = ring.head  # what the list below covers; later entries wake us again
            try:
                for entry in list(ring.owed(self.sid, self.cursor)):
                    await self._write(entry.event)
                    self.cursor = entry.seq
            except FellBehind:
                self.close(
                    "fell behind",
                    f"disconnected: fell behind the hub's history ring ({len(ring)} updates); "
                    "reconnect with Last-Event-ID to resume",
                )
                break
            if head > self.cursor:
                self.cursor = head
        reason, detail = self._reason or ("closed", "")
        if detail:
            with contextlib.suppress(TimeoutError, OSError, _Stalled):
                await self._write(comment(detail))
        return reason

    def stalled(self) -> None:
        """Drop the socket when the server lets us (else the server keeps it)."""
        if self._abort is not None:
            self._abort()


class EventStream:
    """ASGI app serving one accepted subscription (see ``Sessions.prepare``)."""

    def __init__(self, sessions: Sessions, plan: Plan) -> None:
        self.sessions = sessions
        self.plan = plan

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        sessions, plan = self.sessions, self.plan
        abort = scope.get("extensions", {}).get("skipfilter.abort")
        stream = AsgiStream(
            sessions.hub, plan.subscriber_id, plan.selectors, plan.grants, send=send, abort=abort
        )
        refusal = sessions.register(stream, plan)
        if refusal is not None:
            await refusal(scope, receive, send)
            return
        reason = "client disconnected"
        complete = False
        try:
            headers = sessions.stream_headers(stream, plan)
            await send(
                {
                    "type": "http.response.start",
                    "status": 200,
                    "headers": [(k.lower().encode(), v.encode()) for k, v in headers.items()],
                }
            )
            await stream._write(HEARTBEAT)  # flush the headers now, as EventSource expects
            sessions.start(stream, plan)
            pump = asyncio.create_task(stream.pump())
            watch = asyncio.create_task(_disconnected(receive))
            try:
                await asyncio.wait({pump, watch}, return_when=asyncio.FIRST_COMPLETED)
            finally:
                for task in (pump, watch):
                    task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await asyncio.gather(pump, watch, return_exceptions=True)
            if pump.done() and not pump.cancelled():
                exc = pump.exception()
                if isinstance(exc, _Stalled):
                    reason = "write timeout"
                    stream.stalled()
                elif isinstance(exc, OSError):
                    reason = "client disconnected"
                elif exc is not None:
                    reason = "error"
                    log.error("subscriber stream failed", exc_info=exc)
                else:
                    reason = pump.result()
                    complete = True
        except _Stalled:
            reason = "write timeout"
            stream.stalled()
        except asyncio.CancelledError:
            reason = "server shutdown"
        finally:
            stream.closed = True
            stream.disarm()
            sessions.hub.unregister(stream, reason)
        if complete:  # only a stream that still drains gets a proper end (never blocks long)
            with contextlib.suppress(Exception):
                async with asyncio.timeout(sessions.hub.settings.dispatch_timeout or 5.0):
                    await send({"type": "http.response.body", "body": b"", "more_body": False})


async def _disconnected(receive: Receive) -> None:
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            return
