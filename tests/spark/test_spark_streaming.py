"""Streaming jobs as Spark users run them: every strategy, file sources in the batch formats,
a stopped job restarted from its checkpoint delivering every row once, a wrong-format file
reported instead of killing the stream, a trigger interval, and their own stream (the Kafka
path of docs/spark.md) routed into a callback."""

from __future__ import annotations

import itertools
import json
import os
import time
from datetime import datetime
from pathlib import Path
from typing import Any

import pyarrow as pa  # type: ignore[import-untyped]
import pyarrow.parquet as pq  # type: ignore[import-untyped]
import pytest

from skipfilter.spark import check_messages
from skipfilter.spark.contract import MESSAGES
from skipfilter.spark.sources import FileDirectory
from skipfilter.spark.streaming import route_each_batch, start_routing_stream
from tests.spark.sparkdata import generate, oracle

SUBSCRIPTIONS = "subscriber_id string, topics array<string>, allowed array<string>"
Pairs = set[tuple[str, str]]


def drop(directory: Path, name: str, rows: list[Any]) -> None:
    """Write a JSON-lines file atomically, as an exporter should (the source lists whole files)."""
    tmp = directory.parent / f".{name}.tmp"
    tmp.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows))
    os.replace(tmp, directory / name)


def drop_parquet(directory: Path, name: str, rows: list[Any]) -> None:
    """Write a Parquet file atomically."""
    tmp = directory.parent / f".{name}.tmp"
    pq.write_table(pa.Table.from_pylist(rows), tmp)
    os.replace(tmp, directory / name)


def subscriptions_df(spark: Any, subs: list[dict[str, Any]]) -> Any:
    rows = [(s["subscriber_id"], s["topics"], s.get("allowed")) for s in subs]
    return spark.createDataFrame(rows, SUBSCRIPTIONS)


def read_pairs(spark: Any, path: Path) -> list[tuple[str, str]]:
    return [(r["message_id"], r["subscriber_id"]) for r in spark.read.parquet(str(path)).collect()]


@pytest.mark.parametrize(
    ("strategy", "fmt"),
    [("broadcast", "json"), ("sharded", "parquet"), ("sql", "json"), ("naive", "parquet")],
)
def test_restart_from_checkpoint_delivers_exactly_once(
    spark: Any, tmp_path: Path, strategy: str, fmt: str
) -> None:
    msgs, subs = generate(subscribers=40, messages=160, seed=3)
    expected = oracle(msgs, subs)
    put = drop if fmt == "json" else drop_parquet
    inbox, out, errors, checkpoint = (tmp_path / n for n in ("in", "out", "errors", "ckpt"))
    inbox.mkdir()
    for i in range(2):
        put(inbox, f"part-{i}.{fmt}", msgs[i * 40 : (i + 1) * 40])

    def start() -> Any:
        source = FileDirectory(str(inbox), fmt, max_files_per_trigger=1)
        subscriptions = subscriptions_df(spark, subs)
        return start_routing_stream(
            spark, source, subscriptions, str(out), str(errors), str(checkpoint), strategy=strategy
        )

    stream = start()
    deadline = time.monotonic() + 120
    while not any(p["numInputRows"] for p in stream.deliveries.recentProgress):
        assert time.monotonic() < deadline, "no batch committed"
        assert stream.deliveries.exception() is None, stream.deliveries.exception()
        time.sleep(0.2)
    stream.stop()  # mid-stream: the second file may be half routed
    first = set(read_pairs(spark, out))
    assert first and first < expected

    if fmt == "json":  # and a Parquet file among the JSON ones: its lines are bad rows
        put(inbox, "part-2.json", [*msgs[80:120], "{broken", {"id": "x", "topics": []}])
        drop_parquet(inbox, "stray.json", msgs[:2])
        reasons = ["invalid JSON", "topics is empty"]
    else:  # a JSON file and a Parquet file of other columns among the Parquet ones
        put(inbox, "part-2.parquet", [*msgs[80:120], {"id": "x", "topics": []}])
        drop(inbox, "stray.parquet", msgs[:2])
        drop_parquet(inbox, "renamed.parquet", [{"event_id": "e", "tags": ["a"]}])
        reasons = [
            "missing column(s) id, topics; found event_id, tags",
            "not a readable parquet file",
            "topics is empty",
        ]
    put(inbox, f"part-3.{fmt}", msgs[120:])
    stream = start()
    try:
        stream.process_all_available()
    finally:
        stream.stop()
    rows = read_pairs(spark, out)
    assert len(rows) == len(set(rows)), "a delivery was written twice"
    assert set(rows) == expected
    reported = sorted(spark.read.parquet(str(errors)).collect(), key=lambda r: r["reason"])
    stray = [r for r in reported if fmt == "json" and r["file"].endswith("stray.json")]
    assert all(r["reason"].startswith(("not UTF-8", "invalid JSON")) for r in stray), stray
    assert len(stray) >= (fmt == "json")
    reported = [r for r in reported if r not in stray]
    assert [r["reason"].split(":")[0] for r in reported] == reasons
    if fmt == "parquet":  # the unreadable files are named, and had no row to name
        named = [(Path(r["file"]).name, r["row_id"]) for r in reported]
        assert named == [
            ("renamed.parquet", None),
            ("stray.parquet", None),
            ("part-2.parquet", "x"),
        ]


def test_a_stream_reads_only_the_formats_it_can() -> None:
    with pytest.raises(ValueError, match="a stream reads json, parquet files, not 'csv'"):
        FileDirectory("inbox/", "csv")


def test_an_output_of_the_old_file_sink_is_refused(spark: Any, tmp_path: Path) -> None:
    """Readers of a directory with a file sink log see only the files it lists, so per-batch
    directories written beside it would be invisible: refused before anything starts."""
    (tmp_path / "in").mkdir()
    (tmp_path / "out" / "_spark_metadata").mkdir(parents=True)
    subscriptions = subscriptions_df(spark, [{"subscriber_id": "s", "topics": ["a"]}])
    paths = (str(tmp_path / n) for n in ("in", "out", "errors", "ckpt"))
    with pytest.raises(ValueError, match=r"out holds Spark's file sink log \(_spark_metadata\)"):
        start_routing_stream(spark, next(paths), subscriptions, *paths)
    assert not (tmp_path / "ckpt").exists()


def test_trigger_interval_spaces_the_batches(spark: Any, tmp_path: Path) -> None:
    msgs, subs = generate(subscribers=10, messages=30, seed=4)
    inbox, out, errors, checkpoint = (tmp_path / n for n in ("in", "out", "errors", "ckpt"))
    inbox.mkdir()
    for i in range(3):
        drop(inbox, f"part-{i}.jsonl", msgs[i * 10 : (i + 1) * 10])
    subscriptions = subscriptions_df(spark, subs)
    args = (spark, str(inbox), subscriptions, str(out), str(errors), str(checkpoint))
    with pytest.raises(ValueError, match="trigger must be an interval such as '10 seconds'"):
        start_routing_stream(*args, trigger="soon")
    with pytest.raises(ValueError, match="a trigger interval or once"):
        start_routing_stream(*args, trigger="1 second", once=True)

    stream = start_routing_stream(*args, trigger="3 seconds", max_files_per_trigger=1)
    try:
        deadline = time.monotonic() + 120
        while sum(1 for p in stream.deliveries.recentProgress if p["numInputRows"]) < 3:
            assert time.monotonic() < deadline, "three batches did not run"
            assert stream.deliveries.exception() is None, stream.deliveries.exception()
            time.sleep(0.2)
    finally:
        stream.stop()
    starts = [
        datetime.fromisoformat(p["timestamp"].replace("Z", "+00:00"))
        for p in stream.deliveries.recentProgress
        if p["numInputRows"]
    ]
    gaps = [(b - a).total_seconds() for a, b in itertools.pairwise(starts)]
    # Spark starts batches on multiples of the interval (the first one at once), never sooner
    assert all(gap >= 2.9 for gap in gaps[1:]), gaps
    assert set(read_pairs(spark, out)) == oracle(msgs, subs)


def test_own_stream_routed_each_batch_into_a_callback(spark: Any, tmp_path: Path) -> None:
    """The Kafka recipe of docs/spark.md with a source that runs here: JSON values parsed
    from a stream, checked, routed a micro-batch at a time by a strategy that cannot run
    inside a streaming plan, each batch handed to a callback with its id."""
    from pyspark.sql import functions as F

    msgs, subs = generate(subscribers=30, messages=60, seed=5)
    values = spark.createDataFrame(
        [(i, json.dumps(m)) for i, m in enumerate(msgs)], "n long, value string"
    )
    ticks = spark.readStream.format("rate-micro-batch").option("rowsPerBatch", 20).load()
    records = ticks.join(values, ticks["value"] == values["n"]).select(values["value"])
    parsed = records.select(F.from_json(F.col("value").cast("string"), MESSAGES).alias("m"))
    messages = check_messages(parsed.select("m.*")).valid
    seen: dict[int, Pairs] = {}

    def handle(deliveries: Any, batch_id: int) -> None:
        seen[batch_id] = {(r["message_id"], r["subscriber_id"]) for r in deliveries.collect()}

    subscriptions = subscriptions_df(spark, subs)
    query = route_each_batch(
        messages, subscriptions, handle, str(tmp_path / "ckpt"), strategy="sql"
    )
    try:
        deadline = time.monotonic() + 120
        while len(seen) < 3:
            assert time.monotonic() < deadline, f"batches seen: {sorted(seen)}"
            assert query.exception() is None, query.exception()
            time.sleep(0.2)
    finally:
        query.stop()
    expected = oracle(msgs, subs)
    for batch_id in range(3):  # batch k holds messages 20k..20k+19
        ids = {f"m{i}" for i in range(batch_id * 20, batch_id * 20 + 20)}
        assert seen[batch_id] == {pair for pair in expected if pair[0] in ids}


@pytest.mark.parametrize("strategy", ["sharded", "sql", "naive"])
def test_route_refuses_a_stream_it_cannot_plan_up_front(
    spark: Any, tmp_path: Path, strategy: str
) -> None:
    (tmp_path / "in").mkdir()
    stream = FileDirectory(str(tmp_path / "in")).read(spark, "mercure").valid
    subscriptions = subscriptions_df(spark, [{"subscriber_id": "s", "topics": ["a"]}])
    from skipfilter.spark import route

    with pytest.raises(ValueError, match=f"strategy '{strategy}' cannot run inside a streaming"):
        route(stream, subscriptions, strategy)  # not at start(), after a query was built


@pytest.mark.parametrize("strategy", ["sharded", "sql", "naive"])
def test_check_ids_fails_a_per_batch_stream_on_a_duplicate_id(
    spark: Any, tmp_path: Path, strategy: str
) -> None:
    """``route_each_batch(..., check_ids=True)`` with a strategy that routes each
    micro-batch: a batch holding one id twice fails the query, naming the id, instead of
    delivering two messages nobody can tell apart."""
    from pyspark.errors import StreamingQueryException

    (tmp_path / "in").mkdir()
    topic = "https://example.com/books/1"
    drop(tmp_path / "in", "part-0.json", [{"id": "m1", "topics": [topic]}] * 2)
    messages = FileDirectory(str(tmp_path / "in")).read(spark, "mercure").valid
    subscriptions = subscriptions_df(spark, [{"subscriber_id": "s", "topics": [topic]}])
    seen: list[int] = []
    query = route_each_batch(
        messages,
        subscriptions,
        lambda deliveries, batch_id: seen.append(deliveries.count()),
        str(tmp_path / "ckpt"),
        strategy=strategy,
        once=True,
        check_ids=True,
    )
    try:
        with pytest.raises(StreamingQueryException, match="'m1' is on 2 rows"):
            query.awaitTermination(120)
        assert not seen  # nothing handed over
    finally:
        query.stop()
        subscriptions.unpersist()
