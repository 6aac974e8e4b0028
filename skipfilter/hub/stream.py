"""One subscriber's SSE response: replay from history, then follow the ring until told to stop.

Written as a bare ASGI callable rather than a StreamingResponse so it can watch for the
client going away, bound every write with a timeout, and close on token expiry — each with
the reason recorded (and sent as a comment when the socket still takes it).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from typing import Any

from starlette.types import Receive, Scope, Send

from skipfilter.hub.hub import Hub, Subscriber
from skipfilter.hub.sse import HEARTBEAT, comment

log = logging.getLogger("skipfilter.hub")

_REPLAY_BATCH = 500


class _Closed(Exception):
    """The stream must end; ``reason`` goes to metrics and, when possible, to the client."""

    def __init__(self, reason: str, detail: str = "") -> None:
        super().__init__(reason)
        self.reason = reason
        self.detail = detail


class EventStream:
    """ASGI app serving ``subscriber``: replays updates after ``replay_from`` (a sequence
    number, None for none), then delivers live updates in publication order, once each."""

    def __init__(
        self,
        hub: Hub,
        subscriber: Subscriber,
        replay_from: int | None,
        headers: dict[str, str],
    ) -> None:
        self.hub = hub
        self.subscriber = subscriber
        self.replay_from = replay_from
        self.headers = headers
        self._last_write = 0.0

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        headers = [(k.lower().encode(), v.encode()) for k, v in self.headers.items()]
        reason = "client disconnected"
        try:
            await send({"type": "http.response.start", "status": 200, "headers": headers})
            pump = asyncio.create_task(self._pump(send))
            watch = asyncio.create_task(self._watch(receive))
            try:
                await asyncio.wait({pump, watch}, return_when=asyncio.FIRST_COMPLETED)
            except asyncio.CancelledError:  # server shutdown: end the stream quietly
                reason = "server shutdown"
            finally:
                for task in (pump, watch):
                    task.cancel()
                with contextlib.suppress(asyncio.CancelledError):  # cancelled again at shutdown
                    await asyncio.gather(pump, watch, return_exceptions=True)
            if pump.done() and not pump.cancelled():
                exc = pump.exception()
                if isinstance(exc, _Closed):
                    reason = exc.reason
                elif exc is not None:
                    reason = "error"
                    log.error("subscriber stream failed", exc_info=exc)
        finally:
            self.hub.unregister(self.subscriber, reason)
        with contextlib.suppress(Exception):  # the client may be gone; nothing left to say
            await send({"type": "http.response.body", "body": b"", "more_body": False})

    async def _watch(self, receive: Receive) -> None:
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                return

    async def _write(self, send: Send, body: bytes) -> None:
        try:
            async with asyncio.timeout(self.hub.settings.write_timeout):
                await send({"type": "http.response.body", "body": body, "more_body": True})
        except TimeoutError:
            raise _Closed("write timeout") from None
        except OSError:
            raise _Closed("client disconnected") from None
        self._last_write = time.monotonic()

    async def _close(self, send: Send, reason: str, detail: str) -> None:
        """Tell the client why (best effort, bounded), then end the stream."""
        try:
            async with asyncio.timeout(min(5.0, self.hub.settings.write_timeout)):
                await send(
                    {"type": "http.response.body", "body": comment(detail), "more_body": True}
                )
        except (TimeoutError, OSError):
            pass
        raise _Closed(reason, detail)

    async def _pump(self, send: Send) -> None:
        hub, sub = self.hub, self.subscriber
        await self._write(send, HEARTBEAT)  # flush the headers now, as EventSource expects
        if self.replay_from is not None:
            await self._replay(send, self.replay_from, sub.cursor)
        settings = hub.settings
        expires = sub.claims.expires_at if sub.claims is not None else None
        loop = asyncio.get_running_loop()
        while True:
            if hub.stopping:
                await self._close(send, "server shutdown", "disconnected: the hub is shutting down")
            if expires is not None and time.time() >= expires:
                await self._close(send, "token expired", "disconnected: the token expired")
            sub.pending = False
            sub.wake.clear()
            entries = hub.history.since(sub.cursor)
            if entries is None:
                await self._close(
                    send,
                    "fell behind",
                    f"disconnected: fell behind the hub's history ring "
                    f"({settings.ring_size} updates); reconnect with Last-Event-ID to resume",
                )
            if entries:
                sid = sub.sid
                chunk = b"".join(
                    e.event for e in entries if e.recipients is not None and sid in e.recipients
                )
                sub.cursor = entries[-1].seq
                if chunk:
                    await self._write(send, chunk)
            if sub.pending:
                continue
            await self._idle(send, loop, expires)

    async def _idle(self, send: Send, loop: Any, expires: float | None) -> None:
        """Wait for a wake-up, sending a heartbeat if the stream stays quiet too long."""
        beat = self.hub.settings.heartbeat
        deadlines = []
        if beat:
            deadlines.append(self._last_write + beat - time.monotonic())
        if expires is not None:
            deadlines.append(expires - time.time())
        if not deadlines:
            await self.subscriber.wake.wait()
            return
        wait = max(0.0, min(deadlines))
        try:
            async with asyncio.timeout_at(loop.time() + wait):
                await self.subscriber.wake.wait()
        except TimeoutError:
            if beat and time.monotonic() - self._last_write >= beat:
                await self._write(send, HEARTBEAT)

    async def _replay(self, send: Send, after: int, upto: int) -> None:
        """Send stored updates ``after < seq <= upto`` that this subscriber should get."""
        hub, sub = self.hub, self.subscriber
        while after < upto:
            entries = hub.history.read(after, upto, _REPLAY_BATCH)
            if not entries:
                break
            chunk = b"".join(e.event for e in entries if hub.wants(sub, e))
            after = entries[-1].seq
            if chunk:
                await self._write(send, chunk)
