"""The ``broadcast`` strategy: subscription rows packed on executors, joined to every
message partition by Spark's broadcast join, indexed once per Python worker.

Lazy for a batch ``messages`` (nothing runs until an action); a stream's subscriptions
are a snapshot collected when it is planned. :func:`route_broadcast` is the entry point;
:mod:`skipfilter.spark.routing` picks it.
"""

from __future__ import annotations

import itertools
import pickle
import uuid
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal

import pyarrow as pa  # type: ignore[import-untyped]

from skipfilter.spark import matching
from skipfilter.spark.columns import deliveries_schema
from skipfilter.spark.contract import DELIVERIES, MalformedInput, subscription_problem
from skipfilter.spark.session import is_connect

if TYPE_CHECKING:
    import pandas as pd  # type: ignore[import-untyped]
    from pyspark.sql import DataFrame, SparkSession

__all__ = ["Transport", "route_broadcast"]

Transport = Literal["arrow", "pandas", "rdd"]
_REPORTED = 5  # bad rows named in a MalformedInput message


def _collect(
    subscriptions: DataFrame, syntax: str, own: Mapping[str, str] | None = None
) -> matching.SubscriptionRows:
    """Subscription rows on the driver (streams only); MalformedInput naming the bad ones."""
    table = subscriptions.toArrow() if hasattr(subscriptions, "toArrow") else None
    if table is not None:
        names, topics, allowed = (
            table.column(n).to_pylist() for n in ("subscriber_id", "topics", "allowed")
        )
    else:  # pyspark < 4
        rows = subscriptions.collect()
        names = [row[0] for row in rows]
        topics = [row[1] for row in rows]
        allowed = [row[2] for row in rows]
    _check_rows((names, topics, allowed), syntax, own)
    return names, topics, allowed


def _check_rows(
    rows: matching.SubscriptionRows, syntax: str, names: Mapping[str, str] | None = None
) -> None:
    """Raise MalformedInput naming up to five bad subscription rows, if any."""
    bad = []
    for name, selectors, authorized in zip(*rows, strict=True):
        row = {"subscriber_id": name, "topics": selectors, "allowed": authorized}
        problem = subscription_problem(row, syntax)
        if problem is not None:
            bad.append((name if isinstance(name, str) else None, problem))
    if bad:
        raise MalformedInput.of_rows("subscriptions", bad, names, shown=_REPORTED).marked()


def route_broadcast(
    messages: DataFrame,
    subscriptions: DataFrame,
    *,
    syntax: str = "mercure",
    cache_size: int = 100_000,
    transport: Transport = "arrow",
    carry: Sequence[str] = (),
    names: Mapping[str, Mapping[str, str]] | None = None,
) -> DataFrame:
    """Broadcast the subscription rows; route message partitions through a per-worker index.

    Lazy: nothing runs until an action. The subscription rows are packed and checked on
    the executors (one pickled chunk per subscription partition), broadcast by Spark's
    own broadcast join to the first message row of every partition, and indexed once per
    Python worker; a bad subscription row fails the action naming it. A streaming
    ``messages`` is the exception: its subscriptions are a snapshot collected now, once.

    ``transport`` is how batches reach Python: ``arrow`` (mapInArrow, the fastest by
    measurement, see docs/spark.md), ``pandas`` (mapInPandas) or ``rdd`` (mapPartitions;
    not lazy: turning the plan into an RDD prepares it, which starts the broadcast).
    Runtime: one pass over the subscriptions, each chunk copied to every message task,
    one index build per Python worker, then one TopicIndex.match per message.
    """
    spark = messages.sparkSession
    if transport == "rdd" and is_connect(spark):
        raise ValueError("transport 'rdd' needs a classic session: Spark Connect has no RDDs")
    carry = tuple(carry)
    if carry and transport != "arrow":
        raise ValueError(f"carry needs transport 'arrow', not {transport!r}")
    schema = deliveries_schema(messages, carry)
    if messages.isStreaming:
        return _route_shipped(messages, subscriptions, syntax, cache_size, transport, carry, names)
    joined = _with_subscriptions(messages, subscriptions, syntax, names)

    if transport == "arrow":

        def route_arrow(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
            current = _PartitionRouter(syntax, cache_size, carry, names)
            for batch in batches:
                ids, topics, private, keys, tokens, rows = (
                    batch.column(n).to_pylist() for n in _COLUMNS
                )
                yield from current.feed(ids, topics, private, keys, tokens, rows, extra=batch)
            yield from current.finish()

        return joined.mapInArrow(route_arrow, schema)

    if transport == "pandas":

        def route_pandas(frames: Iterator[pd.DataFrame]) -> Iterator[pd.DataFrame]:
            import pandas

            current = _PartitionRouter(syntax, cache_size)
            for frame in frames:
                columns = [
                    frame["id"].tolist(),
                    [list(topics) for topics in frame["topics"]],
                    frame["private"].tolist(),
                    *([None if pandas.isna(v) else v for v in frame[n]] for n in _PREAMBLE),
                ]
                for out in current.feed(*columns):
                    yield out.to_pandas()
            for out in current.finish():
                yield out.to_pandas()

        return joined.mapInPandas(route_pandas, DELIVERIES)

    if transport == "rdd":

        def route_rows(rows: Iterable[Any]) -> Iterable[tuple[str, str]]:
            current = _PartitionRouter(syntax, cache_size)
            rows = iter(rows)
            while chunk := [tuple(row) for row in itertools.islice(rows, 10_000)]:
                yield from _pairs(current.feed(*(list(c) for c in zip(*chunk, strict=True))))
            yield from _pairs(current.finish())

        columns = joined.select(*_COLUMNS)
        return spark.createDataFrame(columns.rdd.mapPartitions(route_rows), DELIVERIES)

    raise ValueError(f"unknown transport {transport!r}; expected arrow, pandas or rdd")


#: Columns the broadcast join adds to messages: set on a partition's first row only.
_PREAMBLE = ("_sf_key", "_sf_token", "_sf_rows")
_COLUMNS = ("id", "topics", "private", *_PREAMBLE)
_LOW_BITS = (1 << 33) - 1  # monotonically_increasing_id: partition << 33 | row in partition


def _with_subscriptions(
    messages: DataFrame,
    subscriptions: DataFrame,
    syntax: str,
    names: Mapping[str, Mapping[str, str]] | None = None,
) -> DataFrame:
    """``messages`` with the pickled subscription chunks joined to each partition's first row.

    A broadcast hash join streams the messages in place (no shuffle), so every partition
    starts with its first message repeated once per chunk, then the other messages.
    """
    from pyspark.sql import functions as F

    own = (names or {}).get("subscriptions")

    def pack(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        names: list[str] = []
        topics: list[list[Any]] = []
        allowed: list[list[Any] | None] = []
        for batch in batches:
            names.extend(batch.column("subscriber_id").to_pylist())
            topics.extend(batch.column("topics").to_pylist())
            allowed.extend(batch.column("allowed").to_pylist())
        rows = (names, topics, allowed)
        _check_rows(rows, syntax, own)
        payload = pickle.dumps(rows, protocol=pickle.HIGHEST_PROTOCOL)
        yield pa.RecordBatch.from_pydict(
            {"_sf_key": [0], "_sf_token": [uuid.uuid4().hex], "_sf_rows": [payload]},
            schema=_CHUNK_SCHEMA,
        )

    chunks = subscriptions.mapInArrow(pack, "_sf_key int, _sf_token string, _sf_rows binary")
    first = F.monotonically_increasing_id().bitwiseAND(F.lit(_LOW_BITS)) == 0
    keyed = messages.withColumn("_sf_key", F.when(first, F.lit(0)))
    return keyed.join(F.broadcast(chunks), "_sf_key", "left")


_CHUNK_SCHEMA = pa.schema(
    [("_sf_key", pa.int32()), ("_sf_token", pa.string()), ("_sf_rows", pa.binary())]
)


class _PartitionRouter:
    """Routes one partition: its leading chunk rows build the index, then messages flow.

    The first message of a partition arrives once per subscription chunk (the join
    repeats it); it is held until the last chunk is in, then routed once.
    """

    def __init__(
        self,
        syntax: str,
        cache_size: int,
        carry: Sequence[str] = (),
        names: Mapping[str, Mapping[str, str]] | None = None,
    ) -> None:
        self._syntax = syntax
        self._cache_size = cache_size
        self._carry = tuple(carry)
        self._names = names
        self._first_extra: pa.RecordBatch | None = None
        self._tokens: list[str] = []
        self._chunks: list[bytes] = []
        self._first: tuple[Any, Any, Any] | None = None
        self._router: matching.Router | None = None

    def feed(
        self,
        ids: list[Any],
        topics: list[Any],
        private: list[Any],
        keys: list[Any],
        tokens: list[Any],
        payloads: list[Any],
        extra: pa.RecordBatch | None = None,
    ) -> Iterator[pa.RecordBatch]:
        """Deliveries of one batch of joined rows (none while chunks are still arriving);
        ``extra`` is the batch itself, for its ``_file`` and carried columns."""
        if not ids:
            return
        if self._router is None:
            if self._first is None and keys[0] is None:
                raise RuntimeError(
                    "broadcast: a partition's first row carries no subscriptions; the plan "
                    "did not stream the messages through a broadcast join"
                )
            start = 0
            while start < len(keys) and keys[start] is not None:
                if tokens[start] is not None:  # null: the subscriptions have no partitions
                    self._tokens.append(tokens[start])
                    self._chunks.append(payloads[start])
                start += 1
            if self._first is None:
                self._first = (ids[0], topics[0], private[0])
                self._first_extra = None if extra is None else extra.slice(0, 1)
            if start == len(ids):  # more chunk rows may follow in the next batch
                return
            ids, topics, private = (
                [first, *rest[start:]]
                for first, rest in zip(self._first, (ids, topics, private), strict=True)
            )
            if extra is not None and self._first_extra is not None:
                extra = pa.concat_batches([self._first_extra, extra.slice(start)])
        yield from self._route(ids, topics, private, extra)

    def finish(self) -> Iterator[pa.RecordBatch]:
        """The held first message, when the partition held nothing after its chunks."""
        if self._router is None and self._first is not None:
            ids, topics, private = ([value] for value in self._first)
            yield from self._route(ids, topics, private, self._first_extra)

    def _route(
        self,
        ids: list[Any],
        topics: list[Any],
        private: list[Any],
        extra: pa.RecordBatch | None = None,
    ) -> Iterator[pa.RecordBatch]:
        if self._router is None:
            chunks = self._chunks
            self._router = matching.router_for(
                ("broadcast", *sorted(self._tokens)),
                lambda: _join_chunks(chunks),
                self._syntax,
                self._cache_size,
                self._names,
            )
            self._chunks = []
        files = carried = None
        if extra is not None:
            if "_file" in extra.schema.names:
                files = extra.column("_file").to_pylist()
            carried = {name: extra.column(name) for name in self._carry}
        out = self._router.route(ids, topics, private, files, carried)
        if out.num_rows:
            yield out


def _join_chunks(chunks: list[bytes]) -> matching.SubscriptionRows:
    """The subscription rows of all chunks, in one list per column."""
    names: list[str] = []
    topics: list[list[Any]] = []
    allowed: list[list[Any] | None] = []
    for chunk in chunks:
        part: matching.SubscriptionRows = pickle.loads(chunk)
        names.extend(part[0])
        topics.extend(part[1])
        allowed.extend(part[2])
    return names, topics, allowed


def _route_shipped(
    messages: DataFrame,
    subscriptions: DataFrame,
    syntax: str,
    cache_size: int,
    transport: Transport,
    carry: tuple[str, ...] = (),
    names: Mapping[str, Mapping[str, str]] | None = None,
) -> DataFrame:
    """The streaming form: subscriptions collected once now, shipped with the function."""
    if transport != "arrow":
        raise ValueError(f"transport {transport!r}: a stream is routed through arrow only")
    own = (names or {}).get("subscriptions")
    rows = _ship(messages.sparkSession, _collect(subscriptions, syntax, own))
    key = ("broadcast", uuid.uuid4().hex)  # names these rows in the workers' caches

    def route_arrow(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        current = matching.router_for(key, rows, syntax, cache_size, names)
        for batch in batches:
            out = current.route_batch(batch, carry)
            if out.num_rows:
                yield out

    return messages.mapInArrow(route_arrow, deliveries_schema(messages, carry))


def _ship(spark: SparkSession, rows: matching.SubscriptionRows) -> matching.RowSource:
    """How executors get the subscription rows: a broadcast variable, or the closure on Connect.

    Spark Connect has no broadcast variables; there the rows travel pickled inside the
    function, in the plan. Spark sends a stage's tasks one broadcast copy of their
    closure, so each executor still receives them once per stage; the bytes are
    unpickled only when a worker process builds its index, not once per task.
    """
    if is_connect(spark):
        payload = pickle.dumps(rows, protocol=pickle.HIGHEST_PROTOCOL)
        return lambda: pickle.loads(payload)
    shipped = spark.sparkContext.broadcast(rows)
    return lambda: shipped.value


def _pairs(batches: Iterator[pa.RecordBatch]) -> Iterator[tuple[str, str]]:
    for out in batches:
        yield from zip(out.column(0).to_pylist(), out.column(1).to_pylist(), strict=True)
