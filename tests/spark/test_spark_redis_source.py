"""Routing live updates from a hub's Redis Stream: a real redis-server, a real hub publishing
over HTTP, a streaming query stopped mid-way and restarted: every delivery once."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from skipfilter.hub.transports.redis.entries import encode
from skipfilter.hub.update import Update
from skipfilter.spark.redis_source import RedisStreamSource, entry_line, split_url
from skipfilter.spark.streaming import start_routing_stream
from tests.hub.hubtest import PUBLISHER_KEY, SUBSCRIBER_KEY, HubProcess, pub_token
from tests.hub.redis_server import RedisServer, redis_available
from tests.spark.sparkdata import generate, oracle

SUBSCRIPTIONS = "subscriber_id string, topics array<string>, allowed array<string>"

pytestmark = pytest.mark.skipif(not redis_available(), reason="redis-server is not installed")


@pytest.fixture
def redis_server(tmp_path: Path) -> Iterator[RedisServer]:
    with RedisServer(tmp_path) as server:
        yield server


def _client(url: str) -> Any:
    import redis

    return redis.Redis.from_url(split_url(url)[0], decode_responses=True)


def append(url: str, updates: list[Update], maxlen: int | None = None) -> None:
    """XADD in the hub's own encoding (what RedisTransport writes)."""
    client, key = _client(url), split_url(url)[1]
    for update in updates:
        client.xadd(key, {"u": encode(update)}, maxlen=maxlen, approximate=False)


def as_update(row: dict[str, Any]) -> Update:
    return Update(row["id"], tuple(row["topics"]), "payload", bool(row.get("private")))


def routed(spark: Any, out: Path) -> list[tuple[str, str]]:
    return [(r["message_id"], r["subscriber_id"]) for r in spark.read.parquet(str(out)).collect()]


def test_entry_lines_are_message_rows() -> None:
    update = Update("urn:1", ("/a", "/b"), "hi", True)
    assert json.loads(entry_line({"u": encode(update)})) == {
        "id": "urn:1", "topics": ["/a", "/b"], "private": True, "data": "hi",
    }  # fmt: skip
    assert "_unreadable_entry" in json.loads(entry_line({"u": "{oops"}))
    with pytest.raises(ValueError, match="not a Redis URL"):
        split_url("http://127.0.0.1:6379/0")
    assert split_url("redis://h:1/2?prefix=p") == ("redis://h:1/2", "p:updates")


def test_stream_restarted_from_its_checkpoint_delivers_exactly_once(
    spark: Any, tmp_path: Path, redis_server: RedisServer
) -> None:
    msgs, subs = generate(subscribers=40, messages=160, seed=5)
    expected = oracle(msgs, subs)
    subscriptions = spark.createDataFrame(
        [(s["subscriber_id"], s["topics"], s.get("allowed")) for s in subs], SUBSCRIPTIONS
    )
    out, errors, checkpoint = (tmp_path / n for n in ("out", "errors", "ckpt"))
    url = redis_server.url
    append(url, [as_update(m) for m in msgs[:80]])

    def start() -> Any:
        source = RedisStreamSource(url, max_records_per_trigger=40)
        return start_routing_stream(
            spark, source, subscriptions, str(out), str(errors), str(checkpoint)
        )

    stream = start()
    deadline = time.monotonic() + 90
    while not any(p["numInputRows"] for p in stream.deliveries.recentProgress):
        assert time.monotonic() < deadline, "no batch committed"
        assert stream.deliveries.exception() is None, stream.deliveries.exception()
        time.sleep(0.2)
    stream.stop()  # mid-stream: later batches not yet read
    first = set(routed(spark, out))
    assert first and first < expected

    client, key = _client(url), split_url(url)[1]
    append(url, [as_update(m) for m in msgs[80:]])
    client.xadd(key, {"u": "{broken"})
    client.xadd(key, {"u": json.dumps(["x", [], "", False, None, None])})
    stream = start()
    try:
        stream.process_all_available()
    finally:
        stream.stop()
    rows = routed(spark, out)
    assert len(rows) == len(set(rows)), "a delivery was written twice"
    assert set(rows) == expected
    reasons = sorted(r["reason"] for r in spark.read.parquet(str(errors)).collect())
    assert len(reasons) == 2 and "topics is empty" in reasons[1], reasons


def test_trimmed_entries_fail_the_batch_by_name(
    spark: Any, tmp_path: Path, redis_server: RedisServer
) -> None:
    """A job that fell behind the hub's history learns it, instead of skipping updates."""
    subscriptions = spark.createDataFrame([("s1", ["/a/{x}"], None)], SUBSCRIPTIONS)
    url = redis_server.url
    updates = [Update(f"u{i}", (f"/a/{i}",), "") for i in range(30)]
    append(url, updates[:10])
    out, errors, checkpoint = (tmp_path / n for n in ("out", "errors", "ckpt"))

    def start(fail: bool = True) -> Any:
        source = RedisStreamSource(url, fail_on_data_loss=fail)
        return start_routing_stream(
            spark, source, subscriptions, str(out), str(errors), str(checkpoint)
        )

    stream = start()
    stream.process_all_available()
    stream.stop()
    assert len(routed(spark, out)) == 10
    append(url, updates[10:], maxlen=5)  # the hub keeps 5: u10-u24 are gone unread
    stream = start()
    with pytest.raises(Exception, match=r"may have been trimmed before this job read them"):
        stream.process_all_available()
    stream.stop()
    stream = start(fail=False)  # the user accepts the loss: read on from what is left
    stream.process_all_available()
    stream.stop()
    assert sorted(m for m, _ in routed(spark, out)) == sorted(
        [f"u{i}" for i in range(10)] + [f"u{i}" for i in range(25, 30)]
    )


def test_cli_routes_what_a_real_hub_published(
    spark: Any, tmp_path: Path, redis_server: RedisServer
) -> None:
    """``skipfilter hub --transport redis://`` publishes over HTTP; ``skipfilter route
    --stream --messages redis://... --once`` routes every acknowledged update."""
    from skipfilter.cli import main

    hub = HubProcess(
        "--anonymous",
        "--transport",
        redis_server.url,
        env={
            "MERCURE_PUBLISHER_JWT_KEY": PUBLISHER_KEY,
            "MERCURE_SUBSCRIBER_JWT_KEY": SUBSCRIBER_KEY,
        },
    )
    try:
        headers = {"Authorization": f"Bearer {pub_token()}"}
        for i in range(12):
            form = {"topic": [f"https://example.com/books/{i}"], "id": f"urn:b{i}"}
            if i % 3 == 0:
                form["private"] = ["on"]
            reply = httpx.post(hub.url + "/.well-known/mercure", data=form, headers=headers)
            assert reply.status_code == 200, reply.text
    finally:
        hub.kill()
    subs = tmp_path / "subs.jsonl"
    subs.write_text(
        json.dumps({"subscriber_id": "all", "topics": ["https://example.com/books/{id}"]})
        + "\n"
        + json.dumps(
            {"subscriber_id": "priv", "topics": ["*"], "allowed": ["https://example.com/books/0"]}
        )
        + "\n"
    )
    out, errors = tmp_path / "out", tmp_path / "errors"
    code = main(
        ["route", "--stream", "--once", "--messages", redis_server.url,
         "--subscriptions", str(subs), "--out", str(out), "--errors", str(errors),
         "--checkpoint", str(tmp_path / "ckpt"), "--master", "local[2]"]
    )  # fmt: skip
    assert code == 0
    rows = set()
    for part in out.rglob("*.json"):  # one directory per micro-batch
        rows |= {(r["message_id"], r["subscriber_id"]) for r in map(json.loads, part.open())}
    public = {f"urn:b{i}" for i in range(12) if i % 3}
    assert rows == {(m, "all") for m in public} | {
        (f"urn:b{i}", "priv") for i in range(12) if i % 3
    } | {("urn:b0", "priv")}
