"""The hub's Redis Stream as a streaming source: live updates routed exactly once.

``skipfilter hub --transport redis://...`` appends every acknowledged update to the stream
``{prefix}:updates`` (field ``u``: the JSON array ``[id, topics, data, private, type,
retry]``). :class:`RedisStreamSource` reads that stream through PySpark's Python data
source API: an offset is a stream id, a micro-batch is the entries after its start id up
to its end id (``XRANGE``, read in pages on an executor), so a batch replayed after a crash
reads the same entries, and Spark's checkpoint plus the file sink make each delivery
appear once. Entries are handed to the data contract as JSON lines, so a malformed entry
is reported like a malformed line of a file.

The stream keeps the hub's newest ``--history-size`` entries. A job that falls further
behind (the last entry it read has been trimmed) would silently skip updates; instead its
next batch fails, naming the range, unless ``fail_on_data_loss=False`` (then it reads on
from the oldest entry left, as Kafka's source does with ``failOnDataLoss=false``).

Contents: :class:`RedisStreamSource`, :class:`HubStreamDataSource`, :func:`entry_line`.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qs, urlsplit, urlunsplit

from pyspark.sql.datasource import DataSource, DataSourceStreamReader, InputPartition

from skipfilter.errors import SkipFilterError
from skipfilter.spark import contract

if TYPE_CHECKING:
    from pyspark.sql import SparkSession
    from pyspark.sql.streaming.datasource import ReadLimit

__all__ = ["HubStreamDataSource", "RedisStreamSource", "StreamDataLost", "entry_line"]

FORMAT = "skipfilter-hub-redis"
_PAGE = 1_000  # entries per XRANGE call on an executor
_START = "0-0"  # before every stream id


class StreamDataLost(SkipFilterError):
    """Entries a batch must read were trimmed from the stream before it read them."""


def split_url(url: str) -> tuple[str, str]:
    """``(connection URL, stream key)`` from ``redis://HOST:PORT/DB[?prefix=NAME]``."""
    parts = urlsplit(url)
    if parts.scheme not in ("redis", "rediss", "unix"):
        raise ValueError(f"not a Redis URL: {url!r} (expected redis://HOST:PORT/DB)")
    prefix = parse_qs(parts.query).get("prefix", ["skipfilter"])[0]
    return urlunsplit(parts._replace(query="")), f"{prefix}:updates"


def _position(stream_id: str) -> tuple[int, int]:
    milliseconds, _, sequence = stream_id.partition("-")
    return int(milliseconds), int(sequence or 0)


def entry_line(fields: dict[str, str]) -> str:
    """One stream entry as the JSON line of a message row (``id``, ``topics``, ``private``,
    ``data``); anything unreadable is passed on as is, for the contract to report."""
    raw = fields.get("u")
    try:
        id_, topics, data, private, *_ = json.loads(raw or "")
    except (ValueError, TypeError):
        return json.dumps({"_unreadable_entry": raw})
    return json.dumps({"id": id_, "topics": topics, "private": private, "data": data})


def _client(url: str) -> Any:
    import redis

    return redis.Redis.from_url(url, decode_responses=True, socket_connect_timeout=5)


@dataclass(frozen=True)
class _Range(InputPartition):
    """The entries after ``start`` up to and including ``end``."""

    start: str
    end: str


class _Reader(DataSourceStreamReader):
    def __init__(self, options: dict[str, str]) -> None:
        options = {key.lower(): value for key, value in options.items()}  # Spark's are
        self.url, self.key = split_url(options["url"])  # case-insensitive
        self.max_rows = int(options.get("maxrecordsperbatch", "0"))
        self.fail_on_loss = options.get("failondataloss", "true").lower() != "false"

    def initialOffset(self) -> dict[str, str]:
        return {"id": _START}

    def getDefaultReadLimit(self) -> ReadLimit:
        from pyspark.sql.streaming.datasource import ReadAllAvailable, ReadMaxRows

        return ReadMaxRows(self.max_rows) if self.max_rows > 0 else ReadAllAvailable()

    def latestOffset(self, start: dict[str, str], limit: ReadLimit) -> dict[str, str]:
        from pyspark.sql.streaming.datasource import ReadMaxRows

        client = _client(self.url)
        if isinstance(limit, ReadMaxRows):
            page = client.xrange(self.key, min=f"({start['id']}", count=limit.max_rows)
            return {"id": page[-1][0]} if page else start
        newest = client.xrevrange(self.key, count=1)
        if not newest or _position(newest[0][0]) <= _position(start["id"]):
            return start
        return {"id": newest[0][0]}

    def partitions(self, start: dict[str, str], end: dict[str, str]) -> list[_Range]:
        if start["id"] != _START:
            self._check_not_trimmed(start["id"])
        return [_Range(start["id"], end["id"])]

    def _check_not_trimmed(self, after: str) -> None:
        """Fail when the last entry read, ``after``, has been trimmed away: the hub trims
        oldest first, so entries after it may have gone unread. (Only when exactly the
        stream's length of entries came after it is nothing lost; that case fails too.)"""
        client = _client(self.url)
        if not self.fail_on_loss or client.xrange(self.key, min=after, max=after, count=1):
            return
        first = client.xrange(self.key, count=1)
        if first and _position(first[0][0]) > _position(after):
            raise StreamDataLost(
                f"entries of {self.key} after {after} (up to {first[0][0]}) may have been "
                "trimmed before this job read them (the hub keeps its newest --history-size "
                "updates); restart from a new checkpoint, or set failOnDataLoss=false to "
                "read on from the oldest entry left"
            )

    def read(self, partition: InputPartition) -> Iterator[tuple[str, str]]:
        assert isinstance(partition, _Range)
        client = _client(self.url)
        after, end = partition.start, _position(partition.end)
        while True:
            page = client.xrange(self.key, min=f"({after}", max=partition.end, count=_PAGE)
            for stream_id, fields in page:
                if _position(stream_id) > end:
                    return
                yield entry_line(fields), f"redis:{self.key}:{stream_id}"
            if len(page) < _PAGE:
                return
            after = page[-1][0]

    def commit(self, end: dict[str, str]) -> None:
        """Nothing to acknowledge: the stream is the hub's history, trimmed by the hub."""


class HubStreamDataSource(DataSource):
    """``spark.readStream.format("skipfilter-hub-redis").option("url", ...)``."""

    @classmethod
    def name(cls) -> str:
        return FORMAT

    def schema(self) -> str:
        return "value string, _file string"

    def streamReader(self, schema: Any) -> _Reader:
        if "url" not in self.options:
            raise ValueError(f"the {FORMAT} source needs the option url=redis://HOST:PORT/DB")
        return _Reader(dict(self.options))


@dataclass(frozen=True, slots=True)
class RedisStreamSource:
    """The updates a hub appends to Redis, from ``url`` (``redis://HOST:PORT/DB``, with
    ``?prefix=NAME`` if the hub has one). ``max_records_per_trigger`` bounds a micro-batch."""

    url: str
    max_records_per_trigger: int | None = None
    fail_on_data_loss: bool = True

    def read(self, spark: SparkSession, syntax: str) -> contract.Checked:
        """Each new entry as a JSON line, checked by the data contract like a file's lines."""
        split_url(self.url)  # a bad URL fails here, by name, not in a task
        spark.dataSource.register(HubStreamDataSource)
        reader = spark.readStream.format(FORMAT).option("url", self.url)
        reader = reader.option("failOnDataLoss", str(self.fail_on_data_loss).lower())
        if self.max_records_per_trigger:
            reader = reader.option("maxRecordsPerBatch", str(self.max_records_per_trigger))
        return contract.check_json_lines(reader.load(), "messages", syntax)
