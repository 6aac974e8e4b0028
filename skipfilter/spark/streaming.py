"""Routing as a Structured Streaming job: JSON-lines updates in, deliveries out, exactly once.

A hub exports its history as newline-delimited JSON files into a directory; this job
routes each new file as it lands. Deliveries and error reports go to file sinks with a
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
    messages_dir: str,
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
    """Start routing JSON-lines files appearing in ``messages_dir`` to ``subscriptions``.

    Deliveries go to ``out`` and malformed updates to ``errors`` (both in ``fmt``), each
    query checkpointing under ``checkpoint``. ``subscriptions`` must already be valid
    (``read_subscriptions(...).valid``). ``once`` processes the files present and stops
    (``availableNow``); otherwise new files are picked up as they land.
    """
    if fmt not in contract.FORMATS:
        raise ValueError(f"unknown format {fmt!r}; expected one of {', '.join(contract.FORMATS)}")
    from pyspark.sql import functions as F

    reader = spark.readStream.format("text")
    if max_files_per_trigger is not None:
        reader = reader.option("maxFilesPerTrigger", max_files_per_trigger)
    raw = reader.load(messages_dir).select("value", F.input_file_name().alias("_file"))
    checked = contract.check_json_lines(raw, "messages", syntax)
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
