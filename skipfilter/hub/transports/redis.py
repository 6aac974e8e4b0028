"""The shared transport: one Redis Stream holds every node's updates in one total order.

A publish is appended with ``XADD`` (by a small Lua script that also indexes the update's
id for ``Last-Event-ID`` and trims the stream to the history size) and acknowledged once
Redis has it. Every node tails the stream with ``XREAD`` and delivers what it reads, its
own publishes included, to its own subscribers: all nodes deliver the same updates in the
same order. An update's position is its stream id, ``(milliseconds, sequence)``.

Publishes that arrive together go to Redis in one pipelined round trip. When Redis is
unreachable, publishes fail with TransportUnavailable (a 503) and nothing is
acknowledged; the tail retries with backoff and resumes after the last id it delivered.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qs, urlsplit, urlunsplit

import redis.asyncio as aioredis
from redis.exceptions import RedisError

from skipfilter.hub.transports.base import (
    Deliver,
    Keep,
    Position,
    Transport,
    TransportUnavailable,
)
from skipfilter.hub.transports.redis_presence import RedisPresence
from skipfilter.hub.update import Entry, Update, http_chunk

log = logging.getLogger("skipfilter.hub")

#: XADD the update, index its id, trim the oldest entries (and their ids) past ARGV[3].
_APPEND = """
local id = redis.call('XADD', KEYS[1], '*', 'u', ARGV[1], 'i', ARGV[2])
redis.call('HSET', KEYS[2], ARGV[2], id)
local over = redis.call('XLEN', KEYS[1]) - tonumber(ARGV[3])
if over > 0 then
  for _, old in ipairs(redis.call('XRANGE', KEYS[1], '-', '+', 'COUNT', over)) do
    local fields = old[2]
    for j = 1, #fields, 2 do
      if fields[j] == 'i' and redis.call('HGET', KEYS[2], fields[j + 1]) == old[1] then
        redis.call('HDEL', KEYS[2], fields[j + 1])
      end
    end
    redis.call('XDEL', KEYS[1], old[1])
  end
end
return id
"""
#: Entries read per XREAD, and how long one blocks (ms) before the tail checks in again.
_TAIL_COUNT = 512
_TAIL_BLOCK_MS = 1000
#: The tail stops reading while this many entries wait for fan-out on this node.
_BACKLOG = 4096


def stream_position(stream_id: str) -> tuple[int, int]:
    """``"1700000000000-3"`` as ``(1700000000000, 3)``: positions compare as tuples."""
    milliseconds, _, sequence = stream_id.partition("-")
    return int(milliseconds), int(sequence or 0)


def stream_id(position: tuple[int, int]) -> str:
    """The inverse of ``stream_position``."""
    return f"{position[0]}-{position[1]}"


def _encode(update: Update) -> str:
    return json.dumps(
        [update.id, update.topics, update.data, update.private, update.type, update.retry]
    )


def _decode(raw: str) -> Update:
    id_, topics, data, private, type_, retry = json.loads(raw)
    return Update(id_, tuple(topics), data, bool(private), type_, retry)


def _readable(sid: str, fields: Any) -> Update | None:
    """The update an entry holds, or None (logged) for an entry no hub wrote: one stray
    XADD into the stream must not stop a node's tail or its start."""
    try:
        return _decode(fields["u"])
    except (KeyError, TypeError, ValueError) as exc:
        log.warning("redis transport: entry %s is not a hub update (%r); skipped", sid, exc)
        return None


def _entry(sid: str, fields: Any, seq: int = 0) -> Entry | None:
    update = _readable(sid, fields)
    if update is None:
        return None
    return Entry(seq, update, http_chunk(update.encode()), position=stream_position(sid))


@dataclass(slots=True)
class _Append:
    updates: Sequence[Update]
    chunks: Sequence[bytes]
    done: asyncio.Future[Entry] | None


class RedisTransport(Transport):
    """Updates in the Redis Stream ``{prefix}:updates`` (``?prefix=`` in the URL, default
    ``skipfilter``), their ids in the hash ``{prefix}:ids``; the newest ``history_size``
    kept."""

    def __init__(self, url: str, history_size: int = 100_000) -> None:
        parts = urlsplit(url)
        prefix = parse_qs(parts.query).get("prefix", ["skipfilter"])[0]
        self.url = urlunsplit(parts._replace(query=""))
        self.prefix = prefix
        self._stream = f"{prefix}:updates"
        self._ids = f"{prefix}:ids"
        self._keep = history_size
        self._pending: list[_Append] = []
        self._wake = asyncio.Event()
        # redis-py's annotations cannot say what decode_responses=True returns: Any
        self._client: Any = None
        self._tail_client: Any = None
        self._tasks: list[asyncio.Task[None]] = []
        self._deliver: Deliver | None = None
        self._last = "0-0"  # the stream id of the newest entry delivered
        self._seq = 0
        self.connected = False
        self.delivered = 0
        self._closing = False

    def _connect(self) -> Any:
        return aioredis.from_url(
            self.url, decode_responses=True, socket_connect_timeout=2, socket_timeout=10
        )

    async def start(self, loop: asyncio.AbstractEventLoop, deliver: Deliver) -> None:
        self._deliver = deliver
        self._client = self._connect()
        self._tail_client = self._connect()
        self._script = self._client.register_script(_APPEND)
        try:
            newest = await self._client.xrevrange(self._stream, "+", "-", count=1)
        except RedisError as exc:
            for client in (self._client, self._tail_client):  # a later start makes new ones
                with contextlib.suppress(Exception):
                    await client.aclose()
            raise TransportUnavailable(f"Redis at {self.url} is unavailable: {exc}") from exc
        self.connected = True
        if newest:
            sid, fields = newest[0]
            self._last = sid
            self.start_position = stream_position(sid)
            update = _readable(sid, fields)
            if update is not None:
                self.last_id_at_start = update.id
        self._tasks = [
            loop.create_task(self._append_forever(), name="skipfilter-redis-append"),
            loop.create_task(self._tail_forever(), name="skipfilter-redis-tail"),
        ]

    # -- appends ------------------------------------------------------------------------

    def append(
        self, updates: Sequence[Update], chunks: Sequence[bytes], done: asyncio.Future[Entry] | None
    ) -> None:
        self._pending.append(_Append(updates, chunks, done))
        self._wake.set()

    async def _append_forever(self) -> None:
        while True:
            await self._wake.wait()
            self._wake.clear()
            group, self._pending = self._pending, []
            if group:
                await self._store(group)

    async def _store(self, group: list[_Append]) -> None:
        assert self._client is not None
        try:
            async with self._client.pipeline(transaction=False) as pipe:
                for job in group:
                    for update in job.updates:
                        await self._script(
                            keys=[self._stream, self._ids],
                            args=[_encode(update), update.id, self._keep],
                            client=pipe,
                        )
                ids = await pipe.execute()
        except (RedisError, OSError) as exc:
            self.connected = False
            failure = TransportUnavailable(f"the Redis transport is unavailable: {exc}")
            log.error("redis transport: %d updates not stored: %s", len(group), exc)
            for job in group:
                if job.done is None:
                    continue
                if not job.done.done():
                    job.done.set_exception(failure)
            return
        self.connected = True
        self.commits += 1
        stored = iter(ids)
        for job in group:
            entry = None
            for update, chunk in zip(job.updates, job.chunks, strict=True):
                entry = Entry(0, update, chunk, position=stream_position(next(stored)))
            if job.done is not None and entry is not None and not job.done.done():
                job.done.set_result(entry)

    # -- the tail -----------------------------------------------------------------------

    async def _tail_forever(self) -> None:
        assert self._tail_client is not None and self._deliver is not None
        pause = 0.05
        while not self._closing:
            while self.backlog() > _BACKLOG:
                await asyncio.sleep(0.01)
            try:
                answer = await self._tail_client.xread(
                    {self._stream: self._last}, count=_TAIL_COUNT, block=_TAIL_BLOCK_MS
                )
            except (RedisError, OSError) as exc:
                if self._closing:  # redis-py may turn our cancellation into an error
                    return
                if self.connected:
                    log.error("redis transport: tail lost Redis (%s); retrying", exc)
                self.connected = False
                await asyncio.sleep(pause)
                pause = min(2.0, pause * 2)
                continue
            if not self.connected:
                log.warning("redis transport: tail reconnected after %s", self._last)
            self.connected = True
            pause = 0.05
            for _, items in answer or ():
                entries = []
                for sid, fields in items:
                    self._last = sid
                    entry = _entry(sid, fields, self._seq + 1)
                    if entry is not None:
                        self._seq += 1
                        entries.append(entry)
                if entries:
                    self.delivered += len(entries)
                    self._deliver(entries, None)

    # -- reads --------------------------------------------------------------------------

    async def read(
        self,
        after: Position | None,
        before: Position | None,
        upto: Position | None,
        max_rows: int,
        max_bytes: int,
        keep: Keep | None = None,  # every row comes back whole: its data is in one field
    ) -> list[Entry]:
        assert self._client is not None
        low = f"({stream_id(after)}" if after is not None else "-"
        high = "+"
        if before is not None:
            high = f"({stream_id(before)}"
        if upto is not None and (before is None or upto < before):
            high = stream_id(upto)
        try:
            items = await self._client.xrange(self._stream, low, high, count=max_rows)
        except (RedisError, OSError) as exc:
            raise TransportUnavailable(f"the Redis transport is unavailable: {exc}") from exc
        entries: list[Entry] = []
        size = 0
        for sid, fields in items:
            entry = _entry(str(sid), fields)
            if entry is None:
                continue
            entries.append(entry)
            size += entry.size
            if size >= max_bytes:
                break
        return entries

    async def lookup(self, update_id: str) -> Entry | None:
        assert self._client is not None
        try:
            sid = await self._client.hget(self._ids, update_id)
            if sid is None:
                return None
            items = await self._client.xrange(self._stream, sid, sid, count=1)
        except (RedisError, OSError) as exc:
            raise TransportUnavailable(f"the Redis transport is unavailable: {exc}") from exc
        if not items:
            return None
        found, fields = items[0]
        return _entry(found, fields)

    async def count(self) -> int:
        assert self._client is not None
        return int(await self._client.xlen(self._stream))

    async def close(self) -> None:
        self._closing = True
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        if self._pending:
            group, self._pending = self._pending, []
            await self._store(group)
        for client in (self._client, self._tail_client):
            if client is not None:
                with contextlib.suppress(Exception):
                    await client.aclose()

    def presence(
        self,
        publish: Callable[[Sequence[Update]], None],
        make_update: Callable[[dict[str, Any]], Update],
        ttl: float,
    ) -> RedisPresence:
        """Subscriptions of every node, in Redis next to the stream (call after ``start``)."""
        return RedisPresence(self._client, self.prefix, publish, make_update, ttl)

    def stats(self) -> dict[str, Any]:
        """Counters for metrics."""
        return {"connected": self.connected, "delivered": self.delivered, "last": self._last}
