"""The chaos soak's clients, all in one asyncio process: subscribers that resume wherever
they can, and publishers that record what every publish got back.

A subscriber is an ``asyncio.Protocol`` that decodes the chunked body and the SSE lines by
hand (a few microseconds per event, so a few hundred of them leave the CPU to the hubs).
Whenever its stream ends, or cannot open, it reconnects after a moment to a random node,
sending the id of the last event it got as ``Last-Event-ID``, as EventSource does. Every
update's id is ``u<serial>``; what each subscriber received is kept as serials, in order.

A publisher posts to one node over one keep-alive HTTP/1.1 connection and files every
publish in the ``Ledger`` under one of: acknowledged (200 with its id), refused (a 4xx),
maybe (a 503: not acknowledged, possibly stored), unsent (the connection was refused: it
never reached a hub) or unanswered (sent, then the connection died or timed out).
"""

from __future__ import annotations

import asyncio
import random
import socket
import time
from array import array
from collections import Counter
from collections.abc import Callable, Coroutine, Sequence
from dataclasses import dataclass, field
from typing import Any, cast
from urllib.parse import quote, urlencode

from skipfilter.hub.paths import HUB_PATH

#: Lag histogram resolution (seconds per bucket).
LAG_BUCKET = 0.01

ACKED, REFUSED, MAYBE, UNSENT, UNANSWERED = "acked", "refused", "maybe", "unsent", "unanswered"


class Ledger:
    """Every publish by serial: its topics, node, when it was sent and what came back."""

    def __init__(self) -> None:
        self.topics: list[tuple[str, ...]] = []
        self.node = array("h")
        self.sent = array("d")
        self.answered = array("d")
        self.connected = array("d")  # when the connection the publish went on was opened
        self.outcome: list[str] = []
        self.detail: dict[int, str] = {}

    def open(self, topics: tuple[str, ...], node: int) -> int:
        """File a publish about to be sent; returns its serial."""
        self.topics.append(topics)
        self.node.append(node)
        self.sent.append(time.monotonic())
        self.answered.append(0.0)
        self.connected.append(0.0)
        self.outcome.append("pending")
        return len(self.outcome) - 1

    def close(self, serial: int, outcome: str, detail: str = "") -> None:
        self.outcome[serial] = outcome
        self.answered[serial] = time.monotonic()
        if detail:
            self.detail[serial] = detail[:200]

    def __len__(self) -> int:
        return len(self.outcome)


@dataclass
class Subscriber:
    """One subscriber across all its connections."""

    index: int
    selectors: tuple[str, ...]
    slow: bool = False  # reads at most SLOW_RATE bytes per second
    bulk: bool = False  # follows the bulk topic: the one a stall can fill
    received: array = field(default_factory=lambda: array("q"))  # type: ignore[type-arg]
    foreign: list[bytes] = field(default_factory=list)  # event ids no publisher sent
    last_id: bytes = b""
    connections: int = 0
    refused: int = 0
    resets: int = 0
    connection: SseConnection | None = None
    stalled: bool = False
    marks: list[tuple[int, int]] = field(default_factory=list)  # (events before, port) per stream


class SseConnection(asyncio.Protocol):
    """One HTTP connection of a subscriber: status line, headers, then chunked SSE."""

    #: Bytes per second a slow subscriber reads.
    SLOW_RATE = 4096

    def __init__(self, pool: Subscribers, subscriber: Subscriber, port: int) -> None:
        self.pool = pool
        self.sub = subscriber
        self.port = port
        self.transport: asyncio.Transport | None = None
        self.head = b""
        self.streaming = False
        self.buffer = b""
        self.left = 0  # bytes of the current chunk still to come, with its CRLF
        self.text = b""  # SSE text not yet cut into lines
        self.event_id = subscriber.last_id
        self.has_data = False
        self.ended = False
        self.reset = False

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        stream = cast(asyncio.Transport, transport)  # uvloop's is no subclass, but writes
        self.transport = stream
        sub = self.sub
        query = urlencode([("topic", s) for s in sub.selectors], quote_via=quote)
        resume = b"Last-Event-ID: " + sub.last_id + b"\r\n" if sub.last_id else b""
        stream.write(
            f"GET {HUB_PATH}?{query} HTTP/1.1\r\nHost: 127.0.0.1\r\n".encode()
            + b"Accept: text/event-stream\r\n"
            + resume
            + b"\r\n"
        )

    def data_received(self, data: bytes) -> None:
        if not self.streaming:
            self.head += data
            end = self.head.find(b"\r\n\r\n")
            if end < 0:
                return
            if self.head[9:12] != b"200":
                self.sub.refused += 1
                assert self.transport is not None
                self.transport.close()
                return
            self.streaming = True
            self.sub.connections += 1
            self.sub.marks.append((len(self.sub.received), self.port))
            data, self.head = self.head[end + 4 :], b""
        self._chunks(data)
        if self.sub.slow and data and self.transport is not None:
            self.transport.pause_reading()
            pause = len(data) / self.SLOW_RATE
            self.pool.loop.call_later(pause, self._resume)

    def _resume(self) -> None:
        if self.transport is not None and not self.transport.is_closing() and not self.sub.stalled:
            self.transport.resume_reading()

    def _chunks(self, data: bytes) -> None:
        buffer = self.buffer + data if self.buffer else data
        pos, size = 0, len(buffer)
        while pos < size:
            if self.left == 0:  # a chunk-size line
                eol = buffer.find(b"\r\n", pos)
                if eol < 0:
                    break
                length = int(buffer[pos:eol].split(b";")[0], 16)
                pos = eol + 2
                if length == 0:  # the last chunk: the hub ended the stream
                    self.ended = True
                    pos = size
                    break
                self.left = length + 2
            elif self.left > 2:
                take = min(self.left - 2, size - pos)
                self._sse(buffer[pos : pos + take])
                pos += take
                self.left -= take
            else:
                skip = min(self.left, size - pos)
                pos += skip
                self.left -= skip
        self.buffer = buffer[pos:]

    def _sse(self, piece: bytes) -> None:
        lines = (self.text + piece).split(b"\n")
        self.text = lines.pop()
        for line in lines:
            if not line:
                if self.has_data:
                    self.has_data = False
                    self._event(self.event_id)
            elif line.startswith(b"id: "):
                self.event_id = line[4:]
            elif line.startswith(b"data"):
                self.has_data = True

    def _event(self, event_id: bytes) -> None:
        sub = self.sub
        sub.last_id = event_id
        if event_id[:1] == b"u" and event_id[1:].isdigit():
            serial = int(event_id[1:])
            if self.pool.drop(sub, serial):
                return
            sub.received.append(serial)
            self.pool.delivered(sub, serial)
        else:
            sub.foreign.append(event_id)

    def connection_lost(self, exc: Exception | None) -> None:
        sub = self.sub
        if isinstance(exc, ConnectionResetError):
            sub.resets += 1
            self.reset = True
        if sub.connection is self:
            sub.connection = None
        self.pool.reconnect_later(sub)


class Subscribers:
    """Every subscriber, their connections, and the delivery-lag figures."""

    #: Seconds before a subscriber reconnects (EventSource waits ~3 s; a soak keeps busy).
    RETRY = (0.1, 0.6)

    def __init__(
        self,
        loop: asyncio.AbstractEventLoop,
        ledger: Ledger,
        ports: Callable[[], Sequence[int]],
        rng: random.Random,
    ) -> None:
        self.loop = loop
        self.ledger = ledger
        self.ports = ports
        self.rng = rng
        self.subscribers: list[Subscriber] = []
        self.lag = Counter[int]()  # LAG_BUCKET buckets, ordinary subscribers
        self.slow_lag = 0.0
        self.bulk_lag = 0.0
        #: The longest lag of an update sent in each second (time.monotonic() seconds).
        self.worst: dict[int, float] = {}
        self.received = 0
        self.stopping = False
        self._tasks: set[asyncio.Task[None]] = set()
        self._drop_after: int | None = None
        #: The planted fault: the delivery forgotten, as "u<serial> to subscriber <index>".
        self.dropped = ""

    def plant_drop(self, after: int) -> None:
        """Forget one delivery an ordinary subscriber receives once ``after`` have arrived
        (its cursor moves on, as if the hub had skipped it): the check must catch it."""
        self._drop_after = after

    def drop(self, subscriber: Subscriber, serial: int) -> bool:
        """Whether this delivery is the planted one, to leave unrecorded."""
        if self._drop_after is None or self.received < self._drop_after:
            return False
        if subscriber.slow or subscriber.bulk:
            return False
        self._drop_after = None
        self.dropped = f"u{serial} to subscriber {subscriber.index}"
        return True

    def add(self, subscriber: Subscriber) -> None:
        self.subscribers.append(subscriber)
        self._spawn(self.connect(subscriber))

    def _spawn(self, coroutine: Coroutine[Any, Any, None]) -> None:
        task = self.loop.create_task(coroutine)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def connect(self, subscriber: Subscriber) -> None:
        """Open a stream to a random node (a refused connection retries later)."""
        if self.stopping:
            return
        port = self.rng.choice(list(self.ports()))
        sock = socket.socket()
        sock.setblocking(False)
        if subscriber.bulk:  # a small window: a stalled reader fills the hub's buffers soon
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 8192)
        try:
            await self.loop.sock_connect(sock, ("127.0.0.1", port))
            _, protocol = await self.loop.create_connection(
                lambda: SseConnection(self, subscriber, port), sock=sock
            )
        except OSError:
            sock.close()
            subscriber.refused += 1
            self.reconnect_later(subscriber)
            return
        subscriber.connection = protocol

    def reconnect_later(self, subscriber: Subscriber) -> None:
        if self.stopping:
            return
        delay = self.rng.uniform(*self.RETRY)
        self.loop.call_later(delay, lambda: self._spawn(self.connect(subscriber)))

    def delivered(self, subscriber: Subscriber, serial: int) -> None:
        self.received += 1
        lag = time.monotonic() - self.ledger.sent[serial]
        if subscriber.slow:  # lags by design
            self.slow_lag = max(self.slow_lag, lag)
        elif subscriber.bulk:  # a stall's victims, and the readers of its 5 MB
            self.bulk_lag = max(self.bulk_lag, lag)
        else:
            self.lag[int(lag / LAG_BUCKET)] += 1
            second = int(self.ledger.sent[serial])
            if lag > self.worst.get(second, 0.0):
                self.worst[second] = lag

    def stall(self, subscriber: Subscriber) -> SseConnection | None:
        """Stop reading a subscriber's socket (its hub sees the socket fill up)."""
        connection = subscriber.connection
        if connection is None or connection.transport is None:
            return None
        subscriber.stalled = True
        connection.transport.pause_reading()
        return connection

    def unstall(self, subscriber: Subscriber, connection: SseConnection) -> None:
        subscriber.stalled = False
        if connection.transport is not None and not connection.transport.is_closing():
            connection.transport.resume_reading()

    def close(self) -> None:
        self.stopping = True
        for subscriber in self.subscribers:
            connection = subscriber.connection
            if connection is not None and connection.transport is not None:
                connection.transport.abort()


class Publisher:
    """Publishes to one node, one request at a time on a keep-alive connection."""

    TIMEOUT = 30.0
    CLOSE_TIMEOUT = 5.0
    #: Closes that waited CLOSE_TIMEOUT in vain and were aborted (a soak once hung in one).
    stuck_closes = 0

    def __init__(self, ledger: Ledger, node: int, port: int, token: str) -> None:
        self.ledger = ledger
        self.node = node
        self.port = port
        self.token = token
        self.reader: asyncio.StreamReader | None = None
        self.connected_at = 0.0
        self.writer: asyncio.StreamWriter | None = None

    async def publish(self, topics: tuple[str, ...], data: str = "") -> tuple[int, str]:
        """Send one update; returns its serial and outcome (filed in the ledger)."""
        serial = self.ledger.open(topics, self.node)
        update_id = f"u{serial}"
        form = [("topic", t) for t in topics] + [("id", update_id), ("data", data)]
        body = urlencode(form).encode()
        request = (
            f"POST {HUB_PATH} HTTP/1.1\r\nHost: 127.0.0.1\r\n"
            f"Authorization: Bearer {self.token}\r\n"
            "Content-Type: application/x-www-form-urlencoded\r\n"
            f"Content-Length: {len(body)}\r\n\r\n"
        ).encode() + body
        if self.reader is None or self.reader.at_eof():  # a closed keep-alive: reconnect first
            await self.disconnect()
            try:
                async with asyncio.timeout(self.TIMEOUT):
                    self.reader, self.writer = await asyncio.open_connection("127.0.0.1", self.port)
            except (OSError, TimeoutError) as exc:
                self.ledger.close(serial, UNSENT, repr(exc))
                return serial, UNSENT
            self.connected_at = time.monotonic()
        assert self.writer is not None and self.reader is not None
        self.ledger.connected[serial] = self.connected_at
        try:
            self.writer.write(request)
            async with asyncio.timeout(self.TIMEOUT):
                status, close, text = await _response(self.reader)
        except (OSError, asyncio.IncompleteReadError, TimeoutError, ValueError) as exc:
            await self.disconnect()
            self.ledger.close(serial, UNANSWERED, repr(exc))
            return serial, UNANSWERED
        if close:
            await self.disconnect()
        if status == 200 and text == update_id:
            outcome = ACKED
        elif status == 503 and "nothing was done" not in text:
            outcome = MAYBE  # e.g. Redis failed mid-append: it may be stored
        else:
            outcome = REFUSED
        self.ledger.close(serial, outcome, "" if outcome == ACKED else f"{status}: {text}")
        return serial, outcome

    async def disconnect(self) -> None:
        writer, self.reader, self.writer = self.writer, None, None
        if writer is not None:
            writer.close()  # waits for unsent bytes a hub that reads no more never takes
            try:
                async with asyncio.timeout(self.CLOSE_TIMEOUT):
                    await writer.wait_closed()
            except TimeoutError:
                Publisher.stuck_closes += 1
                writer.transport.abort()
            except OSError:
                pass


async def _response(reader: asyncio.StreamReader) -> tuple[int, bool, str]:
    """Read one HTTP/1.1 response: (status, whether the server closes, body text)."""
    head = await reader.readuntil(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    status = int(lines[0].split(" ", 2)[1])
    headers = {}
    for line in lines[1:]:
        name, _, value = line.partition(":")
        headers[name.strip().lower()] = value.strip()
    if "content-length" in headers:
        body = await reader.readexactly(int(headers["content-length"]))
    elif headers.get("transfer-encoding", "").lower() == "chunked":
        body = b""
        while True:
            size = int((await reader.readuntil(b"\r\n")).split(b";")[0], 16)
            if size == 0:
                await reader.readuntil(b"\r\n")
                break
            body += (await reader.readexactly(size + 2))[:-2]
    else:
        body = await reader.read()
    close = headers.get("connection", "").lower() == "close"
    return status, close, body.decode("utf-8", "replace").strip()
