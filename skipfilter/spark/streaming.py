"""Routing as a Structured Streaming job: updates in, deliveries out, exactly once.

Updates come from a streaming DataFrame: one a :class:`~skipfilter.spark.sources.MessageSource`
reads (a directory of JSON-lines or Parquet files, the hub's Redis stream), or the
user's own (Kafka, a table), already in the data contract. Each micro-batch is routed and
handed to a callback (Spark's ``foreachBatch``): every strategy runs, ``broadcast`` inside
the stream's plan (its subscriptions collected and shipped once, at start), the others on
each micro-batch as a plain DataFrame. Spark redoes a batch cut short by a crash with the
same rows and the same batch id, so a callback that writes by batch id -- as the file
output here does, one directory per batch, overwritten when redone -- gets every delivery
exactly once across restarts from the checkpoint. Subscriptions are a snapshot taken at
start; restart the job to pick up new ones.

Contents: :class:`RoutingStream`, :func:`start_routing_stream`, :func:`route_each_batch`,
:func:`write_batches`.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from skipfilter.spark import contract
from skipfilter.spark.routing import route
from skipfilter.spark.session import is_connect, path_exists
from skipfilter.spark.sources import JsonLinesDirectory, MessageSource
from skipfilter.spark.streamable import stream_refusal

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql.streaming.query import StreamingQuery
    from pyspark.sql.streaming.readwriter import DataStreamWriter

__all__ = [
    "BATCH_COLUMN",
    "BatchHandler",
    "RoutingStream",
    "check_trigger",
    "route_each_batch",
    "start_routing_stream",
    "write_batches",
]

#: A ``foreachBatch`` callback: a micro-batch's rows and its id (the same when redone).
BatchHandler = Callable[["DataFrame", int], None]
#: The partition column of the file output: one directory per micro-batch.
BATCH_COLUMN = "batch_id"
_INTERVAL = re.compile(r"\d+(\.\d+)?\s*(millisecond|second|minute|hour|day)s?", re.IGNORECASE)


@dataclass(frozen=True, slots=True)
class RoutingStream:
    """The two queries of a routing stream: deliveries, and reports of malformed updates."""

    deliveries: StreamingQuery
    errors: StreamingQuery

    def process_all_available(self) -> None:
        """Block until every file present now is routed and committed (tests, batch runs)."""
        self.deliveries.processAllAvailable()
        self.errors.processAllAvailable()

    def await_termination(self) -> None:
        """Block until both queries end (``once`` runs) or one fails (its error is raised)."""
        self.deliveries.awaitTermination()
        self.errors.awaitTermination()

    def stop(self) -> None:
        """Stop both queries; a restart from the same checkpoint resumes where they were."""
        self.deliveries.stop()
        self.errors.stop()


def write_batches(path: str, fmt: str = "parquet") -> BatchHandler:
    """A callback writing each micro-batch in ``fmt`` to ``path/batch_id=N``.

    A batch redone after a crash overwrites its own directory, so the output holds each
    row once; ``spark.read.parquet(path)`` reads every batch (with a ``batch_id`` column).
    A reader listing ``path`` while a batch commits may see part of that batch.
    """
    if fmt not in contract.FORMATS:
        raise ValueError(f"unknown format {fmt!r}; expected one of {', '.join(contract.FORMATS)}")
    root = path.rstrip("/")

    def write(batch: DataFrame, batch_id: int) -> None:
        batch.write.mode("overwrite").format(fmt).save(f"{root}/{BATCH_COLUMN}={batch_id}")

    return write


def check_trigger(trigger: str | None, once: bool) -> None:
    """Refuse a trigger interval Spark would not parse, or one given with ``once``."""
    if trigger is None:
        return
    if once:
        raise ValueError("give a trigger interval or once (availableNow), not both")
    if not _INTERVAL.fullmatch(trigger.strip()):
        raise ValueError(
            f"trigger must be an interval such as '10 seconds' or '1 minute', got {trigger!r}"
        )


def _triggered(writer: DataStreamWriter, trigger: str | None, once: bool) -> DataStreamWriter:
    check_trigger(trigger, once)
    if once:
        return writer.trigger(availableNow=True)
    if trigger is not None:
        return writer.trigger(processingTime=trigger.strip())
    return writer


def route_each_batch(
    messages: DataFrame,
    subscriptions: DataFrame,
    handle: BatchHandler,
    checkpoint: str,
    *,
    strategy: str = "broadcast",
    trigger: str | None = None,
    once: bool = False,
    name: str | None = None,
    **options: Any,
) -> StreamingQuery:
    """Route each micro-batch of the streaming ``messages``; ``handle(deliveries, batch_id)``.

    ``messages`` is any streaming DataFrame in the data contract (``check_messages(df).valid``
    for one of your own, e.g. parsed from Kafka); ``subscriptions`` is a valid snapshot.
    ``options`` go to :func:`~skipfilter.spark.routing.route` (``syntax``, ``shards``, ...).
    ``broadcast`` routes inside the stream's plan; the other strategies route each
    micro-batch as a plain DataFrame, with ``subscriptions`` persisted so they are read
    and checked once (``subscriptions.unpersist()`` after the query, if the session lives
    on). ``trigger`` is a processing-time interval (``"10 seconds"``); ``once`` routes what
    is there and stops (``availableNow``); neither: each batch as soon as the last is done.
    A redone batch is handed over again with the same id: write idempotently by it.
    Message ids are not checked for duplicates (``check_ids=True`` checks each micro-batch
    on its own, and a duplicate then fails the query).
    """
    if not messages.isStreaming:
        raise ValueError("route_each_batch needs a streaming DataFrame; use route() for a table")
    check_trigger(trigger, once)
    if strategy == "auto":  # by the subscriptions' size, as route() picks for a table
        from skipfilter.spark.sizing import auto_strategy

        strategy = auto_strategy(subscriptions)
    if stream_refusal(strategy) is None:
        writer = route(messages, subscriptions, strategy, **options).writeStream
        writer = writer.foreachBatch(handle)
    else:
        kept = subscriptions.persist()

        per_batch = {"check_ids": False, **options}  # as in the stream's own plan: unchecked

        def each(batch: DataFrame, batch_id: int) -> None:
            handle(route(batch, _in_session(kept, batch), strategy, **per_batch), batch_id)

        writer = messages.writeStream.foreachBatch(each)
    writer = writer.option("checkpointLocation", checkpoint)
    if name is not None:
        writer = writer.queryName(name)
    return _triggered(writer, trigger, once).start()


def _in_session(df: DataFrame, batch: DataFrame) -> DataFrame:
    """``df`` usable beside ``batch``: on Spark Connect a foreachBatch callback runs on the
    server with a session of its own (the same server session, another client object), and
    DataFrames of two client objects do not mix, so ``df``'s plan is bound to ``batch``'s."""
    if df.sparkSession is batch.sparkSession or not is_connect(batch.sparkSession):
        return df
    from pyspark.sql.connect.dataframe import DataFrame as ConnectDataFrame

    plan: Any = getattr(df, "_plan")  # noqa: B009 -- Connect's plan, no public accessor
    session: Any = batch.sparkSession
    return ConnectDataFrame(plan, session)


def start_routing_stream(
    spark: SparkSession,
    messages: str | MessageSource,
    subscriptions: DataFrame,
    out: str | BatchHandler,
    errors: str,
    checkpoint: str,
    *,
    fmt: str = "parquet",
    syntax: str = "mercure",
    strategy: str = "broadcast",
    shards: int | None = None,
    trigger: str | None = None,
    once: bool = False,
    max_files_per_trigger: int | None = None,
    cache_size: int = 100_000,
) -> RoutingStream:
    """Start routing the updates of ``messages`` to ``subscriptions``.

    ``messages`` is a :class:`~skipfilter.spark.sources.MessageSource`, or a directory
    path read as :class:`~skipfilter.spark.sources.JsonLinesDirectory` (with
    ``max_files_per_trigger``). Deliveries go to ``out``, a path written by
    :func:`write_batches` in ``fmt``, or any :data:`BatchHandler`; malformed updates go to
    ``errors`` (a file sink in ``fmt``); each query checkpoints under ``checkpoint``.
    ``subscriptions`` must already be valid (``read_subscriptions(...).valid``). Every
    strategy runs (see :func:`route_each_batch`, as are ``trigger`` and ``once``).
    """
    if fmt not in contract.FORMATS:
        raise ValueError(f"unknown format {fmt!r}; expected one of {', '.join(contract.FORMATS)}")
    check_trigger(trigger, once)
    if isinstance(messages, str):
        messages = JsonLinesDirectory(messages, max_files_per_trigger)
    if isinstance(out, str) and path_exists(spark, f"{out.rstrip('/')}/_spark_metadata"):
        raise ValueError(
            f"{out} holds Spark's file sink log (_spark_metadata): an older skipfilter stream "
            "wrote it, and readers of it would see none of the micro-batch directories a "
            "stream writes now; route into a new directory, with a new checkpoint"
        )
    checked = messages.read(spark, syntax)
    label = os.path.basename(os.path.normpath(out)) if isinstance(out, str) else "callback"
    handle = write_batches(out, fmt) if isinstance(out, str) else out
    options: dict[str, Any] = {"syntax": syntax, "cache_size": cache_size}
    if shards is not None:
        options["shards"] = shards
    deliveries = route_each_batch(
        checked.valid,
        subscriptions,
        handle,
        os.path.join(checkpoint, "deliveries"),
        strategy=strategy,
        trigger=trigger,
        once=once,
        name=f"skipfilter-deliveries-{label}",
        **options,
    )
    writer = (
        checked.errors.writeStream.format(fmt)
        .outputMode("append")
        .option("checkpointLocation", os.path.join(checkpoint, "errors"))
        .queryName(f"skipfilter-errors-{os.path.basename(os.path.normpath(errors))}")
    )
    try:
        return RoutingStream(deliveries, _triggered(writer, trigger, once).start(errors))
    except BaseException:
        deliveries.stop()
        raise
