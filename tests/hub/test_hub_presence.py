"""Presence across nodes over a real redis-server: a paused node is not taken for dead, a
node taken for dead anyway announces itself again, and a stray record stops nothing."""

from __future__ import annotations

import asyncio
import json
import logging
import os
import signal
import time
from collections.abc import Callable

import httpx
import pytest
import redis

from skipfilter.hub.update import Update
from tests.hub.hubtest import HUB, HubProcess, Stream, pub_token, sub_token
from tests.hub.redis_server import RedisServer, text
from tests.hub.test_hub_nodes import nodes, redis_server  # noqa: F401  (fixtures)

SUBSCRIPTIONS = "/.well-known/mercure/subscriptions"
EVENTS = SUBSCRIPTIONS + "/{topic}/{subscriber}"
TOKEN = sub_token(SUBSCRIPTIONS, EVENTS)
ON_A = [f"https://example.com/on-a/{i}" for i in range(3)]


def _listed(node: HubProcess) -> list[str]:
    response = httpx.get(
        node.url + SUBSCRIPTIONS, headers={"Authorization": f"Bearer {TOKEN}"}, timeout=10
    )
    assert response.status_code == 200, response.text
    return sorted(doc["topic"] for doc in response.json()["subscriptions"])


def _wait_listed(node: HubProcess, topics: list[str], timeout: float = 15) -> None:
    deadline = time.monotonic() + timeout
    while not set(topics) <= set(_listed(node)):
        assert time.monotonic() < deadline, _listed(node)
        time.sleep(0.1)


def _events(watcher: Stream) -> list[dict[str, object]]:
    """The subscription events the watcher has received so far."""
    got = []
    while not watcher.items.empty():
        got.append(json.loads(watcher.items.get().data))
    return got


def _two_nodes(nodes: Callable[..., HubProcess]) -> tuple[HubProcess, HubProcess, Stream]:  # noqa: F811
    a = nodes("--subscriptions", "--node-ttl", "2")
    b = nodes("--subscriptions", "--node-ttl", "2")
    watcher = Stream(b, [EVENTS], headers={"Authorization": f"Bearer {TOKEN}"})
    return a, b, watcher


def test_a_paused_node_keeps_its_subscriptions_and_its_subscribers_see_no_gap(
    nodes: Callable[..., HubProcess],  # noqa: F811
) -> None:
    a, b, watcher = _two_nodes(nodes)
    subscribers = [Stream(a, [topic]) for topic in ON_A]
    _wait_listed(b, ON_A)
    os.kill(a.proc.pid, signal.SIGSTOP)  # a long GC pause, a frozen VM: 4 s, twice the ttl
    try:
        paused = time.monotonic()
        while time.monotonic() - paused < 4:
            assert set(ON_A) <= set(_listed(b)), "a paused node's subscriptions vanished"
            time.sleep(0.3)
    finally:
        os.kill(a.proc.pid, signal.SIGCONT)
    time.sleep(3)  # a heartbeat or two after it came back
    assert set(ON_A) <= set(_listed(b)) and set(ON_A) <= set(_listed(a))
    ended = [e for e in _events(watcher) if e["topic"] in ON_A and not e["active"]]
    assert not ended, f"subscriptions of a live node announced ended: {ended}"
    headers = {"Authorization": f"Bearer {pub_token()}"}
    for topic in ON_A:
        httpx.post(b.url + HUB, data={"topic": topic, "id": topic[-1]}, headers=headers)
    for topic, stream in zip(ON_A, subscribers, strict=True):
        assert stream.event(10).id == topic[-1]  # they kept receiving
    for stream in [watcher, *subscribers]:
        stream.close()


def test_a_node_taken_for_gone_announces_its_subscriptions_again(
    nodes: Callable[..., HubProcess],  # noqa: F811
    redis_server: RedisServer,  # noqa: F811
) -> None:
    a, b, watcher = _two_nodes(nodes)
    subscribers = [Stream(a, [topic]) for topic in ON_A]
    _wait_listed(b, ON_A)
    store = redis.Redis.from_url(redis_server.url, decode_responses=True)
    (node_a,) = [
        n
        for n in map(text, store.smembers("skipfilter:nodes"))
        if store.hlen(f"skipfilter:subs:{n}") == 3
    ]
    deadline = time.monotonic() + 10
    seen: list[dict[str, object]] = []
    while not set(ON_A) <= {e["topic"] for e in seen}:  # their first announcement
        assert time.monotonic() < deadline, seen
        seen += _events(watcher)
        time.sleep(0.1)
    # what a reaper that lost patience does (a partition longer than PATIENCE x ttl), while
    # a is paused: its next heartbeat (every ttl / 3) would put its records back at once
    os.kill(a.proc.pid, signal.SIGSTOP)
    try:
        store.delete(f"skipfilter:node:{node_a}", f"skipfilter:subs:{node_a}")
        store.srem("skipfilter:nodes", node_a)
        assert not set(ON_A) & set(_listed(b))
    finally:
        os.kill(a.proc.pid, signal.SIGCONT)
    _wait_listed(b, ON_A, timeout=10)  # a noticed on its next heartbeat
    assert store.hlen(f"skipfilter:subs:{node_a}") == 3
    deadline = time.monotonic() + 10
    announced: list[dict[str, object]] = []
    while not set(ON_A) <= {e["topic"] for e in announced if e["active"]}:
        assert time.monotonic() < deadline, [(e["topic"], e["active"]) for e in announced]
        announced += _events(watcher)
        time.sleep(0.1)
    store.close()
    for stream in [watcher, *subscribers]:
        stream.close()


def test_a_stray_presence_record_is_skipped_and_every_node_keeps_beating(
    nodes: Callable[..., HubProcess],  # noqa: F811
    redis_server: RedisServer,  # noqa: F811
) -> None:
    a, b, watcher = _two_nodes(nodes)
    subscribers = [Stream(a, [topic]) for topic in ON_A]
    store = redis.Redis.from_url(redis_server.url, decode_responses=True)
    store.sadd("skipfilter:nodes", "ghost", "ghost-string", "ghost-mixed")
    store.hset("skipfilter:subs:ghost", "f", "not json")
    store.set("skipfilter:subs:ghost-string", "not a hash")
    recorded = {
        "id": SUBSCRIPTIONS + "/t/s",
        "type": "Subscription",
        "subscriber": "s",
        "topic": "t",
        "active": True,
    }
    forged = {**recorded, "id": "https://example.com/not-a-subscription"}
    store.hset(
        "skipfilter:subs:ghost-mixed",
        mapping={"a": "[1, 2]", "b": json.dumps(recorded), "c": json.dumps(forged)},
    )
    time.sleep(7)  # several heartbeat periods (ttl 2 s): a dead heartbeat lets the keys expire
    members = map(text, store.smembers("skipfilter:nodes"))
    live = [n for n in members if n.isalnum() and len(n) == 32]
    assert len(live) == 2, store.smembers("skipfilter:nodes")
    for node in live:
        assert store.exists(f"skipfilter:node:{node}"), "a node stopped beating"
    assert not {"ghost", "ghost-string", "ghost-mixed"} & store.smembers("skipfilter:nodes")
    assert set(ON_A) <= set(_listed(b)) and "t" not in _listed(b)
    assert "skipped a record" in a.output() + b.output()
    ended = [e for e in _events(watcher) if not e["active"]]
    assert [e["topic"] for e in ended] == ["t"]  # the one well-formed ghost subscription
    store.close()
    for stream in [watcher, *subscribers]:
        stream.close()


def test_a_stray_record_is_warned_about_once_however_often_it_is_listed(
    redis_server: RedisServer,  # noqa: F811
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A node presumed alive (its key never expires) whose record is not a hash: every
    listing and find reads past it, and the log says so once, not at each of them."""
    import redis.asyncio as aioredis

    from skipfilter.hub.transports.redis.presence import RedisPresence

    store = redis.Redis.from_url(redis_server.url, decode_responses=True)
    store.sadd("skipfilter:nodes", "ghost")
    store.set("skipfilter:node:ghost", "1")
    store.set("skipfilter:subs:ghost", "not a hash")
    store.close()

    def unusable(doc: dict[str, object]) -> Update:
        raise ValueError("not used here")

    async def go() -> None:
        client = aioredis.Redis.from_url(redis_server.url, decode_responses=True)
        presence = RedisPresence(client, "skipfilter", lambda _: None, unusable, ttl=3600)
        await presence.start()
        try:
            for _ in range(5):
                assert await presence.page(None, 100) == ([], None)
                assert await presence.find("f") is None
        finally:
            await presence.stop()
            await client.aclose()

    with caplog.at_level(logging.WARNING, logger="skipfilter.hub"):
        asyncio.run(asyncio.wait_for(go(), 30))
    said = [r.getMessage() for r in caplog.records if "skipped a record" in r.getMessage()]
    assert len(said) == 1 and "'ghost'" in said[0], said
