"""Inputs under their owners' column names, and chosen message columns carried to the
deliveries by every strategy (issue 43, item 2)."""

from __future__ import annotations

import datetime
import json
from functools import partial
from pathlib import Path
from typing import Any

import pytest

from skipfilter.cli import main
from skipfilter.spark import STRATEGIES, MalformedInput, read_messages, route
from tests.spark.sparkdata import generate, oracle

THEIR_MESSAGES = "event_id string, tags array<string>, is_private boolean, ts timestamp, part int"
THEIR_SUBSCRIPTIONS = "user string, patterns array<string>, grants array<string>"
MESSAGE_COLUMNS = {"id": "event_id", "topics": "tags", "private": "is_private"}
SUBSCRIPTION_COLUMNS = {"subscriber_id": "user", "topics": "patterns", "allowed": "grants"}
EPOCH = datetime.datetime(2026, 1, 1)


def stamp(i: int) -> datetime.datetime:
    return EPOCH + datetime.timedelta(seconds=i)


@pytest.fixture(scope="module")
def data(spark: Any) -> tuple[Any, Any, set[tuple[Any, ...]]]:
    msgs, subs = generate(subscribers=40, messages=150, seed=5)
    messages = spark.createDataFrame(
        [(m["id"], m["topics"], m["private"], stamp(i), i % 7) for i, m in enumerate(msgs)],
        THEIR_MESSAGES,
    ).repartition(3)
    subscriptions = spark.createDataFrame(
        [(s["subscriber_id"], s["topics"], s.get("allowed")) for s in subs], THEIR_SUBSCRIPTIONS
    )
    index = {m["id"]: i for i, m in enumerate(msgs)}
    expected = {(m, s, stamp(index[m]), index[m] % 7) for m, s in oracle(msgs, subs)}
    return messages, subscriptions, expected


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_their_columns_and_carried_ones(data: Any, strategy: str) -> None:
    messages, subscriptions, expected = data
    deliveries = route(
        messages,
        subscriptions,
        strategy,
        message_columns=MESSAGE_COLUMNS,
        subscription_columns=SUBSCRIPTION_COLUMNS,
        carry=["ts", "part"],
    )
    assert deliveries.columns == ["message_id", "subscriber_id", "ts", "part"]
    assert deliveries.schema["ts"].dataType.simpleString() == "timestamp"
    got = [tuple(row) for row in deliveries.collect()]
    assert len(got) == len(set(got)), "deliveries must be distinct"
    assert set(got) == expected


@pytest.mark.parametrize("strategy", ["broadcast", "sharded", "sql"])
def test_carrying_the_topics_column_itself(spark: Any, strategy: str) -> None:
    """A carried column may be one the routing reads (here the topics): no name clash."""
    messages = spark.createDataFrame(
        [("m1", ["/a", "/b"], 3), ("m2", ["/c"], 4)], "id string, topics array<string>, n int"
    )
    subscriptions = spark.createDataFrame(
        [("s1", ["/b"])], "subscriber_id string, topics array<string>"
    )
    got = route(messages, subscriptions, strategy, carry=["topics", "n"]).collect()
    assert [tuple(r) for r in got] == [("m1", "s1", ["/a", "/b"], 3)]


def test_bad_column_options_refused_by_name(data: Any) -> None:
    messages, subscriptions, _ = data
    theirs = partial(
        route, message_columns=MESSAGE_COLUMNS, subscription_columns=SUBSCRIPTION_COLUMNS
    )
    with pytest.raises(ValueError, match=r"unknown contract column.*'event'.*name some of id"):
        route(messages, subscriptions, message_columns={"event": "event_id"})
    with pytest.raises(MalformedInput, match=r"missing column.*event_id; found id"):
        theirs(messages.withColumnRenamed("event_id", "id"), subscriptions)
    with pytest.raises(MalformedInput, match=r"no column.*nope to carry; found event_id"):
        theirs(messages, subscriptions, carry=["nope"])
    with pytest.raises(ValueError, match="carry cannot take subscriber_id"):
        theirs(messages, subscriptions, carry=["subscriber_id"])
    with pytest.raises(ValueError, match="list of column names, got the string 'ts'"):
        theirs(messages, subscriptions, carry="ts")


def test_read_messages_with_their_json_fields(spark: Any, tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    path.write_text(
        '{"event_id": "m1", "tags": ["/a"], "ts": "2026-01-01T00:00:00", "part": 3}\n'
        '{"event_id": "m2", "tags": "/b", "ts": 17}\n'
        '{"id": "m3", "tags": ["/c"]}\n'
    )
    checked = read_messages(
        spark, str(path), columns={"id": "event_id", "topics": "tags"}, carry=["ts", "part"]
    )
    assert checked.valid.columns == ["id", "topics", "private", "ts", "part"]
    assert [tuple(r) for r in checked.valid.collect()] == [
        ("m1", ["/a"], False, "2026-01-01T00:00:00", "3")
    ]
    reasons = {(r["row_id"], r["reason"].split(",")[0]) for r in checked.errors.collect()}
    assert reasons == {(None, "missing event_id"), ("m2", "tags must be an array of strings")}


def test_cli_their_columns_and_carry(spark: Any, tmp_path: Path, capsys: Any) -> None:
    msgs, subs = generate(subscribers=20, messages=40, seed=9)
    (tmp_path / "m.jsonl").write_text(
        "".join(
            json.dumps({"event_id": m["id"], "tags": m["topics"], "private": m["private"]})[:-1]
            + f', "ts": "t{i}", "part": {i % 3}}}\n'
            for i, m in enumerate(msgs)
        )
    )
    (tmp_path / "s.jsonl").write_text(
        "".join(
            json.dumps({"user": s["subscriber_id"], "topics": s["topics"], "allowed": s["allowed"]})
            + "\n"
            for s in subs
        )
    )
    out = tmp_path / "out"
    argv = ["route", "--messages", str(tmp_path / "m.jsonl"), "--subscriptions"]
    argv += [str(tmp_path / "s.jsonl"), "--out", str(out), "--strategy", "sharded"]
    argv += ["--message-column", "id=event_id", "--message-column", "topics=tags"]
    argv += ["--subscription-column", "subscriber_id=user", "--carry", "ts,part"]
    assert main(argv) == 0, capsys.readouterr().err
    index = {m["id"]: i for i, m in enumerate(msgs)}
    expected = {(m, s, f"t{index[m]}", str(index[m] % 3)) for m, s in oracle(msgs, subs)}
    got = spark.read.json(str(out)).select("message_id", "subscriber_id", "ts", "part")
    assert {tuple(r) for r in got.collect()} == expected
    assert main([*argv[:5], "--out", str(tmp_path / "o2"), "--message-column", "id"]) == 2
    assert "--message-column takes FIELD=COLUMN (id=event_id), got 'id'" in capsys.readouterr().err
