"""One pipelined connection to the Redis primary, for the transport's two hot paths.

Every publish crosses Redis twice (its append, then this node's tail reading it back), so
what one round trip costs the event loop is what a publish costs. redis-py spends a
connection-pool checkout, a retry wrapper, a task wake-up per reply and its command
packing in Python on each; a ``Lane`` writes a batch of commands in one ``write`` as soon
as it is asked, even while earlier batches wait for their replies (Redis answers in
order), and hiredis parses the replies inside ``data_received``, which hands each batch's
replies to its callback at once. redis-py still does everything else (start-up, replays, lookups,
presence), and a lane takes its address from the same URL: one server, or the primary the
sentinels name.

A lane that fails (refused, closed, silent past a batch's deadline) fails every batch
waiting on it with redis-py's ConnectionError or TimeoutError, worded as redis-py words
them, so the transport says "may or may not have been stored" exactly when a batch went
out; the transport opens a new lane for its next batch.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import ssl
import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, cast

import hiredis
from redis.asyncio.connection import parse_url
from redis.asyncio.sentinel import Sentinel
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import ResponseError
from redis.exceptions import TimeoutError as RedisTimeoutError

from skipfilter.hub.transports.redis.url import RedisTarget

log = logging.getLogger("skipfilter.hub")

#: Seconds to connect (and to say hello) before giving up on a server.
CONNECT_TIMEOUT = 2.0
#: What a batch's callback receives: its replies in order (Redis's refusals in place, as
#: ResponseError instances), or the lane's failure.
Replies = list[Any] | BaseException
Callback = Callable[[Replies], None]


def pack(commands: Sequence[Sequence[Any]]) -> bytes:
    """Commands in the Redis protocol (RESP arrays of bulk strings), ready to write."""
    out: list[bytes] = []
    for command in commands:
        out.append(b"*%d\r\n" % len(command))
        for arg in command:
            if isinstance(arg, str):
                arg = arg.encode()
            elif isinstance(arg, int):
                arg = b"%d" % arg
            out.append(b"$%d\r\n" % len(arg))
            out.append(arg)
            out.append(b"\r\n")
    return b"".join(out)


@dataclass(slots=True)
class _Batch:
    count: int
    callback: Callback
    deadline: float
    replies: list[Any]


class Lane(asyncio.Protocol):
    """A connection whose batches of commands are answered, in order, through callbacks.
    Event loop only."""

    def __init__(self, where: str) -> None:
        self.where = where  # "host:port", for messages
        self._reader = hiredis.Reader(replyError=ResponseError)
        self._waiting: deque[_Batch] = deque()
        self._transport: asyncio.Transport | None = None
        self._timer: asyncio.TimerHandle | None = None
        self.failure: BaseException | None = None  # set once the lane is unusable

    @property
    def usable(self) -> bool:
        return self.failure is None and self._transport is not None

    @property
    def waiting(self) -> int:
        """Batches sent and not answered yet."""
        return len(self._waiting)

    @property
    def idle(self) -> bool:
        """No batch waits for its replies."""
        return not self._waiting

    def send(self, commands: Sequence[Sequence[Any]], callback: Callback, timeout: float) -> None:
        """Write ``commands`` now; ``callback`` gets their replies, or the lane's failure
        (then, synchronously, when the lane has already failed)."""
        if self.failure is not None or self._transport is None:
            callback(self.failure or RedisConnectionError(f"no connection to {self.where}"))
            return
        self._waiting.append(_Batch(len(commands), callback, time.monotonic() + timeout, []))
        self._transport.write(pack(commands))
        if self._timer is None:
            self._arm()

    async def call(self, commands: Sequence[Sequence[Any]], timeout: float) -> list[Any]:
        """``send``, awaited: the replies, or the lane's failure raised."""
        done: asyncio.Future[Replies] = asyncio.get_running_loop().create_future()

        def answer(replies: Replies) -> None:
            if not done.done():
                done.set_result(replies)

        self.send(commands, answer, timeout)
        replies = await done
        if isinstance(replies, BaseException):
            raise replies
        return replies

    def close(self, reason: BaseException | None = None) -> None:
        """Drop the connection; batches still waiting get ``reason`` (or a closed error)."""
        self._fail(reason or RedisConnectionError(f"connection to {self.where} closed"))

    # -- asyncio.Protocol -----------------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self._transport = cast(asyncio.Transport, transport)  # uvloop's are not subclasses

    def data_received(self, data: bytes) -> None:
        reader = self._reader
        try:
            reader.feed(data)
            while True:
                reply = reader.gets()
                if reply is False:
                    break
                if not self._waiting:
                    raise RedisConnectionError(f"{self.where} sent a reply nobody asked for")
                batch = self._waiting[0]
                batch.replies.append(reply)
                if len(batch.replies) == batch.count:
                    self._waiting.popleft()
                    _answer(batch.callback, batch.replies)
        except hiredis.ProtocolError as exc:
            self._fail(RedisConnectionError(f"protocol error from {self.where}: {exc}"))
        except RedisConnectionError as exc:
            self._fail(exc)

    def connection_lost(self, exc: Exception | None) -> None:
        reason = f": {exc}" if exc else ""
        self._fail(
            RedisConnectionError(f"Connection to {self.where} lost while reading a reply{reason}")
        )

    # -- failures -------------------------------------------------------------------------

    def _arm(self) -> None:
        if self._waiting and self.failure is None:
            delay = max(0.0, self._waiting[0].deadline - time.monotonic())
            self._timer = asyncio.get_running_loop().call_later(delay, self._check)
        else:
            self._timer = None

    def _check(self) -> None:
        self._timer = None
        if self._waiting and self._waiting[0].deadline <= time.monotonic():
            self._fail(RedisTimeoutError(f"Timeout reading from {self.where}"))
        else:
            self._arm()

    def _fail(self, reason: BaseException) -> None:
        if self.failure is None:
            self.failure = reason
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if self._transport is not None:
            self._transport.abort()
        waiting, self._waiting = self._waiting, deque()
        for batch in waiting:
            _answer(batch.callback, self.failure)


def _answer(callback: Callback, replies: Replies) -> None:
    """Hand replies over; a callback's bug is logged, not let loose on the connection."""
    try:
        callback(replies)
    except Exception:
        log.exception("redis transport: handling a reply failed")


async def connect(target: RedisTarget, sentinel: Sentinel | None) -> Lane:
    """A lane to the server ``target`` names (over Sentinel, the primary the sentinels
    name now, checked to be one). Raises redis-py's ConnectionError ("Error connecting
    to ...": nothing was sent) when it cannot."""
    loop = asyncio.get_running_loop()
    options: dict[str, Any] = {"db": target.db}
    if target.sentinel:
        assert sentinel is not None
        try:
            host, port = await sentinel.discover_master(target.service)
        except Exception as exc:  # MasterNotFoundError, or the sentinels unreachable
            said = target.scrub(str(exc).partition(" : <")[0])  # not redis-py's client repr
            raise RedisConnectionError(f"Error connecting to the primary: {said}") from exc
        options.update(host=host, port=port, username=target.username, password=target.password)
        tls = _tls({}) if target.tls else None
    else:
        options.update(parse_url(target.connect_url))
        tls = _tls(options) if target.connect_url.startswith("rediss:") else None
    where = options.get("path") or f"{options.get('host', 'localhost')}:{options.get('port', 6379)}"
    lane = Lane(where)
    try:
        async with asyncio.timeout(CONNECT_TIMEOUT):
            if options.get("path"):
                await loop.create_unix_connection(lambda: lane, options["path"])
            else:
                host = options.get("host", "localhost")
                port = int(options.get("port", 6379))
                await loop.create_connection(lambda: lane, host, port, ssl=tls)
            hello: list[list[Any]] = []
            if options.get("password"):
                user = [options["username"]] if options.get("username") else []
                hello.append(["AUTH", *user, options["password"]])
            if int(options.get("db") or 0):
                hello.append(["SELECT", int(options["db"])])
            if target.sentinel:
                hello.append(["ROLE"])
            answers = await lane.call(hello, CONNECT_TIMEOUT) if hello else []
    except (OSError, TimeoutError, RedisConnectionError) as exc:
        lane.close()
        raise RedisConnectionError(f"Error connecting to {where}: {exc}") from exc
    refused = next((a for a in answers if isinstance(a, BaseException)), None)
    if refused is None and target.sentinel and answers[-1][0] != b"master":
        refused = RedisConnectionError(f"{where} is not the primary (a failover under way?)")
    if refused is not None:
        lane.close()
        raise RedisConnectionError(f"Error connecting to {where}: {refused}")
    return lane


def _tls(options: dict[str, Any]) -> ssl.SSLContext:
    """The TLS context of a ``rediss://`` URL (``ssl_cert_reqs=none`` skips verification,
    ``ssl_ca_certs`` names the authorities)."""
    context = ssl.create_default_context(cafile=options.get("ssl_ca_certs"))
    if str(options.get("ssl_cert_reqs", "required")).lower() in ("none", "optional"):
        with contextlib.suppress(ValueError):
            context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    return context
