"""Executor-side routing: a TopicIndex built from subscription rows, fed Arrow batches of messages.

A TopicIndex holds a lock and cannot be pickled, and building one costs about as much as
matching thousands of messages, so executors receive the subscription *rows* and build
the index once per Python worker process (cached by broadcast id), or once per shard.

Contents:

- :class:`Router` -- subscription rows -> index; routes message batches to delivery batches.
- :func:`router_for` -- the cached Router of a broadcast variable in this worker process.
- :func:`route_sharded` -- routes a partition of shard-sorted subscription and message rows.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any

import numpy as np
import pyarrow as pa  # type: ignore[import-untyped]

from skipfilter.errors import InvalidTopic
from skipfilter.index import TopicIndex
from skipfilter.spark.contract import (
    TYPED_SYNTAX,
    MalformedInput,
    as_selector,
    message_problem,
    subscription_problem,
)

__all__ = [
    "DELIVERY_SCHEMA",
    "Router",
    "RowSource",
    "SubscriptionRows",
    "route_sharded",
    "router_for",
]

DELIVERY_SCHEMA = pa.schema([("message_id", pa.string()), ("subscriber_id", pa.string())])

#: (subscriber ids, selector lists, allowed lists or None) -- what executors are sent. In
#: the typed syntax a selector is a ``{"match", "match_type"}`` dict (see contract.MATCHER).
SubscriptionRows = tuple[list[str], list[list[Any]], list[list[Any] | None]]

#: Called by an executor for the subscription rows, once per index it builds.
RowSource = Callable[[], SubscriptionRows]

_CACHED_ROUTERS = 4  # per worker process; a streaming job keeps using one
_routers: OrderedDict[Any, Router] = OrderedDict()
_routers_lock = threading.Lock()


class Router:
    """Routes messages to subscriber ids through one TopicIndex.

    Subscription row ``i`` gets index id ``i``. A subscriber id on several rows (several
    subscriptions) gets each message at most once: deliveries are distinct pairs.
    Not thread-safe to build; :meth:`route` is as thread-safe as TopicIndex.match.
    """

    def __init__(
        self,
        rows: SubscriptionRows,
        syntax: str,
        cache_size: int = 100_000,
        columns: Mapping[str, Mapping[str, str]] | None = None,
    ) -> None:
        """Index ``rows``; raise MalformedInput naming the first bad row. O(rows x selectors).

        ``columns``: per source, contract column names -> the inputs' own, for reports."""
        names, topics, allowed = rows
        self._columns = dict(columns or {})
        self._index = TopicIndex(syntax, cache_size)
        typed = syntax == TYPED_SYNTAX
        for i, (name, selectors, authorized) in enumerate(zip(names, topics, allowed, strict=True)):
            try:
                if not isinstance(name, str) or not name:
                    raise TypeError
                if typed and selectors is not None:
                    selectors = [as_selector(entry) for entry in selectors]
                    authorized = [as_selector(entry) for entry in authorized or ()]
                sid = self._index.subscribe(selectors, authorized or None)
            except (TypeError, ValueError):  # InvalidSelector is a ValueError
                row = {"subscriber_id": name, "topics": selectors, "allowed": authorized}
                problem = subscription_problem(row, syntax) or "unusable row"
                raise MalformedInput.for_row(
                    "subscriptions", problem, row=name, names=self._columns.get("subscriptions")
                ).marked() from None
            assert sid == i
        self._names = pa.array(names, pa.string())
        first: dict[str, int] = {}
        canonical = [first.setdefault(name, i) for i, name in enumerate(names)]
        self._canonical = (
            np.asarray(canonical, dtype=np.uint64) if len(first) < len(names) else None
        )

    def route(
        self,
        ids: Sequence[str],
        topics: Sequence[Sequence[str]],
        private: Sequence[bool | None],
        files: Sequence[str | None] | None = None,
        carried: Mapping[str, pa.Array] | None = None,
    ) -> pa.RecordBatch:
        """Deliveries of the messages given as columns; raise MalformedInput on a bad message
        (naming its file from ``files``, when given). Each delivery carries its message's
        values of the ``carried`` columns (name -> an array aligned with ``ids``)."""
        rows, subscribers = self._hits(ids, topics, private, files)
        messages = pa.array(ids, pa.string()).take(rows)
        if not carried:
            return pa.RecordBatch.from_arrays([messages, subscribers], schema=DELIVERY_SCHEMA)
        columns = [messages, subscribers, *(values.take(rows) for values in carried.values())]
        return pa.RecordBatch.from_arrays(columns, names=[*DELIVERY_SCHEMA.names, *carried])

    def _hits(
        self,
        ids: Sequence[str],
        topics: Sequence[Sequence[str]],
        private: Sequence[bool | None],
        files: Sequence[str | None] | None,
    ) -> tuple[pa.Array, pa.Array]:
        """(message row index, subscriber id) of each delivery, in message order."""
        counts = np.zeros(len(ids), dtype=np.int64)
        found: list[np.ndarray[Any, np.dtype[np.uint64]]] = []
        canonical = self._canonical
        match = self._index.match
        for i, (message_topics, is_private) in enumerate(zip(topics, private, strict=True)):
            try:
                if not message_topics or ids[i] is None:
                    raise TypeError
                hits = match(message_topics, bool(is_private))
            except (TypeError, AttributeError, InvalidTopic):
                row = {"id": ids[i], "topics": message_topics, "private": is_private}
                problem = message_problem(row, self._index.syntax) or "unusable row"
                raise MalformedInput.for_row(
                    "messages",
                    problem,
                    row=ids[i] if isinstance(ids[i], str) else None,
                    file=files[i] if files is not None else None,
                    names=self._columns.get("messages"),
                ).marked() from None
            if not hits:
                continue
            sids = np.frombuffer(hits.to_array(), dtype=np.uint64)
            if canonical is not None:
                sids = np.unique(canonical[sids])
            counts[i] = len(sids)
            found.append(sids)
        if not found:
            return pa.array([], pa.int64()), pa.array([], pa.string())
        subscribers = self._names.take(pa.array(np.concatenate(found)))
        return pa.array(np.repeat(np.arange(len(ids)), counts)), subscribers

    def route_batch(self, batch: pa.RecordBatch, carry: Sequence[str] = ()) -> pa.RecordBatch:
        """Deliveries of a batch with columns ``id``, ``topics``, ``private`` and optionally
        ``_file``; each delivery carries its message's ``carry`` columns, taken, not joined."""
        files = batch.column("_file").to_pylist() if "_file" in batch.schema.names else None
        return self.route(
            batch.column("id").to_pylist(),
            batch.column("topics").to_pylist(),
            batch.column("private").to_pylist(),
            files,
            {name: batch.column(name) for name in carry},
        )


def router_for(
    key: Any,
    rows: RowSource,
    syntax: str,
    cache_size: int,
    columns: Mapping[str, Mapping[str, str]] | None = None,
) -> Router:
    """The Router cached under ``key`` in this process, built from ``rows()`` on first use."""
    with _routers_lock:
        router = _routers.get(key)
        if router is not None:
            _routers.move_to_end(key)
            return router
    router = Router(rows(), syntax, cache_size, columns)  # outside the lock: building takes a while
    with _routers_lock:
        _routers[key] = router
        while len(_routers) > _CACHED_ROUTERS:
            _routers.popitem(last=False)
    return router


def route_sharded(
    batches: Iterable[pa.RecordBatch],
    syntax: str,
    cache_size: int,
    carry: Sequence[str] = (),
    columns: Mapping[str, Mapping[str, str]] | None = None,
) -> Iterator[pa.RecordBatch]:
    """Route a partition sorted by (shard, kind): each shard's subscriptions, then its messages.

    Rows have columns ``shard``, ``kind`` (0 subscription, 1 message), ``id``, ``selectors``
    and ``allowed`` (subscriptions), ``topics``, ``private``, ``_file`` and the ``carry``
    columns (messages). One index is built per shard, from the rows before its first
    message, so a partition holds one shard's index at a time.
    """
    shard: int | None = None
    rows: SubscriptionRows = ([], [], [])
    router: Router | None = None
    for batch in batches:
        shards = batch.column("shard").to_pylist()
        kinds = batch.column("kind").to_pylist()
        start = 0
        size = batch.num_rows
        while start < size:
            row_shard, kind = shards[start], kinds[start]
            end = start + 1
            while end < size and shards[end] == row_shard and kinds[end] == kind:
                end += 1
            if row_shard != shard:
                shard, rows, router = row_shard, ([], [], []), None
            part = batch.slice(start, end - start)
            if kind == 0:
                rows[0].extend(part.column("id").to_pylist())
                rows[1].extend(part.column("selectors").to_pylist())
                rows[2].extend(part.column("allowed").to_pylist())
            else:
                if router is None:
                    router = Router(rows, syntax, cache_size, columns)
                    rows = ([], [], [])
                out = router.route_batch(part, carry)
                if out.num_rows:
                    yield out
            start = end
