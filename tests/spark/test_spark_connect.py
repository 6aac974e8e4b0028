"""Everything a user runs, on a real Spark Connect server, equal to the same on local[2].

PySpark dispatches ``pyspark.sql.functions`` to Connect process-wide once a Connect
session exists, so the local[2] references are computed first (fixture order) and the
module restores classic mode when it is done.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from skipfilter.cli import main
from skipfilter.spark import (
    STRATEGIES,
    fanout_by_subscriber,
    fanout_by_topic,
    read_messages,
    read_subscriptions,
    route,
)
from skipfilter.spark.session import default_parallelism, is_connect
from skipfilter.spark.streaming import start_routing_stream
from tests.spark.sparkdata import generate, oracle

Pairs = set[tuple[str, str]]


def jsonl(path: Path, rows: list[Any]) -> Path:
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows))
    return path


def pairs(df: Any) -> Pairs:
    return {(r["message_id"], r["subscriber_id"]) for r in df.collect()}


@pytest.fixture(scope="module")
def inputs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    msgs, subs = generate(subscribers=50, messages=200, seed=21)
    files = tmp_path_factory.mktemp("connect-inputs")
    return {
        "msgs": msgs,
        "subs": subs,
        "messages": str(jsonl(files / "m.jsonl", [*msgs, {"id": "bad", "topics": []}])),
        "subscriptions": str(jsonl(files / "s.jsonl", [*subs, {"subscriber_id": "z"}])),
    }


@pytest.fixture(scope="module")
def local(spark: Any, inputs: dict[str, Any]) -> dict[str, Any]:
    """The local[2] answers every Connect result is compared with."""
    messages = read_messages(spark, inputs["messages"])
    subscriptions = read_subscriptions(spark, inputs["subscriptions"])
    deliveries = route(messages.valid, subscriptions.valid)
    found = pairs(deliveries)
    assert found == oracle(inputs["msgs"], inputs["subs"]) and len(found) > 200
    return {
        "deliveries": found,
        "errors": sorted((r["row_id"], r["reason"]) for r in messages.errors.collect()),
        "by_subscriber": sorted(map(tuple, fanout_by_subscriber(deliveries).collect())),
        "by_topic": sorted(map(tuple, fanout_by_topic(messages.valid, deliveries).collect())),
    }


@pytest.fixture(scope="module")
def connect(local: dict[str, Any], connect_url: str) -> Iterator[Any]:
    from pyspark.sql import SparkSession

    session = SparkSession.builder.remote(connect_url).create()
    try:
        yield session
    finally:
        session.stop()
        os.environ.pop("SPARK_CONNECT_MODE_ENABLED", None)  # classic mode for later modules


@pytest.fixture(scope="module")
def checked(connect: Any, inputs: dict[str, Any]) -> tuple[Any, Any]:
    return read_messages(connect, inputs["messages"]), read_subscriptions(
        connect, inputs["subscriptions"]
    )


def test_the_session_is_a_connect_client(connect: Any) -> None:
    assert is_connect(connect) and not hasattr(connect, "_jsc")
    assert default_parallelism(connect) == 2  # the server runs local[2]


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_route_equals_local(checked: tuple[Any, Any], local: dict[str, Any], strategy: str) -> None:
    messages, subscriptions = checked
    got = route(messages.valid, subscriptions.valid, strategy).collect()
    assert len(got) == len(set(got)), "deliveries must be distinct"
    assert {(r["message_id"], r["subscriber_id"]) for r in got} == local["deliveries"]


def test_bad_rows_and_fanout_equal_local(checked: tuple[Any, Any], local: dict[str, Any]) -> None:
    messages, subscriptions = checked
    errors = sorted((r["row_id"], r["reason"]) for r in messages.errors.collect())
    assert errors == local["errors"] == [("bad", "topics is empty")]
    assert [r["reason"] for r in subscriptions.errors.collect()] == ["missing topics"]
    deliveries = route(messages.valid, subscriptions.valid)
    by_subscriber = sorted(map(tuple, fanout_by_subscriber(deliveries).collect()))
    assert by_subscriber == local["by_subscriber"]
    by_topic = sorted(map(tuple, fanout_by_topic(messages.valid, deliveries).collect()))
    assert by_topic == local["by_topic"]


def test_stream_equals_local(
    connect: Any, checked: tuple[Any, Any], inputs: dict[str, Any], local: dict[str, Any]
) -> None:
    tmp = Path(inputs["messages"]).parent / "stream"
    inbox = tmp / "inbox"
    inbox.mkdir(parents=True)
    msgs = inputs["msgs"]
    jsonl(inbox / "a.jsonl", msgs[:120])
    jsonl(inbox / "b.jsonl", [*msgs[120:], "{broken"])
    out, errors, checkpoint = (str(tmp / n) for n in ("out", "errors", "ckpt"))
    stream = start_routing_stream(
        connect, str(inbox), checked[1].valid, out, errors, checkpoint, once=True
    )
    stream.await_termination()
    assert pairs(connect.read.parquet(out)) == local["deliveries"]
    reasons = [r["reason"] for r in connect.read.parquet(errors).collect()]
    assert [r.split(":")[0] for r in reasons] == ["invalid JSON"]


def test_stream_by_a_per_batch_strategy_equals_local(
    connect: Any, checked: tuple[Any, Any], inputs: dict[str, Any], local: dict[str, Any]
) -> None:
    """sharded routes each micro-batch in a foreachBatch callback, which on Connect runs on
    the server with a session of its own; the subscriptions still reach it."""
    tmp = Path(inputs["messages"]).parent / "stream-sharded"
    inbox = tmp / "inbox"
    inbox.mkdir(parents=True)
    jsonl(inbox / "a.jsonl", inputs["msgs"])
    out, errors, checkpoint = (str(tmp / n) for n in ("out", "errors", "ckpt"))
    stream = start_routing_stream(
        connect,
        str(inbox),
        checked[1].valid,
        out,
        errors,
        checkpoint,
        once=True,
        strategy="sharded",
    )
    stream.await_termination()
    assert pairs(connect.read.parquet(out)) == local["deliveries"]


def test_cli_with_spark_remote(
    connect: Any, connect_url: str, inputs: dict[str, Any], local: dict[str, Any], tmp_path: Path
) -> None:
    """The command in its own process (PySpark allows no Connect session beside a classic one)."""
    out, errors = str(tmp_path / "out"), str(tmp_path / "errors")
    argv = ["route", "--messages", inputs["messages"], "--subscriptions"]
    argv += [inputs["subscriptions"], "--out", out, "--errors", errors]
    env = {**os.environ, "SPARK_REMOTE": connect_url}
    command = [sys.executable, "-m", "skipfilter.cli", *argv, "--strategy", "sharded"]
    done = subprocess.run(command, capture_output=True, text=True, env=env, timeout=240)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "2 malformed row(s) written to" in done.stderr
    assert f"{len(local['deliveries'])} deliveries written to {out} (json)" in done.stdout
    assert pairs(connect.read.json(out)) == local["deliveries"]

    again = [sys.executable, "-m", "skipfilter.cli", *argv, "--remote", connect_url]
    done = subprocess.run(again, capture_output=True, text=True, timeout=240)
    assert done.returncode == 1, done.stderr[-3000:]  # outputs exist: refused before any work
    assert f"{out} already exists; pass --overwrite" in done.stderr
    assert main([*argv, "--remote", connect_url, "--master", "local[2]"]) == 2


@pytest.mark.parametrize("strategy", ["broadcast", "sharded", "sql"])
def test_their_columns_carry_and_bad_rows(connect: Any, strategy: str) -> None:
    """Their column names, carried columns, and one MalformedInput for a bad row (here a
    duplicated id) through the Connect client's own exception types."""
    from skipfilter.spark import MalformedInput
    from skipfilter.spark.malformed import malformed_rows

    schema = "event_id string, tags array<string>, ts int"
    names = {"id": "event_id", "topics": "tags"}
    messages = connect.createDataFrame([("m1", ["/a"], 7), ("m2", ["/b"], 8)], schema)
    subscriptions = connect.createDataFrame(
        [("s1", ["/a", "/b"])], "subscriber_id string, topics array<string>"
    )
    got = route(messages, subscriptions, strategy, message_columns=names, carry=["ts"])
    assert sorted(map(tuple, got.collect())) == [("m1", "s1", 7), ("m2", "s1", 8)]
    twice = connect.createDataFrame([("m1", ["/a"], 7), ("m1", ["/b"], 8)], schema)
    with pytest.raises(MalformedInput) as info, malformed_rows():
        route(twice, subscriptions, strategy, message_columns=names).collect()
    assert (info.value.source, info.value.row, info.value.column) == ("messages", "m1", "event_id")
