"""route() builds a plan and runs nothing until an action, as a Spark user expects of a
transformation; the strategy is chosen by size without a job (docs/spark.md, Strategies)."""

from __future__ import annotations

import inspect
import os
import uuid
from collections.abc import Callable
from typing import Any

import pytest

from skipfilter.cli import main
from skipfilter.spark import MalformedInput, route
from skipfilter.spark.broadcast import Transport, route_broadcast
from skipfilter.spark.sizing import AUTO_BROADCAST_BYTES, auto_strategy, estimated_bytes
from tests.spark.sparkdata import generate, oracle
from tests.spark.test_spark_routing import MESSAGES, SUBSCRIPTIONS, frames, pairs


def jobs_run(spark: Any, work: Callable[[], Any]) -> tuple[Any, int]:
    """``work()``'s result and how many Spark jobs it started (counted by a job group)."""
    context = spark.sparkContext
    group = f"lazy-{uuid.uuid4().hex}"
    context.setJobGroup(group, "counting the jobs route() starts")
    try:
        result = work()
    finally:
        context.setLocalProperty("spark.jobGroup.id", None)
    return result, len(context.statusTracker().getJobIdsForGroup(group))


@pytest.fixture(scope="module")
def data(spark: Any) -> tuple[Any, Any, set[tuple[str, str]]]:
    msgs, subs = generate(subscribers=40, messages=120, seed=11)
    return (*frames(spark, msgs, subs), oracle(msgs, subs))


@pytest.mark.parametrize("strategy", ["broadcast", "sharded", "naive"])
def test_route_runs_no_job_until_an_action(spark: Any, data: Any, strategy: str) -> None:
    messages, subscriptions, expected = data
    deliveries, started = jobs_run(spark, lambda: route(messages, subscriptions, strategy))
    assert started == 0, f"route(strategy={strategy!r}) ran {started} Spark job(s) when called"
    got, started = jobs_run(spark, lambda: pairs(deliveries))
    assert started > 0  # the counter does see jobs: the action's own
    assert set(got) == expected


@pytest.mark.parametrize("transport", ["arrow", "pandas", "rdd"])
def test_broadcast_transports_lazy_but_rdd(spark: Any, data: Any, transport: Transport) -> None:
    """An RDD is made from a planned query, and planning starts the broadcast (documented)."""
    messages, subscriptions, expected = data
    deliveries, started = jobs_run(
        spark, lambda: route_broadcast(messages, subscriptions, transport=transport)
    )
    assert (started > 0) == (transport == "rdd")
    assert set(pairs(deliveries)) == expected


def test_broadcast_reads_the_subscriptions_at_each_action(spark: Any, tmp_path: Any) -> None:
    """Lazy means the action sees the table as it is then, not a snapshot taken by route()."""
    messages = spark.createDataFrame([("m1", ["/a"], False), ("m2", ["/b"], False)], MESSAGES)
    path = str(tmp_path / "subs")
    spark.createDataFrame([("s1", ["/a"], None)], SUBSCRIPTIONS).write.parquet(path)
    deliveries = route(messages, spark.read.parquet(path), "broadcast")
    assert pairs(deliveries) == [("m1", "s1")]
    spark.createDataFrame([("s2", ["/b"], None)], SUBSCRIPTIONS).write.mode("append").parquet(path)
    spark.catalog.clearCache()
    assert pairs(route(messages, spark.read.parquet(path), "broadcast")) == [
        ("m1", "s1"),
        ("m2", "s2"),
    ]


def test_broadcast_first_rows_and_chunk_edges(spark: Any) -> None:
    """Partitions of one message, empty partitions, several subscription chunks, none."""
    msgs, subs = generate(subscribers=30, messages=9, seed=3)
    expected = oracle(msgs, subs)
    messages, subscriptions = frames(spark, msgs, subs)
    for m_parts, s_parts in ((9, 4), (20, 1), (1, 7)):
        got = pairs(
            route(messages.repartition(m_parts), subscriptions.repartition(s_parts), "broadcast")
        )
        assert len(got) == len(set(got)) and set(got) == expected, (m_parts, s_parts)
    nobody = spark.createDataFrame([], SUBSCRIPTIONS)
    assert pairs(route(messages, nobody, "broadcast")) == []
    assert pairs(route(messages, nobody.repartition(3), "broadcast")) == []


def test_a_bad_subscription_fails_the_action_by_name(spark: Any) -> None:
    messages = spark.createDataFrame([("m1", ["a.b"], False)], MESSAGES)
    subscriptions = spark.createDataFrame(
        [("good", ["a.*"], None), ("bad", ["a.>.b"], None)], SUBSCRIPTIONS
    )
    deliveries, started = jobs_run(
        spark, lambda: route(messages, subscriptions, "broadcast", syntax="nats")
    )
    assert started == 0
    with pytest.raises(Exception, match=rf"{MalformedInput.__name__}.*'bad'.*'>' must be the last"):
        deliveries.collect()


def test_auto_is_the_default_and_picks_by_estimated_size(spark: Any, tmp_path: Any) -> None:
    """Small files broadcast; past the limit, or with no estimate, the table is sharded."""
    msgs, subs = generate(subscribers=40, messages=60, seed=5)
    expected = oracle(msgs, subs)
    messages, in_memory = frames(spark, msgs, subs)
    path = str(tmp_path / "subs.parquet")
    in_memory.write.parquet(path)
    on_disk = spark.read.parquet(path)
    size = estimated_bytes(on_disk)
    assert size is not None and 0 < size <= AUTO_BROADCAST_BYTES
    assert estimated_bytes(in_memory) is None  # an RDD-backed frame: Spark has no estimate
    assert auto_strategy(on_disk) == "broadcast"
    assert auto_strategy(in_memory) == "sharded"
    assert auto_strategy(on_disk.crossJoin(spark.range(1_000_000))) == "sharded"  # > limit
    assert inspect.signature(route).parameters["strategy"].default == "auto"
    for subscriptions in (on_disk, in_memory):

        def default(s: Any = subscriptions) -> Any:
            return route(messages, s)

        deliveries, started = jobs_run(spark, default)
        assert started == 0
        got = pairs(deliveries)
        assert len(got) == len(set(got)) and set(got) == expected


def test_cli_picks_the_strategy_by_size_and_says_so(
    spark: Any, tmp_path: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    msgs, subs = generate(subscribers=20, messages=40, seed=9)
    messages, subscriptions = frames(spark, msgs, subs)
    messages.write.parquet(str(tmp_path / "msgs"))
    subscriptions.write.parquet(str(tmp_path / "subs"))
    out = str(tmp_path / "out")
    argv = ["route", "--messages", str(tmp_path / "msgs"), "--subscriptions"]
    assert main([*argv, str(tmp_path / "subs"), "--out", out]) == 0
    said = capsys.readouterr().out
    assert "strategy broadcast (auto: subscriptions of an estimated" in said
    got = {(r["message_id"], r["subscriber_id"]) for r in spark.read.parquet(out).collect()}
    assert got == oracle(msgs, subs)


def test_auto_and_lazy_broadcast_on_connect(spark: Any, connect_url: str, tmp_path: Any) -> None:
    """Connect has no SparkContext: the estimate comes from the server's cost explain."""
    from pyspark.sql import SparkSession

    msgs, subs = generate(subscribers=30, messages=50, seed=4)
    for name, frame in zip(("msgs", "subs"), frames(spark, msgs, subs), strict=True):
        frame.write.parquet(str(tmp_path / name))
    session = SparkSession.builder.remote(connect_url).create()
    try:
        messages = session.read.parquet(str(tmp_path / "msgs"))
        subscriptions = session.read.parquet(str(tmp_path / "subs"))
        size = estimated_bytes(subscriptions)
        assert size is not None and 0 < size <= AUTO_BROADCAST_BYTES
        assert auto_strategy(subscriptions) == "broadcast"
        assert auto_strategy(subscriptions.crossJoin(session.range(1_000_000))) == "sharded"
        got = pairs(route(messages.repartition(3), subscriptions))
        assert len(got) == len(set(got)) and set(got) == oracle(msgs, subs)
    finally:
        session.stop()
        os.environ.pop("SPARK_CONNECT_MODE_ENABLED", None)  # classic mode for later tests
