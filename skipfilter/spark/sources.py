"""Where a routing stream reads its updates: the interface, and file directories.

A source turns a SparkSession into a *streaming* DataFrame of updates already split by
the data contract (:class:`~skipfilter.spark.contract.Checked`). Exactly-once delivery
rests on the source being replayable from Spark's checkpointed offsets: a directory
source's offsets are its file log; a source reading the hub's Redis Stream uses
stream ids (:class:`~skipfilter.spark.redis_source.RedisStreamSource`).

Contents: :class:`MessageSource`, :class:`FileDirectory`, :class:`JsonLinesDirectory`,
:data:`STREAM_FORMATS`.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

import pyarrow as pa  # type: ignore[import-untyped]

from skipfilter.spark import contract

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = ["STREAM_FORMATS", "FileDirectory", "JsonLinesDirectory", "MessageSource"]

#: Formats a directory stream reads: the batch readers' (JSON lines, Parquet).
STREAM_FORMATS = ("json", "parquet")
_BINARY_FILE = "path string, modificationTime timestamp, length long, content binary"
_MESSAGE_FIELDS = ("id", "topics", "private")
_REQUIRED = ("id", "topics")
_ROWS = 10_000  # rows of a parsed file checked per Arrow batch


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
        """Each new file's lines, parsed and checked in Python, with the file they came from.

        Lines travel as bytes, so one that is not UTF-8 (a Parquet file dropped here by
        mistake has many) is that row's error, not the end of the stream."""
        from pyspark.sql import functions as F

        reader = spark.readStream.format("text")
        if self.max_files_per_trigger is not None:
            reader = reader.option("maxFilesPerTrigger", self.max_files_per_trigger)
        raw = reader.load(self.path).select(
            F.col("value").cast("binary").alias("value"), F.input_file_name().alias("_file")
        )
        return contract.check_json_lines(raw, "messages", syntax)


@dataclass(frozen=True, slots=True)
class FileDirectory:
    """Files in ``fmt`` (one of :data:`STREAM_FORMATS`) dropped atomically into ``path``.

    JSON lines are read line by line, as :class:`JsonLinesDirectory`. Parquet needs no
    schema: each file is read whole by an executor (Spark's ``binaryFile`` source) and
    parsed with pyarrow, so a file that is not Parquet, or lacks ``id`` or ``topics``, is
    one error row naming it and the stream goes on; a file must fit in an executor's
    memory (binaryFile's limit: 2 GB). ``max_files_per_trigger`` bounds a micro-batch.
    """

    path: str
    fmt: str = "json"
    max_files_per_trigger: int | None = None

    def __post_init__(self) -> None:
        if self.fmt not in STREAM_FORMATS:
            raise ValueError(
                f"a stream reads {', '.join(STREAM_FORMATS)} files, not {self.fmt!r}; "
                "for another format read the stream yourself (spark.readStream) and route "
                "it with skipfilter.spark.streaming.route_each_batch"
            )

    def read(self, spark: SparkSession, syntax: str) -> contract.Checked:
        """The new files' rows checked by the data contract; unreadable files as error rows."""
        if self.fmt == "json":
            return JsonLinesDirectory(self.path, self.max_files_per_trigger).read(spark, syntax)
        reader = spark.readStream.format("binaryFile").schema(_BINARY_FILE)
        if self.max_files_per_trigger is not None:
            reader = reader.option("maxFilesPerTrigger", self.max_files_per_trigger)
        files = reader.load(self.path).select("path", "content")
        fmt = self.fmt

        def parse(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
            return _checked_files(batches, fmt, syntax)

        checked = files.mapInArrow(parse, contract._checked_schema("messages", syntax))
        return contract._split(checked, "messages")


def _checked_files(
    batches: Iterator[pa.RecordBatch], fmt: str, syntax: str
) -> Iterator[pa.RecordBatch]:
    """Rows of each file, checked; a file that cannot be read is one error row naming why."""
    schema = contract._arrow("messages", syntax)
    for batch in batches:
        paths, contents = batch.column("path"), batch.column("content")
        for i in range(batch.num_rows):
            path = str(paths[i].as_py())
            try:
                table, names = _table(fmt, contents[i].as_buffer())
            except (pa.ArrowException, OSError, ValueError) as error:
                yield _file_error(schema, path, f"not a readable {fmt} file: {error}")
                continue
            missing = [name for name in _REQUIRED if name not in names]
            if missing:
                found = ", ".join(names) or "none"
                reason = f"missing column(s) {', '.join(missing)}; found {found}"
                yield _file_error(schema, path, reason)
                continue
            table = table.append_column("_file", pa.array([path] * table.num_rows, pa.string()))
            rows = table.to_batches(max_chunksize=_ROWS)
            yield from contract._checked_batches(iter(rows), "messages", syntax, False)


def _table(fmt: str, content: pa.Buffer) -> tuple[pa.Table, list[str]]:
    """The contract's columns of one whole file in ``fmt`` (those it has), and all its
    column names."""
    import pyarrow.parquet as pq  # type: ignore[import-untyped]

    assert fmt == "parquet", fmt
    file = pq.ParquetFile(pa.BufferReader(content))
    names = file.schema_arrow.names
    return file.read(columns=[n for n in _MESSAGE_FIELDS if n in names]), names


def _file_error(schema: pa.Schema, path: str, reason: str) -> pa.RecordBatch:
    """The error row of a whole file: no row id, no record, the reason and the file."""
    return pa.RecordBatch.from_pylist([{"_error": reason, "_file": path}], schema=schema)
