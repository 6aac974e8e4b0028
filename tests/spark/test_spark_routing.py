"""The three strategies against the single-process TopicIndex and a brute-force oracle."""

from __future__ import annotations

from typing import Any

import pytest

from skipfilter.spark import (
    STRATEGIES,
    fanout_by_subscriber,
    fanout_by_topic,
    route,
)
from skipfilter.spark.broadcast import Transport, route_broadcast
from tests.spark.sparkdata import generate, oracle, single_process

MESSAGES = "id string, topics array<string>, private boolean"
SUBSCRIPTIONS = "subscriber_id string, topics array<string>, allowed array<string>"


def frames(spark: Any, msgs: list[dict[str, Any]], subs: list[dict[str, Any]]) -> tuple[Any, Any]:
    m = spark.createDataFrame([(r["id"], r["topics"], r["private"]) for r in msgs], MESSAGES)
    s = spark.createDataFrame(
        [(r["subscriber_id"], r["topics"], r.get("allowed")) for r in subs], SUBSCRIPTIONS
    )
    return m.repartition(3), s


def pairs(df: Any) -> list[tuple[str, str]]:
    return sorted((r["message_id"], r["subscriber_id"]) for r in df.collect())


@pytest.fixture(scope="module")
def data(spark: Any) -> tuple[Any, Any, set[tuple[str, str]]]:
    msgs, subs = generate(subscribers=60, messages=300, seed=7)
    expected = oracle(msgs, subs)
    assert expected == single_process(msgs, subs)
    assert any(m["private"] for m in msgs) and len(expected) > 300
    return (*frames(spark, msgs, subs), expected)


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_strategies_equal_the_oracle(data: Any, strategy: str) -> None:
    messages, subscriptions, expected = data
    got = pairs(route(messages, subscriptions, strategy))
    assert len(got) == len(set(got)), "deliveries must be distinct"
    assert set(got) == expected


@pytest.mark.parametrize("transport", ["pandas", "rdd"])
def test_broadcast_transports_agree(data: Any, transport: Transport) -> None:
    messages, subscriptions, expected = data
    assert set(pairs(route_broadcast(messages, subscriptions, transport=transport))) == expected


def test_sharded_with_more_shards_than_partitions(data: Any) -> None:
    messages, subscriptions, expected = data
    assert set(pairs(route(messages, subscriptions, "sharded", shards=5))) == expected


def test_optional_columns_absent(spark: Any) -> None:
    messages = spark.createDataFrame(
        [("m1", ["/a"]), ("m2", ["/b"])], "id string, topics array<string>"
    )
    subscriptions = spark.createDataFrame(
        [("s1", ["/a", "*"])], "subscriber_id string, topics array<string>"
    )
    for strategy in ("broadcast", "sharded", "sql"):  # naive: same _conform, slower
        assert pairs(route(messages, subscriptions, strategy)) == [("m1", "s1"), ("m2", "s1")]


def test_other_syntax(spark: Any) -> None:
    messages = spark.createDataFrame([("m1", ["a.b.c"], True), ("m2", ["x.y"], False)], MESSAGES)
    subscriptions = spark.createDataFrame(
        [("s1", ["a.#"], ["a.*.c"]), ("s2", ["*.y"], None), ("s3", ["a.*"], ["#"])], SUBSCRIPTIONS
    )
    for strategy in STRATEGIES:
        got = pairs(route(messages, subscriptions, strategy, syntax="amqp"))
        assert got == [("m1", "s1"), ("m2", "s2")], strategy


def test_bad_subscription_rejected_by_name(spark: Any) -> None:
    messages = spark.createDataFrame([("m1", ["a.b"], False)], MESSAGES)
    subscriptions = spark.createDataFrame(
        [("good", ["a.*"], None), ("bad", ["a.>.b"], None)], SUBSCRIPTIONS
    )
    for strategy in ("broadcast", "sharded"):  # lazy: the action fails, naming the row
        with pytest.raises(Exception, match=r"bad.*'>' must be the last token"):
            route(messages, subscriptions, strategy, syntax="nats").collect()


def test_bad_message_fails_the_job_by_name(spark: Any) -> None:
    messages = spark.createDataFrame([("m1", ["/a"], False), ("m2", [], False)], MESSAGES)
    subscriptions = spark.createDataFrame([("s1", ["/a"], None)], SUBSCRIPTIONS)
    with pytest.raises(Exception, match=r"m2.*topics is empty"):
        route(messages, subscriptions).collect()


def test_fanout(spark: Any) -> None:
    messages = spark.createDataFrame(
        [("m1", ["/a", "/b"], False), ("m2", ["/a"], False), ("m3", ["/c"], False)], MESSAGES
    )
    subscriptions = spark.createDataFrame(
        [("s1", ["/a"], None), ("s2", ["/b", "/a"], None)], SUBSCRIPTIONS
    )
    deliveries = route(messages, subscriptions)
    by_subscriber = {
        r["subscriber_id"]: r["messages"] for r in fanout_by_subscriber(deliveries).collect()
    }
    assert by_subscriber == {"s1": 2, "s2": 2}
    by_topic = {
        r["topic"]: (r["messages"], r["deliveries"])
        for r in fanout_by_topic(messages, deliveries).collect()
    }
    assert by_topic == {"/a": (2, 4), "/b": (1, 2), "/c": (1, 0)}
