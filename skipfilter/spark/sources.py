"""Where a routing stream reads its updates: the interface, and the JSON-lines directory source.

A source turns a SparkSession into a *streaming* DataFrame of updates already split by
the data contract (:class:`~skipfilter.spark.contract.Checked`). Exactly-once delivery
rests on the source being replayable from Spark's checkpointed offsets: the directory
source's offsets are its file log; a source reading the hub's Redis Stream uses
stream ids (:class:`~skipfilter.spark.redis_source.RedisStreamSource`).

Contents: :class:`MessageSource`, :class:`JsonLinesDirectory`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from skipfilter.spark import contract

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = ["JsonLinesDirectory", "MessageSource"]


class MessageSource(Protocol):
    """A replayable stream of updates, as ``start_routing_stream`` reads them."""

    def read(self, spark: SparkSession, syntax: str) -> contract.Checked:
        """The streaming updates, valid rows (:data:`~contract.MESSAGES`) apart from errors."""
        ...


@dataclass(frozen=True, slots=True)
class JsonLinesDirectory:
    """Newline-delimited JSON files dropped (atomically: write, then rename) into ``path``.

    ``max_files_per_trigger`` bounds a micro-batch (None: every new file at once).
    """

    path: str
    max_files_per_trigger: int | None = None

    def read(self, spark: SparkSession, syntax: str) -> contract.Checked:
        """Each new file's lines, parsed and checked in Python, with the file they came from."""
        from pyspark.sql import functions as F

        reader = spark.readStream.format("text")
        if self.max_files_per_trigger is not None:
            reader = reader.option("maxFilesPerTrigger", self.max_files_per_trigger)
        raw = reader.load(self.path).select("value", F.input_file_name().alias("_file"))
        return contract.check_json_lines(raw, "messages", syntax)
