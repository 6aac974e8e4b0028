"""Who is subscribed, across every node sharing a Redis transport.

Each node keeps its active subscriptions in a Redis hash of its own and refreshes a key
that expires after ``ttl`` seconds; the subscriptions API reads the hashes of every live
node. A node that dies without saying so stops refreshing its key: after at most ``ttl``
plus one reaping period another node publishes the ``active: false`` events of its
subscriptions (once: a lock decides who) and removes its hash.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import uuid
from collections.abc import Callable, Sequence
from typing import Any

from redis.exceptions import RedisError

from skipfilter.hub.update import Update

log = logging.getLogger("skipfilter.hub")


class RedisPresence:
    """This node's subscriptions in ``{prefix}:subs:{node}``; live nodes in ``{prefix}:nodes``
    with a ``{prefix}:node:{node}`` key each that expires unless refreshed."""

    def __init__(
        self,
        client: Any,
        prefix: str,
        publish: Callable[[Sequence[Update]], None],
        make_update: Callable[[dict[str, Any]], Update],
        ttl: float = 15.0,
    ) -> None:
        self.node = uuid.uuid4().hex
        self._client = client
        self._prefix = prefix
        self._publish = publish
        self._make_update = make_update
        self._ttl = ttl
        self._ops: list[tuple[str, str, str | None]] = []  # (op, field, doc)
        self._wake = asyncio.Event()
        self._tasks: list[asyncio.Task[None]] = []
        self.reaped = 0

    def _key(self, kind: str, node: str | None = None) -> str:
        return f"{self._prefix}:{kind}:{node or self.node}"

    async def start(self) -> None:
        await self._beat()
        loop = asyncio.get_running_loop()
        self._tasks = [
            loop.create_task(self._write_forever(), name="skipfilter-presence-write"),
            loop.create_task(self._beat_forever(), name="skipfilter-presence-beat"),
        ]

    # -- this node's subscriptions ------------------------------------------------------

    def add(self, subscriber: str, topic: str, doc: dict[str, Any]) -> None:
        """Record an active subscription (written to Redis in the background, in order)."""
        self._ops.append(("add", json.dumps([subscriber, topic]), json.dumps(doc)))
        self._wake.set()

    def remove(self, subscriber: str, topic: str) -> None:
        """Forget a subscription that ended."""
        self._ops.append(("remove", json.dumps([subscriber, topic]), None))
        self._wake.set()

    async def _write_forever(self) -> None:
        while True:
            await self._wake.wait()
            self._wake.clear()
            await self._flush()

    async def _flush(self) -> None:
        ops, self._ops = self._ops, []
        if not ops:
            return
        key = self._key("subs")
        try:
            async with self._client.pipeline(transaction=False) as pipe:
                for op, field, doc in ops:
                    if op == "add":
                        pipe.hset(key, field, doc)
                    else:
                        pipe.hdel(key, field)
                await pipe.execute()
        except (RedisError, OSError) as exc:
            log.error("presence: %d subscription changes not recorded: %s", len(ops), exc)
            self._ops = ops + self._ops  # keep them, in order, for the next try
            await asyncio.sleep(0.5)
            self._wake.set()

    # -- every node's subscriptions -----------------------------------------------------

    async def docs(self) -> list[dict[str, Any]]:
        """The active subscriptions of every live node."""
        await self._flush()
        client = self._client
        nodes = sorted(await client.smembers(f"{self._prefix}:nodes"))
        docs: list[dict[str, Any]] = []
        for node in nodes:
            if node != self.node and not await client.exists(self._key("node", node)):
                continue  # gone: the reaper will announce its subscriptions' end
            for raw in (await client.hgetall(self._key("subs", node))).values():
                docs.append(json.loads(raw))
        return docs

    async def page(
        self, cursor: tuple[str, int] | None, count: int
    ) -> tuple[list[str], tuple[str, int] | None]:
        """About ``count`` recorded subscriptions (raw JSON) of live nodes (HSCAN may add a
        few, and returns a hash of up to 128 whole) from ``cursor`` ((node, HSCAN cursor);
        None: the start), and the cursor of the rest (None: done). O(count), whatever the
        total."""
        await self._flush()
        client = self._client
        nodes = sorted(await client.smembers(f"{self._prefix}:nodes"))
        node, scan = cursor if cursor is not None else (nodes[0] if nodes else "", 0)
        found: list[str] = []
        for name in [n for n in nodes if n >= node]:
            if name != node:
                scan = 0
            if name != self.node and not await client.exists(self._key("node", name)):
                continue  # gone: the reaper will announce its subscriptions' end
            while len(found) < count:
                scan, fields = await client.hscan(
                    self._key("subs", name), scan, count=count - len(found)
                )
                found.extend(fields.values())
                if scan == 0:
                    break
            if len(found) >= count:
                return found, ((name, scan) if scan else _after(nodes, name))
        return found, None

    async def find(self, subscriber: str, topic: str) -> str | None:
        """The recorded subscription (raw JSON) of ``subscriber`` to ``topic``, if live."""
        await self._flush()
        client = self._client
        field = json.dumps([subscriber, topic])
        for node in sorted(await client.smembers(f"{self._prefix}:nodes")):
            if node != self.node and not await client.exists(self._key("node", node)):
                continue
            raw = await client.hget(self._key("subs", node), field)
            if raw is not None:
                return str(raw)
        return None

    # -- liveness -----------------------------------------------------------------------

    async def _beat(self) -> None:
        async with self._client.pipeline(transaction=False) as pipe:
            pipe.set(self._key("node"), "1", px=int(self._ttl * 1000))
            pipe.sadd(f"{self._prefix}:nodes", self.node)
            await pipe.execute()

    async def _beat_forever(self) -> None:
        period = max(0.1, self._ttl / 3)
        while True:
            await asyncio.sleep(period)
            try:
                await self._beat()
                await self._reap()
            except (RedisError, OSError) as exc:
                log.warning("presence: heartbeat failed: %s", exc)

    async def _reap(self) -> None:
        """Announce the end of the subscriptions of nodes whose key expired."""
        client = self._client
        for node in await client.smembers(f"{self._prefix}:nodes"):
            if node == self.node or await client.exists(self._key("node", node)):
                continue
            lock = self._key("reaping", node)
            if not await client.set(lock, self.node, nx=True, px=int(self._ttl * 2000)):
                continue  # another node is on it
            recorded = await client.hgetall(self._key("subs", node))
            docs = [json.loads(raw) for raw in recorded.values()]
            if docs:
                self._publish([self._make_update(doc) for doc in docs])
            async with client.pipeline(transaction=True) as pipe:
                pipe.delete(self._key("subs", node))
                pipe.srem(f"{self._prefix}:nodes", node)
                await pipe.execute()
            self.reaped += len(docs)
            log.warning("presence: node %s is gone; ended its %d subscriptions", node, len(docs))

    async def stop(self) -> None:
        """Leave: write what is pending, then remove this node's records."""
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        with contextlib.suppress(RedisError, OSError):
            await self._flush()
            async with self._client.pipeline(transaction=True) as pipe:
                pipe.delete(self._key("subs"), self._key("node"))
                pipe.srem(f"{self._prefix}:nodes", self.node)
                await pipe.execute()


def _after(nodes: list[str], name: str) -> tuple[str, int] | None:
    """The cursor of the node after ``name`` (None when it was the last)."""
    later = [n for n in nodes if n > name]
    return (later[0], 0) if later else None
