"""The streaming fast path: subscriber streams written straight to their sockets.

``skipfilter hub`` runs uvicorn with ``HubProtocol``, uvicorn's httptools protocol with one
change: an HTTP/1.1 ``GET /.well-known/mercure`` is answered here instead of through the
ASGI app. Authorization and registration are the app's own (``session.Sessions``);
what differs is delivery. A ``NativeStream`` has no task and no queue: the hub's fan-out
calls ``offer``, which writes the update's pre-framed chunk (one ``bytes`` object shared by
every recipient) to the transport. When the socket is full the transport pauses the
protocol, the stream stops taking offers and keeps its cursor, and on resume it catches
up from the ring; a socket that stays full for ``dispatch_timeout`` seconds is aborted.
A plain publish is answered here too (``native_publish.py``: the app's publish handler,
no ASGI cycle); every other request goes to the Starlette app as usual.
A connection must send a complete request head within ``header_timeout`` seconds of
opening (or of its previous response), else it is closed: idle or dribbling sockets cannot
hold the descriptors new clients need. Every request, on every path, is held to the limits
of ``heads.py`` here, before anything routes it: a head of at most ``max_head_bytes`` and
``max_header_fields`` (431), one valid ``Host`` (400), and a body that arrives within
``body_timeout`` of the hub starting on it (408).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import functools
import logging
import socket
import struct
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import httptools
from starlette.requests import ClientDisconnect

from skipfilter.hub.core.grants import Grants
from skipfilter.hub.core.ring import FellBehind
from skipfilter.hub.core.session import with_cors
from skipfilter.hub.core.stream import Stream, StreamHost
from skipfilter.hub.server import fast_publish as native_publish
from skipfilter.hub.server import heads
from skipfilter.hub.server import uvicorn_seam as seam
from skipfilter.hub.server.entrance import Entrance, Runtime, entrance
from skipfilter.hub.settings import HubSettings
from skipfilter.hub.sse import HEARTBEAT, comment
from skipfilter.hub.update import Batch, Entry, http_chunk
from skipfilter.selectors import TypedSelector

if TYPE_CHECKING:
    from skipfilter.hub.core.session import Plan, Sessions

log = logging.getLogger("skipfilter.hub")

_HEARTBEAT_CHUNK = http_chunk(HEARTBEAT)
_LAST_CHUNK = b"0\r\n\r\n"
#: Seconds an idle keep-alive connection stays open once the process drains.
DRAIN_LINGER = 0.5
#: Bytes a client may send on a connection that is streaming to it before it is dropped.
_MAX_UPLOAD_WHILE_STREAMING = 64 * 1024
#: Seconds a refused connection stays open, its input read and dropped, after its answer
#: (and its write side shut): a close with unread input would reset it, and the client
#: could lose the answer that says why.
LINGER = 2.0
_DEFAULTS: dict[str, Any] = {f.name: f.default for f in dataclasses.fields(HubSettings)}


def reset(transport: asyncio.Transport) -> None:
    """Close a connection at once with a TCP reset: the kernel drops what the client has
    not read instead of keeping the socket alive to deliver it."""
    if transport.is_closing() and transport.get_extra_info("socket") is None:
        return
    sock = transport.get_extra_info("socket")
    if sock is not None:
        with contextlib.suppress(OSError, ValueError):  # ValueError: already closed (uvloop)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    transport.abort()


class NativeStream(Stream):
    """A stream that writes to its transport from inside the fan-out loop."""

    __slots__ = ("_drained", "_stall", "paused", "received", "transport")

    def __init__(
        self,
        host: StreamHost,
        subscriber_id: str,
        selectors: tuple[TypedSelector, ...],
        grants: Grants | None,
        transport: asyncio.Transport,
    ) -> None:
        super().__init__(host, subscriber_id, selectors, grants)
        self.transport = transport
        self.paused = False
        self.received = 0
        self._stall: asyncio.TimerHandle | None = None
        self._drained: asyncio.Future[None] | None = None

    # -- delivery -----------------------------------------------------------------------

    def offer(self, entry: Entry) -> None:
        """Write ``entry`` now, unless the socket is full or the replay is not done (then
        the ring keeps it and ``catch_up`` writes it later)."""
        if self.paused or not self.live or entry.seq <= self.cursor:
            return
        self.transport.write(entry.chunk)
        self.cursor = entry.seq
        self.active = True

    def offer_batch(self, batch: Batch) -> None:
        """Write the whole batch in one go (its chunks joined once for all recipients)."""
        if self.paused or not self.live:
            return
        if batch.first > self.cursor:
            self.transport.write(batch.chunk)
            self.cursor = batch.last
            self.active = True
        else:  # a catch-up already wrote part of it
            for entry in batch.entries:
                self.offer(entry)

    def catch_up(self) -> None:
        """Write what the ring holds for this stream after its cursor, until the socket
        fills up again; a stream whose next entry left the ring is closed."""
        ring = self.host.ring
        try:
            for entry in ring.owed(self.sid, self.cursor):
                self.transport.write(entry.chunk)
                self.cursor = entry.seq
                self.active = True
                if self.paused:
                    return
        except FellBehind:
            self.close(
                "fell behind",
                f"disconnected: fell behind the hub's history ring ({len(ring)} updates, "
                f"{ring.bytes} bytes); reconnect with Last-Event-ID to resume",
            )
            return
        if ring.head > self.cursor:
            self.cursor = ring.head

    def go_live(self) -> None:
        self.live = True
        if not self.paused and not self.closed:
            self.catch_up()

    async def write_replayed(self, entries: Sequence[Entry]) -> int:
        """Write until the socket is full (never waits: the replay gives up its turn)."""
        for written, entry in enumerate(entries):
            if self.closed or self.paused:
                return written
            self.transport.write(entry.chunk)
            self.active = True
        return len(entries)

    async def writable(self) -> None:
        if self.paused and not self.closed:
            self._drained = self.host.loop.create_future()
            await self._drained

    def heartbeat(self) -> None:
        if not self.paused and not self.closed:
            self.transport.write(_HEARTBEAT_CHUNK)

    # -- flow control, from the protocol ------------------------------------------------

    def pause(self) -> None:
        """The socket is full: stop writing; abort if it stays full too long."""
        self.paused = True
        timeout = self.host.settings.dispatch_timeout
        if self._stall is None and timeout:
            self._stall = self.host.loop.call_later(timeout, self._stalled)

    def resume(self) -> None:
        """The client read enough: write what it is owed."""
        self.paused = False
        if self._stall is not None:
            self._stall.cancel()
            self._stall = None
        if self._drained is not None and not self._drained.done():
            self._drained.set_result(None)
        if self.live and not self.closed:
            self.catch_up()

    def _stalled(self) -> None:
        self._stall = None
        self.abort("write timeout")

    # -- ending -------------------------------------------------------------------------

    def close(self, reason: str, detail: str = "") -> None:
        """Say why (when the client still reads), end the chunked body, close the socket;
        a socket that will not drain is aborted after ``dispatch_timeout``."""
        if not self._end(reason):
            return
        transport = self.transport
        if transport.is_closing():
            return
        if detail and not self.paused:
            transport.write(http_chunk(comment(detail)))
        transport.write(_LAST_CHUNK)
        transport.close()
        grace = self.host.settings.dispatch_timeout or 5.0
        self.host.loop.call_later(grace, reset, transport)

    def abort(self, reason: str) -> None:
        """Drop the connection now, discarding what it has not read."""
        if self._end(reason):
            reset(self.transport)

    def connection_lost(self) -> None:
        """The client went away (or the socket was aborted)."""
        self._end("client disconnected")
        if self._drained is not None and not self._drained.done():
            self._drained.set_result(None)

    def _end(self, reason: str) -> bool:
        if self.closed:
            return False
        self.closed = True
        self.disarm()
        if self._stall is not None:
            self._stall.cancel()
            self._stall = None
        self.host.unregister(self, reason)
        return True


class _Corked:
    """A transport that keeps what is written until ``flush`` (or ``close``)."""

    __slots__ = ("parts", "transport")

    def __init__(self, transport: asyncio.Transport) -> None:
        self.transport = transport
        self.parts: list[bytes] = []

    def write(self, data: bytes) -> None:
        self.parts.append(data)

    def flush(self) -> None:
        if self.parts:
            self.transport.write(b"".join(self.parts))
            self.parts.clear()

    def close(self) -> None:
        self.flush()
        self.transport.close()


async def _answer_in_one_write(
    app: Any, cycle: seam.Cycle, scope: Any, receive: Any, send: Any
) -> None:
    """Run ``app`` with a ``send`` that hands a whole response (head and body) to the
    socket in one write: uvicorn writes the head on ``http.response.start`` and the body
    on ``http.response.body``, two system calls and two segments for a short answer."""
    real = seam.transport_of(cycle)
    corked = _Corked(real)

    async def send_once(message: Any) -> None:
        if message["type"] == "http.response.start":
            seam.write_to(cycle, corked)
        try:
            await send(message)
        finally:
            if message["type"] != "http.response.start" and not message.get("more_body"):
                seam.write_to(cycle, real)
                corked.flush()

    try:
        await app(scope, receive, send_once)
    except ClientDisconnect:  # the body never came (--body-timeout), or the client left
        pass
    finally:
        seam.write_to(cycle, real)
        corked.flush()


def _one_write(cycle: seam.Cycle, app: Any) -> Any:
    """``app`` answering in one socket write (``_answer_in_one_write``)."""
    return functools.partial(_answer_in_one_write, app, cycle)


class HubProtocol(seam.SeamProtocol):
    """uvicorn's httptools protocol, answering subscriptions with a ``NativeStream``.

    ``runtime`` (a class attribute, set by ``protocol_for``) is the hub app's handle.
    """

    runtime: Runtime
    native_streams: bool = True
    #: The request limits (``heads.py``), from the app's settings (``protocol_for``).
    max_head_bytes: int = _DEFAULTS["max_head_bytes"]
    max_header_fields: int = _DEFAULTS["max_header_fields"]
    body_timeout: float = _DEFAULTS["body_timeout"]
    #: From the settings too, not the hub: a starting hub (a silent Redis) bounds heads alike.
    header_timeout: float = _DEFAULTS["header_timeout"]

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.stream: NativeStream | None = None
        self.draining = False
        self._head_timer: asyncio.TimerHandle | None = None
        #: When the awaited request head is due (loop time; None: none awaited).
        self._head_due: float | None = None
        # the head being read: bytes and fields counted so far, bytes fed since the parser
        # last called back (a header line it holds unfinished), whether it called back
        self._in_head = False
        self._head_bytes = 0
        self._head_fields = 0
        self._unparsed = 0
        self._progress = False
        #: The answer a refused request gets once those before it are answered.
        self._refusal: bytes | None = None
        # the body awaited: its cycle, when it is due (loop time), its timer
        self._body_cycle: seam.Cycle | None = None
        self._body_due: float | None = None
        self._body_timer: asyncio.TimerHandle | None = None
        self._body_overdue = False

    # -- a request head must arrive in time -------------------------------------------

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._await_head()

    def _await_head(self) -> None:
        """A head is due within the timeout from now. One timer per connection, armed
        when none is: a kept-alive connection's requests move the deadline, not a timer."""
        timeout = self.header_timeout
        if timeout:
            self._head_due = self.loop.time() + timeout
            if self._head_timer is None:
                self._head_timer = self.loop.call_later(timeout, self._head_late)

    def _head_arrived(self) -> None:
        self._head_due = None

    def _no_more_heads(self) -> None:
        """No head is awaited on this connection again (it streams, or it is gone): its
        timer is freed now, not when it runs out."""
        self._head_due = None
        if self._head_timer is not None:
            self._head_timer.cancel()
            self._head_timer = None

    def _head_late(self) -> None:
        """The timer ran out: close the connection if its head is overdue, else wait on
        for the deadline the requests since have moved (none awaited: the next request's
        end arms a timer again)."""
        self._head_timer = None
        due = self._head_due
        if due is None or self.stream is not None or self.transport.is_closing():
            return
        left = due - self.loop.time()
        if left > 0:
            self._head_timer = self.loop.call_later(left, self._head_late)
        else:
            self.transport.close()

    def on_headers_complete(self) -> None:
        self._head_arrived()
        self._in_head = False
        super().on_headers_complete()
        if self.draining and self.cycle is not None:
            seam.close_after(self.cycle)  # answered, then closed

    def on_response_complete(self) -> None:
        super().on_response_complete()
        if self.transport.is_closing() or self.pipeline:
            return
        if not seam.answered(self.cycle):
            return  # a pipelined request started (a stream, maybe): no head is awaited
        if self._refusal is not None:
            self._refuse_now()  # every request before the refused one is answered
        elif self._body_overdue:
            self.transport.close()  # answered; its body never came
        else:
            self._await_head()  # the next request of a kept-alive connection

    # -- the head's size, its fields, its Host -----------------------------------------

    def on_message_begin(self) -> None:
        super().on_message_begin()
        self._in_head = True
        self._head_bytes = self._head_fields = self._unparsed = 0
        self._progress = True

    def on_url(self, url: bytes) -> None:
        self._progress = True
        self._unparsed = 0
        self._head_bytes += len(url)
        if self._head_bytes > self.max_head_bytes:
            self._refuse(431, heads.too_large(self.max_head_bytes))
        super().on_url(url)

    def on_header(self, name: bytes, value: bytes) -> None:
        self._progress = True
        self._unparsed = 0
        self._head_fields += 1
        self._head_bytes += len(name) + len(value) + 4  # ": " and CRLF
        if self._head_fields > self.max_header_fields:
            self._refuse(431, heads.too_many_fields(self.max_header_fields))
        if self._head_bytes > self.max_head_bytes:
            self._refuse(431, heads.too_large(self.max_head_bytes))
        super().on_header(name, value)

    def _refuse(self, status: int, message: str) -> None:
        """Read no more of this connection's requests: ``status`` once those before are
        answered. Raised from a parser callback, it stops the parser mid-head."""
        self._refusal = heads.answer(status, message, self.server_state.default_headers)
        raise _Refused

    def _refuse_now(self) -> None:
        """Write the refusal, shut the write side, drop what still comes for a moment."""
        answer, self._refusal = self._refusal, b""  # b"": refused, answered
        transport = self.transport
        if answer and not transport.is_closing():
            transport.write(answer)
            if transport.can_write_eof():
                transport.write_eof()
                self.loop.call_later(LINGER, transport.close)
            else:
                transport.close()

    def data_received(self, data: bytes) -> None:
        stream = self.stream
        if stream is not None:
            stream.received += len(data)  # a streaming client has nothing to say; bound it
            if stream.received > _MAX_UPLOAD_WHILE_STREAMING:
                stream.abort("client sent data while streaming")
            return
        if self._refusal is not None:
            return  # refused: what follows is dropped
        self._progress = False
        try:
            if not self.feed(data):
                return
        except httptools.HttpParserCallbackError:
            if self._refusal is None:
                raise
            self._drop_head()
            return
        if self._in_head and not self._progress:  # all of it went to an unfinished line
            self._unparsed += len(data)
            if self._head_bytes + self._unparsed > self.max_head_bytes:
                self._refusal = heads.answer(
                    431, heads.too_large(self.max_head_bytes), self.server_state.default_headers
                )
                self._drop_head()
                return
        if self._body_due is not None and self._body_timer is None:
            self._body_timer = self.loop.call_later(
                self._body_due - self.loop.time(), self._body_late
            )

    def _drop_head(self) -> None:
        """Free the refused head now (the parser's buffers too), and answer it when nothing
        before it is still being answered."""
        self.forget_head()
        self._no_more_heads()
        if seam.answered(self.cycle):
            self._refuse_now()

    # -- the body must come in time -------------------------------------------------------

    def on_message_complete(self) -> None:
        self._body_due = None
        super().on_message_complete()

    def _await_body(self, cycle: seam.Cycle) -> None:
        """``cycle`` starts: its body (if any is still to come) is due within the timeout;
        the timer is armed only when a read ends with the body unfinished."""
        if self.body_timeout and seam.body_to_come(cycle):
            self._body_cycle = cycle
            self._body_due = self.loop.time() + self.body_timeout

    def _body_late(self) -> None:
        """The body timer ran out: 408 if nothing was answered yet, else close once the
        answer under way is done (a stream: its own timeouts end it)."""
        self._body_timer = None
        due, cycle = self._body_due, self._body_cycle
        if due is None or cycle is None or self.stream is not None:
            return
        if self.transport.is_closing():
            return
        left = due - self.loop.time()
        if left > 0:
            self._body_timer = self.loop.call_later(left, self._body_late)
            return
        self._body_due = self._body_cycle = None
        if seam.answered(cycle):
            self.transport.close()
        elif seam.started(cycle):
            self._body_overdue = True
        else:
            answer = heads.answer(
                408, heads.body_late(self.body_timeout), self.server_state.default_headers
            )
            seam.answered_elsewhere(cycle)  # the app reading it is told the client left
            self.transport.write(answer)
            self.transport.close()

    #: Connections this process takes before answering 503 (set from its open-files limit):
    #: past it, a full process says so instead of running out of descriptors.
    max_connections: int = 1 << 30

    def request_ready(self, cycle: seam.Cycle, app: Any) -> None:
        """A request's head is read: refuse it (no valid Host, the process full), or answer
        it by the entrance ``entrance.entrance`` chooses."""
        scope: Any = cycle.scope  # uvicorn's HTTPScope, read as Starlette's Scope
        self._await_body(cycle)
        problem = heads.host_problem(scope["headers"], scope["http_version"])
        if problem is not None:
            seam.close_after(cycle)
            self.run_asgi(cycle, functools.partial(_say, 400, problem))
            return
        if len(self.connections) > self.max_connections:
            self.spawn(self._full(cycle))
            return
        way = entrance(self.runtime, scope, self.native_streams and self.stream is None)
        if way is Entrance.STREAM:
            self.spawn(self._subscribe(cycle))
            return
        if way is Entrance.NATIVE_PUBLISH:
            handlers = self.runtime.serving()
            assert handlers is not None  # the entrance is chosen only while the hub serves
            wrap = functools.partial(_one_write, cycle)
            self.spawn(native_publish.answer(cycle, handlers, wrap))
            return
        if way is Entrance.LEAN_PUBLISH:
            app = functools.partial(_answer_in_one_write, self.runtime.publish_app, cycle)
        elif scope["method"] not in ("GET", "HEAD"):
            app = functools.partial(_unless_gone, app)  # its body may never come
        # ASGI streams may drop a socket that will not drain (asgi_stream.py)
        extensions: dict[str, Any] = scope.setdefault("extensions", {})
        extensions["skipfilter.abort"] = functools.partial(reset, self.transport)
        self.run_asgi(cycle, app)

    async def _full(self, cycle: seam.Cycle) -> None:
        from starlette.responses import PlainTextResponse

        seam.close_after(cycle)
        response = PlainTextResponse(
            f"this hub process holds its maximum of {self.max_connections} connections; "
            "retry shortly (another process or node may have room)\n",
            status_code=503,
            headers={"Retry-After": "1"},
        )
        await response(cycle.scope, cycle.receive, cycle.send)  # type: ignore[arg-type]

    async def _subscribe(self, cycle: seam.Cycle) -> None:
        from starlette.requests import Request
        from starlette.responses import Response

        sessions = self.runtime.sessions()
        assert sessions is not None  # the entrance is chosen only while the hub serves
        await self._forwarded(cycle)
        request = Request(cycle.scope)  # type: ignore[arg-type]
        try:
            plan = await sessions.prepare(request)
            if isinstance(plan, Response):
                refusal = with_cors(plan, sessions.settings, cycle.scope)
                await refusal(cycle.scope, cycle.receive, cycle.send)  # type: ignore[arg-type]
                return
            if self.transport.is_closing():
                return
            await self._stream(cycle, sessions, plan)
        except Exception:
            log.exception("subscribe failed")
            if not seam.started(cycle):
                await cycle.send_500_response()
            else:
                self.transport.abort()

    async def _forwarded(self, cycle: seam.Cycle) -> None:
        """Read a trusted proxy's X-Forwarded-Proto/-For into the scope, as uvicorn does for
        every request the app answers: behind a proxy terminating TLS a stream is https too
        (its origin, its audience, ``--public-urls``), as the publishes beside it are."""
        if not self.config.proxy_headers:
            return
        trusted = self.config.forwarded_allow_ips
        middleware = _forwarding(trusted if isinstance(trusted, str) else tuple(trusted))
        await middleware(cycle.scope, cycle.receive, cycle.send)

    async def _stream(self, cycle: seam.Cycle, sessions: Sessions, plan: Plan) -> None:
        stream = NativeStream(
            sessions.hub, plan.subscriber_id, plan.selectors, plan.grants, self.transport
        )
        refusal = sessions.register(stream, plan)
        if refusal is not None:
            refusal = with_cors(refusal, sessions.settings, cycle.scope)
            await refusal(cycle.scope, cycle.receive, cycle.send)  # type: ignore[arg-type]
            return
        headers = sessions.stream_headers(stream, plan, cors=True)
        await cycle.send(
            {
                "type": "http.response.start",
                "status": 200,
                "headers": [(k.lower().encode(), v.encode()) for k, v in headers.items()],
            }
        )
        self.transport.write(_HEARTBEAT_CHUNK)  # flush the headers now, as EventSource expects
        self.stream = stream
        self._no_more_heads()
        self.hand_over()  # the stream owns the connection now
        if stream.closed:
            return
        if self.flow.write_paused:
            stream.pause()
        sessions.start(stream, plan)

    def pause_writing(self) -> None:
        super().pause_writing()
        if self.stream is not None:
            self.stream.pause()

    def resume_writing(self) -> None:
        super().resume_writing()
        if self.stream is not None:
            self.stream.resume()

    def connection_lost(self, exc: Exception | None) -> None:
        self._no_more_heads()
        self._body_due = self._body_cycle = None
        if self._body_timer is not None:
            self._body_timer.cancel()
            self._body_timer = None
        super().connection_lost(exc)
        if self.stream is not None:
            self.stream.connection_lost()

    def shutdown(self) -> None:
        """The process drains: end the stream, or finish the request under way; an idle
        keep-alive connection stays open a moment, so a request already on its way gets
        an answer (with ``Connection: close``) rather than a reset."""
        if self.stream is not None:
            self.stream.close("server shutdown", "disconnected: the hub is shutting down")
            return
        self.draining = True
        if seam.answered(self.cycle):
            self.loop.call_later(DRAIN_LINGER, self._close_if_idle)
        else:
            seam.close_after(self.cycle)

    def _close_if_idle(self) -> None:
        if seam.answered(self.cycle) and self.stream is None:
            self.transport.close()


class _Refused(Exception):
    """Raised from a parser callback: the head is refused (``HubProtocol._refusal``)."""


async def _unless_gone(app: Any, scope: Any, receive: Any, send: Any) -> None:
    """``app``, quiet when the client is gone before its body is read (``--body-timeout``,
    or it left): nobody is there to answer, and nothing went wrong in the hub."""
    with contextlib.suppress(ClientDisconnect):
        await app(scope, receive, send)


async def _say(status: int, message: str, scope: Any, receive: Any, send: Any) -> None:
    """An ASGI app answering every request ``status`` with ``message``."""
    from starlette.responses import PlainTextResponse

    await PlainTextResponse(message + "\n", status_code=status)(scope, receive, send)


async def _nothing(scope: Any, receive: Any, send: Any) -> None:
    """The app behind ``_forwarding``: the scope it rewrote is all that is wanted."""


@functools.cache
def _forwarding(trusted: str | tuple[str, ...]) -> Any:
    """uvicorn's proxy-headers middleware for ``trusted`` addresses, built once."""
    from uvicorn.middleware.proxy_headers import ProxyHeadersMiddleware

    hosts = trusted if isinstance(trusted, str) else list(trusted)
    return ProxyHeadersMiddleware(_nothing, hosts)


def protocol_for(
    runtime: Runtime, native_streams: bool = True, max_connections: int = 1 << 30
) -> type[HubProtocol]:
    """A HubProtocol class bound to a hub app's ``runtime`` (uvicorn instantiates protocols
    itself); without ``native_streams`` every request, streams included, goes through ASGI."""
    if native_streams:
        seam.require_hooks()
    settings = runtime.settings
    attributes: dict[str, Any] = {
        "runtime": runtime,
        "native_streams": native_streams,
        "max_connections": max_connections,
        "max_head_bytes": settings.max_head_bytes,
        "max_header_fields": settings.max_header_fields,
        "body_timeout": settings.body_timeout,
        "header_timeout": settings.header_timeout,
    }
    return type("BoundHubProtocol", (HubProtocol,), attributes)
