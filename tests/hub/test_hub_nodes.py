"""Several hub nodes over one real redis-server: one order for everyone, resume anywhere,
and the faults a cluster meets (a node killed, Redis restarted)."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.hub.hubtest import (
    HUB,
    PUBLISHER_KEY,
    SUBSCRIBER_KEY,
    HubProcess,
    Stream,
    pub_token,
    sub_token,
)
from tests.hub.redis_server import RedisServer, redis_available

pytestmark = pytest.mark.skipif(
    not redis_available(), reason="redis-server is not installed (make test installs it as root)"
)

TOPIC = "https://example.com/books/1"


@pytest.fixture
def redis_server(tmp_path: Path) -> Iterator[RedisServer]:
    with RedisServer(tmp_path) as server:
        yield server


@pytest.fixture
def nodes(redis_server: RedisServer) -> Iterator[Callable[..., HubProcess]]:
    """Start hub nodes sharing ``redis_server``; all killed at teardown."""
    started: list[HubProcess] = []

    def start(*args: str) -> HubProcess:
        node = HubProcess(
            "--anonymous",
            "--transport",
            redis_server.url,
            *args,
            env={
                "MERCURE_PUBLISHER_JWT_KEY": PUBLISHER_KEY,
                "MERCURE_SUBSCRIBER_JWT_KEY": SUBSCRIBER_KEY,
            },
        )
        started.append(node)
        return node

    yield start
    for node in started:
        if node.proc.poll() is None:
            node.kill()


class Publisher:
    """Posts updates to one node from a thread, one at a time; keeps the acknowledged ids."""

    def __init__(self, node: HubProcess, prefix: str, count: int, pause: float = 0.0) -> None:
        self.node, self.prefix, self.count, self.pause = node, prefix, count, pause
        self.acked: list[str] = []
        self.refused: list[httpx.Response] = []
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        headers = {"Authorization": f"Bearer {pub_token()}"}
        with httpx.Client(base_url=self.node.url, timeout=10) as client:
            for i in range(self.count):
                if self.stop.is_set():
                    return
                update_id = f"{self.prefix}-{i}"
                try:
                    response = client.post(
                        HUB, data={"topic": TOPIC, "id": update_id}, headers=headers
                    )
                except httpx.TransportError:
                    continue
                if response.status_code == 200:
                    self.acked.append(update_id)
                else:
                    self.refused.append(response)
                time.sleep(self.pause)

    def start(self) -> Publisher:
        self.thread.start()
        return self

    def join(self) -> None:
        self.thread.join(60)
        assert not self.thread.is_alive()


def _ids(stream: Stream, count: int, timeout: float = 15) -> list[str]:
    return [stream.event(timeout).id for _ in range(count)]


def test_two_nodes_publishing_at_once_give_everyone_one_order(
    nodes: Callable[..., HubProcess],
) -> None:
    a, b = nodes(), nodes()
    streams = [Stream(node, [TOPIC]) for node in (a, a, b, b)]
    publishers = [Publisher(a, "a", 60).start(), Publisher(b, "b", 60).start()]
    for publisher in publishers:
        publisher.join()
    acked = publishers[0].acked + publishers[1].acked
    assert len(acked) == 120
    orders = [_ids(stream, 120) for stream in streams]
    assert sorted(orders[0]) == sorted(acked)  # everything, once
    assert all(order == orders[0] for order in orders)  # in one and the same order
    assert orders[0] != sorted(orders[0], key=lambda i: (i[0], int(i[2:])))  # interleaved
    for stream in streams:
        stream.close()


def test_clients_of_a_killed_node_resume_on_another_with_nothing_lost_or_doubled(
    nodes: Callable[..., HubProcess],
) -> None:
    a = nodes()
    b = nodes("--ring-size", "4")  # small: the resumed streams replay from Redis
    streams = [Stream(a, [TOPIC]) for _ in range(3)]
    publisher = Publisher(b, "u", 150, pause=0.005).start()
    while len(publisher.acked) < 40:
        time.sleep(0.01)
    a.kill()  # SIGKILL while publishes flow: no goodbye to anyone
    for stream in streams:
        assert stream.ended.wait(10), "the stream outlived its node"
    before = []
    for stream in streams:
        got = []
        while not stream.items.empty():
            got.append(stream.items.get().id)
        before.append(got)
    time.sleep(0.3)  # the clients take their time; the ring of b moves on
    resumed = [Stream(b, [TOPIC], headers={"Last-Event-ID": got[-1]}) for got in before]
    publisher.join()
    acked = publisher.acked
    assert len(acked) == 150
    for got, stream in zip(before, resumed, strict=True):
        assert got == acked[: len(got)]
        after = _ids(stream, len(acked) - len(got))
        assert got + after == acked  # every acknowledged update, once, in order
        stream.nothing(0.3)
        stream.close()


def test_redis_restart_loses_nothing_acknowledged_and_streams_continue(
    nodes: Callable[..., HubProcess], redis_server: RedisServer
) -> None:
    a, b = nodes(), nodes()
    stream = Stream(a, [TOPIC])
    first = Publisher(b, "before", 20).start()
    first.join()
    redis_server.stop()
    during = Publisher(b, "during", 5).start()
    during.join()
    assert not during.acked, "a publish was acknowledged with Redis down"
    assert all(r.status_code == 503 for r in during.refused)
    assert "Redis transport is unavailable" in during.refused[0].text
    redis_server.start()  # same port, same directory: the append-only file is replayed
    deadline = time.monotonic() + 20
    after = Publisher(b, "after", 20)
    while True:  # the nodes reconnect on their own
        probe = Publisher(b, "probe", 1).start()
        probe.join()
        if probe.acked or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    assert probe.acked, "the node did not reconnect to Redis"
    after.start().join()
    expected = first.acked + probe.acked + after.acked
    assert len(expected) == 41
    assert _ids(stream, len(expected), timeout=20) == expected
    stream.nothing(0.3)
    stream.close()


SUBSCRIPTIONS = "/.well-known/mercure/subscriptions"


def _listed(node: HubProcess, token: str) -> set[str]:
    response = httpx.get(
        node.url + SUBSCRIPTIONS, headers={"Authorization": f"Bearer {token}"}, timeout=10
    )
    assert response.status_code == 200, response.text
    return {doc["topic"] for doc in response.json()["subscriptions"]}


def test_one_subscriptions_view_and_a_dead_node_drops_out(
    nodes: Callable[..., HubProcess],
) -> None:
    a = nodes("--subscriptions", "--node-ttl", "1")
    b = nodes("--subscriptions", "--node-ttl", "1")
    token = sub_token(SUBSCRIPTIONS, SUBSCRIPTIONS + "/{topic}/{subscriber}")
    watcher = Stream(
        b,
        [SUBSCRIPTIONS + "/{topic}/{subscriber}"],
        headers={"Authorization": f"Bearer {token}"},
    )
    Stream(a, ["https://example.com/on-a"])
    Stream(b, ["https://example.com/on-b"])
    deadline = time.monotonic() + 10
    while {"https://example.com/on-a", "https://example.com/on-b"} - _listed(b, token):
        assert time.monotonic() < deadline, _listed(b, token)
        time.sleep(0.1)
    assert _listed(a, token) == _listed(b, token)  # one view, whichever node answers
    a.kill()
    deadline = time.monotonic() + 10  # ttl 1 s, reaped within a few seconds
    while "https://example.com/on-a" in _listed(b, token):
        assert time.monotonic() < deadline, "the dead node's subscription is still listed"
        time.sleep(0.2)
    ended: list[dict[str, Any]] = []
    while not ended:
        event = watcher.event(10)
        doc = json.loads(event.data)
        if doc["topic"] == "https://example.com/on-a" and not doc["active"]:
            ended.append(doc)
    assert ended[0]["type"] == "Subscription"
