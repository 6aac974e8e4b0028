"""Routing as a Structured Streaming job: updates in, deliveries out, exactly once.

Updates come from a :class:`~skipfilter.spark.sources.MessageSource`; by default a
directory into which a hub exports its history as newline-delimited JSON files, each
routed as it lands. Deliveries and error reports go to file sinks with a
checkpoint: Spark's file source log and file sink log make a restarted job neither lose
nor duplicate a delivery (a batch cut short by a crash is redone, and only committed
files are visible to readers of the output). Subscriptions are a snapshot taken at start
and broadcast once; restart the job to pick up new ones.

Contents: :class:`RoutingStream`, :func:`start_routing_stream`.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import TYPE_CHECKING

from skipfilter.spark import contract
from skipfilter.spark.routing import route
from skipfilter.spark.sources import JsonLinesDirectory, MessageSource

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql.streaming.query import StreamingQuery

__all__ = ["RoutingStream", "start_routing_stream"]


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


def start_routing_stream(
    spark: SparkSession,
    messages: str | MessageSource,
    subscriptions: DataFrame,
    out: str,
    errors: str,
    checkpoint: str,
    *,
    fmt: str = "parquet",
    syntax: str = "mercure",
    once: bool = False,
    max_files_per_trigger: int | None = None,
    cache_size: int = 100_000,
) -> RoutingStream:
    """Start routing the updates of ``messages`` to ``subscriptions``.

    ``messages`` is a :class:`~skipfilter.spark.sources.MessageSource`, or a directory
    path read as :class:`~skipfilter.spark.sources.JsonLinesDirectory` (with
    ``max_files_per_trigger``). Deliveries go to ``out`` and malformed updates to
    ``errors`` (both in ``fmt``), each query checkpointing under ``checkpoint``.
    ``subscriptions`` must already be valid (``read_subscriptions(...).valid``). ``once``
    processes what is there and stops (``availableNow``); otherwise updates are routed
    as they arrive.
    """
    if fmt not in contract.FORMATS:
        raise ValueError(f"unknown format {fmt!r}; expected one of {', '.join(contract.FORMATS)}")
    if isinstance(messages, str):
        messages = JsonLinesDirectory(messages, max_files_per_trigger)
    checked = messages.read(spark, syntax)
    deliveries = route(
        checked.valid, subscriptions, "broadcast", syntax=syntax, cache_size=cache_size
    )

    def start(df: DataFrame, path: str, name: str) -> StreamingQuery:
        writer = (
            df.writeStream.format(fmt)
            .outputMode("append")
            .option("checkpointLocation", os.path.join(checkpoint, name))
            .queryName(f"skipfilter-{name}-{os.path.basename(os.path.normpath(path))}")
        )
        writer = writer.trigger(availableNow=True) if once else writer
        return writer.start(path)

    return RoutingStream(
        deliveries=start(deliveries, out, "deliveries"),
        errors=start(checked.errors, errors, "errors"),
    )
