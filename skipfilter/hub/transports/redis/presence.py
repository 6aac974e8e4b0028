"""Who is subscribed, across every node sharing a Redis transport.

Each node keeps its active subscriptions in a Redis hash of its own and refreshes a key
that expires after ``ttl`` seconds; the subscriptions API reads the hashes of every live
node. A silent node (its key expired) is not taken for dead at once: a paused process (a
long GC pause, SIGSTOP, a frozen VM) is silent too, and ending its subscriptions would be
a lie its subscribers never see. The evidence that a node is gone is its own connection
to Redis, which carries the node's name: a process that dies closes it (the kernel does),
a paused one keeps it open. So a silent node is reaped once its connection is gone, or
once it has been silent for ``PATIENCE`` times ``ttl`` (a machine that vanished keeps its
connection open until Redis's TCP keepalive notices). Then another node publishes the
``active: false`` events of its subscriptions (once: a lock decides who) and removes its
hash. A node that finds it was reaped anyway re-announces every subscription it holds.

Presence records are input too: a record no hub wrote (not JSON, not a subscription, a
key of the wrong type) is skipped with a warning, and nothing stops the heartbeat.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import uuid
from collections.abc import Callable, Sequence
from typing import Any

from redis.exceptions import RedisError, ResponseError

from skipfilter.hub.transports.presence_records import SkippedRecords
from skipfilter.hub.update import Update

log = logging.getLogger("skipfilter.hub")

#: A silent node whose connection is still open is reaped after this many ``ttl``.
PATIENCE = 10
#: The fields every recorded subscription has (as strings; the rest is the hub's to check).
_DOC_FIELDS = ("id", "type", "subscriber")


class RedisPresence:
    """This node's subscriptions in ``{prefix}:subs:{node}``; live nodes in ``{prefix}:nodes``
    with a ``{prefix}:node:{node}`` key each that expires unless refreshed.

    ``make_update(doc)`` turns a recorded subscription document into its subscription
    event (``active`` as the document says).
    """

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
        self._beat_client = _named_connection(client, self._key("node"))
        self._records: dict[str, str] = {}  # field -> doc: what this node holds
        self._ops: list[tuple[str, str, str | None]] = []  # (op, field, doc)
        self._wake = asyncio.Event()
        self._tasks: list[asyncio.Task[None]] = []
        self._announced = False  # this node's key and membership were written once
        self._client_list = True  # CLIENT LIST allowed (else: keys are the only evidence)
        self._skipped = SkippedRecords("node")
        self.reaped = 0
        self.reannounced = 0

    def _key(self, kind: str, node: str | None = None) -> str:
        return f"{self._prefix}:{kind}:{node or self.node}"

    async def start(self) -> None:
        """Announce this node (or leave it to the heartbeat while Redis does not answer)."""
        try:
            await self._beat()
        except (RedisError, OSError) as exc:
            log.warning("presence: first heartbeat failed (%s); retrying", exc)
        loop = asyncio.get_running_loop()
        self._tasks = [
            loop.create_task(self._write_forever(), name="skipfilter-presence-write"),
            loop.create_task(self._beat_forever(), name="skipfilter-presence-beat"),
        ]

    # -- this node's subscriptions ------------------------------------------------------

    def add(self, field: str, doc: dict[str, Any]) -> None:
        """Record an active subscription under ``field`` (its id: unique per subscriber and
        matcher), written to Redis in the background, in order."""
        recorded = json.dumps(doc)
        self._records[field] = recorded
        self._ops.append(("add", field, recorded))
        self._wake.set()

    def remove(self, field: str) -> None:
        """Forget a subscription that ended."""
        self._records.pop(field, None)
        self._ops.append(("remove", field, None))
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

    async def _nodes(self) -> list[str]:
        return sorted(await self._client.smembers(f"{self._prefix}:nodes"))

    async def _alive(self, nodes: list[str]) -> list[str]:
        """The nodes not known to be gone: this one, those whose key is fresh, and silent
        ones whose connection to Redis is still open (paused) for less than the patience."""
        alive, silent = [], []
        for node in nodes:
            if node == self.node or await self._client.exists(self._key("node", node)):
                alive.append(node)
            else:
                silent.append(node)
        if silent:
            connected = await self._connections()
            patience = PATIENCE * self._ttl
            alive += [n for n in silent if connected.get(self._key("node", n), patience) < patience]
        return alive

    async def _connections(self) -> dict[str, float]:
        """Seconds each named connection of this prefix's nodes has been idle."""
        if not self._client_list:
            return {}
        try:
            clients = await self._client.client_list(_type="normal")
        except ResponseError as exc:  # CLIENT LIST not allowed: keys are all we have
            log.warning("presence: cannot list Redis clients (%s); a silent node is gone", exc)
            self._client_list = False
            return {}
        prefix = f"{self._prefix}:node:"
        idle: dict[str, float] = {}
        for client in clients:
            name = client.get("name") or ""
            if name.startswith(prefix):
                idle[name] = min(idle.get(name, float("inf")), float(client.get("idle", 0)))
        return idle

    async def _recorded(self, node: str) -> list[dict[str, Any]]:
        """The subscription documents a node recorded, skipping (with a warning, once)
        anything that is not one."""
        try:
            raw = await self._client.hgetall(self._key("subs", node))
        except ResponseError as exc:  # not a hash: nothing a hub wrote
            self._skipped.warn(node, "", f"its record is not a hash ({exc})")
            return []
        docs = []
        for field, value in raw.items():
            doc = _subscription(value)
            if doc is None:
                self._skipped.warn(node, field, f"not a subscription document: {value[:80]!r}")
            else:
                docs.append(doc)
        return docs

    async def page(
        self, cursor: tuple[str, int] | None, count: int
    ) -> tuple[list[str], tuple[str, int] | None]:
        """About ``count`` recorded subscriptions (raw JSON) of nodes presumed alive (HSCAN
        may add a few, and returns a hash of up to 128 whole) from ``cursor`` ((node, HSCAN
        cursor); None: the start), and the cursor of the rest (None: done). O(count),
        whatever the total."""
        await self._flush()
        nodes = await self._nodes()
        alive = set(await self._alive(nodes))
        node, scan = cursor if cursor is not None else (nodes[0] if nodes else "", 0)
        found: list[str] = []
        for name in [n for n in nodes if n >= node]:
            if name != node:
                scan = 0
            if name not in alive:
                continue  # gone: the reaper will announce its subscriptions' end
            while len(found) < count:
                try:
                    scan, fields = await self._client.hscan(
                        self._key("subs", name), scan, count=count - len(found)
                    )
                except ResponseError as exc:  # not a hash: nothing a hub wrote
                    self._skipped.warn(name, "", f"its record is not a hash ({exc})")
                    scan, fields = 0, {}
                found.extend(fields.values())
                if scan == 0:
                    break
            if len(found) >= count:
                return found, ((name, scan) if scan else _after(nodes, name))
        return found, None

    async def find(self, field: str) -> str | None:
        """The subscription recorded under ``field`` (raw JSON), if its node is presumed
        alive."""
        await self._flush()
        for node in await self._alive(await self._nodes()):
            try:
                raw = await self._client.hget(self._key("subs", node), field)
            except ResponseError as exc:
                self._skipped.warn(node, "", f"its record is not a hash ({exc})")
                continue
            if raw is not None:
                return str(raw)
        return None

    # -- liveness -----------------------------------------------------------------------

    async def _beat(self) -> None:
        """Refresh this node's key on its own named connection; if this node had been
        taken for gone (and removed), write its subscriptions back and re-announce them."""
        async with self._beat_client.pipeline(transaction=True) as pipe:
            pipe.set(self._key("node"), "1", px=max(1, int(self._ttl * 1000)))
            pipe.sadd(f"{self._prefix}:nodes", self.node)
            _, added = await pipe.execute()
        if added and self._announced:
            await self._reannounce()
        self._announced = True

    async def _reannounce(self) -> None:
        records = dict(self._records)
        async with self._client.pipeline(transaction=True) as pipe:
            pipe.delete(self._key("subs"))
            if records:
                pipe.hset(self._key("subs"), mapping=records)
            await pipe.execute()
        docs = [json.loads(doc) for doc in records.values()]
        announced = self._skipped.events(self.node, self._make_update, docs)
        if announced:
            self._publish(announced)
        self.reannounced += len(docs)
        log.warning(
            "presence: this node had been taken for gone; re-announced its %d subscriptions",
            len(docs),
        )

    async def _beat_forever(self) -> None:
        period = max(0.1, self._ttl / 3)
        while True:
            await asyncio.sleep(period)
            try:
                await self._beat()
            except (RedisError, OSError) as exc:
                log.warning("presence: heartbeat failed: %s", exc)
                continue
            try:
                await self._reap()
            except (RedisError, OSError) as exc:
                log.warning("presence: reaping failed: %s", exc)
            except Exception:  # whatever a stray record holds, the heartbeat goes on
                log.exception("presence: reaping failed")

    async def _reap(self) -> None:
        """Announce the end of the subscriptions of nodes that are gone."""
        client = self._client
        nodes = await self._nodes()
        alive = set(await self._alive(nodes))
        for node in nodes:
            if node in alive:
                continue
            lock = self._key("reaping", node)
            if not await client.set(lock, self.node, nx=True, px=int(self._ttl * 2000)):
                continue  # another node is on it
            docs = await self._recorded(node)
            ended = self._skipped.events(
                node, self._make_update, [{**doc, "active": False} for doc in docs]
            )
            if ended:
                self._publish(ended)
            async with client.pipeline(transaction=True) as pipe:
                pipe.delete(self._key("subs", node))
                pipe.srem(f"{self._prefix}:nodes", node)
                await pipe.execute()
            self.reaped += len(docs)
            log.warning(
                "presence: node %r is gone; ended its %d subscriptions", node[:80], len(docs)
            )

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
        with contextlib.suppress(Exception):
            await self._beat_client.aclose()


def _subscription(raw: str) -> dict[str, Any] | None:
    """A recorded subscription document, or None for anything else."""
    try:
        doc = json.loads(raw)
    except ValueError:
        return None
    if not isinstance(doc, dict) or not all(isinstance(doc.get(f), str) for f in _DOC_FIELDS):
        return None
    return doc


def _named_connection(client: Any, name: str) -> Any:
    """A client of the same server on one pooled connection of its own, named ``name``
    (what ``CLIENT LIST`` shows): it stays open as long as this process lives."""
    from redis.asyncio import ConnectionPool, Redis

    pool = client.connection_pool
    kwargs = {**pool.connection_kwargs, "client_name": name}
    named = ConnectionPool(connection_class=pool.connection_class, max_connections=1, **kwargs)
    return Redis(connection_pool=named)


def _after(nodes: list[str], name: str) -> tuple[str, int] | None:
    """The cursor of the node after ``name`` (None when it was the last)."""
    later = [n for n in nodes if n > name]
    return (later[0], 0) if later else None
