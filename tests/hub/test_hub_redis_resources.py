"""Resources a client or a neighbour can exhaust on a hub node sharing a real redis-server:
Redis traffic of replays, the history window, pooled connections, trimming work."""

from __future__ import annotations

import json
import logging
import signal
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest
import redis

from tests.hub.hubtest import HUB, Server, Stream
from tests.hub.redis_server import RedisServer, stream_fields

TOPIC = "https://example.com/big"


def _sent_by_redis(client: redis.Redis) -> int:
    return int(client.info("stats")["total_net_output_bytes"])


def test_replay_over_large_updates_reads_what_it_sends_not_quadratically_more(
    redis_hub: Callable[..., Server], redis_server: RedisServer
) -> None:
    node = redis_hub(ring_bytes=1 << 20)  # the ring holds ~2 of them: replay reads Redis
    payload = "x" * 600_000
    for i in range(40):
        assert node.publish(TOPIC, data=payload, id=f"big-{i}").status_code == 200
    stored = 40 * len(payload)
    watcher = redis.Redis.from_url(redis_server.url)
    before = _sent_by_redis(watcher)
    replays = [
        Stream(node, [TOPIC], params={"lastEventID": "earliest"}, raw=True) for _ in range(2)
    ]
    for replay in replays:
        ids: list[str] = []
        while len(ids) < 40:
            line = replay.next(30)
            if line.startswith("id: "):
                ids.append(line[4:])
        assert ids == [f"big-{i}" for i in range(40)]
        replay.close()
    sent = _sent_by_redis(watcher) - before
    # the old transport read 256 rows per step to keep ~1 MiB of them: ~10x this here
    shown = f"Redis sent {sent / 1e6:.0f} MB to replay 2 x {stored / 1e6:.0f} MB"
    assert sent < 2 * 2 * stored, shown


def _churn_node(request: pytest.FixtureRequest, transport: str, **changes: object) -> Server:
    """A hub with subscription events on, 50 real updates, then 3,840 subscription events
    (30 anonymous connect/close cycles of 64 selectors)."""
    changes = {"subscriptions": True, "history_size": 200, **changes}
    if transport == "redis":
        node: Server = request.getfixturevalue("redis_hub")(**changes)
    else:
        settings = request.getfixturevalue("settings")
        node = Server(settings.with_changes(**changes)).__enter__()
        request.addfinalizer(node.__exit__)
    for i in range(50):
        assert node.publish(TOPIC, id=f"real-{i}").status_code == 200
    selectors = [f"https://example.com/users/{i}" for i in range(64)]
    for _ in range(30):
        churn = Stream(node, selectors)
        churn.close()
        node.wait_subscribers(0)
    return node


def _resumes_from_the_first(node: Server) -> None:
    resumed = Stream(node, [TOPIC], headers={"Last-Event-ID": "real-0"})
    assert [resumed.event(10).id for _ in range(49)] == [f"real-{i}" for i in range(1, 50)]
    time.sleep(0.3)  # nothing else: (the stream may end, "fell behind", as events flood)
    assert not [e for e in list(resumed.items.queue) if e.data], list(resumed.items.queue)
    assert resumed.response is not None
    assert resumed.response.headers["last-event-id"] == "real-0"
    resumed.close()


@pytest.mark.parametrize("transport", ["redis", "sqlite"])
def test_subscription_events_cannot_push_updates_out_of_the_history(
    request: pytest.FixtureRequest, transport: str
) -> None:
    node = _churn_node(request, transport)  # 200 updates kept; 3,840 events come and go
    _resumes_from_the_first(node)


@pytest.mark.parametrize("transport", ["redis", "sqlite"])
def test_subscription_events_are_kept_within_their_own_budget(
    request: pytest.FixtureRequest, transport: str
) -> None:
    node = _churn_node(request, transport, events_history_size=100)
    deadline = time.monotonic() + 10
    while node.stored() > 50 + 100 + 64 and time.monotonic() < deadline:
        time.sleep(0.05)  # the events of the last cycles are stored in the background
    assert node.stored() <= 50 + 100 + 64  # trimmed in steps: at most one step over
    _resumes_from_the_first(node)


def _fill(client: redis.Redis, count: int) -> None:
    """``count`` valid updates straight into the stream (as many publishes would)."""
    with client.pipeline(transaction=False) as pipe:
        for i in range(count):
            update = json.dumps([f"old-{i}", [TOPIC], "d", False, None, None])
            pipe.xadd("skipfilter:updates", {"u": update, "i": f"old-{i}"})
        pipe.execute()


def _slowest_script_us(client: redis.Redis) -> int:
    """The longest EVALSHA Redis ran since the slow log was reset, in microseconds."""
    runs = [e for e in client.slowlog_get(1000) if e["command"].startswith(b"EVALSHA")]
    return max((int(e["duration"]) for e in runs), default=0)


def test_nodes_with_different_history_sizes_never_trim_each_other_at_once(
    redis_hub: Callable[..., Server],
    redis_server: RedisServer,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.WARNING, logger="skipfilter.hub")
    client = redis.Redis.from_url(redis_server.url)
    big = redis_hub(history_size=20_000)
    _fill(client, 20_000)
    small = redis_hub(history_size=100)  # joins a cluster that keeps 20,000
    assert small.publish(TOPIC, id="from-small").status_code == 200
    assert client.xlen("skipfilter:updates") == 20_000  # big's history is kept
    assert "--history-size 100 differs from the 20000 kept by the nodes" in caplog.text
    assert big.publish(TOPIC, id="from-big").status_code == 200
    client.hset("skipfilter:config", "history_size", 100)  # an operator lowers it
    client.config_set("slowlog-log-slower-than", 0)
    client.slowlog_reset()
    assert small.publish(TOPIC, id="after-lowering").status_code == 200
    length = client.xlen("skipfilter:updates")
    assert length == 20_000 + 1 - 64, length  # one step of trimming per publish
    assert _slowest_script_us(client) < 50_000  # the old one call took 20,000 deletions
    for i in range(400):  # and the history reaches the new size step by step
        assert small.publish(TOPIC, id=f"more-{i}").status_code == 200
        if client.xlen("skipfilter:updates") <= 100:
            break
    assert client.xlen("skipfilter:updates") == 100
    assert _slowest_script_us(client) < 50_000


def _redis_clients(client: redis.Redis) -> int:
    """Connections Redis holds from anyone but ``client``."""
    return len(client.client_list()) - 1


def _subscribe_status(node: Server, last_event_id: str) -> int:
    headers = {"Last-Event-ID": last_event_id}
    params = {"topic": TOPIC}
    try:
        with httpx.stream(
            "GET", node.url + HUB, params=params, headers=headers, timeout=30
        ) as response:
            return response.status_code
    except httpx.HTTPError:
        return 0


def test_lookups_during_a_redis_pause_do_not_leak_pooled_connections(
    redis_hub: Callable[..., Server], redis_server: RedisServer
) -> None:
    node = redis_hub()
    watcher = redis.Redis.from_url(redis_server.url)
    assert node.publish(TOPIC, id="known").status_code == 200
    held = _redis_clients(watcher)
    assert redis_server.process is not None
    redis_server.process.send_signal(signal.SIGSTOP)  # Redis "paused" for 3 s
    try:
        with ThreadPoolExecutor(100) as pool:
            statuses = pool.map(lambda i: _subscribe_status(node, f"unknown-{i}"), range(100))
            time.sleep(3)
            redis_server.process.send_signal(signal.SIGCONT)
            answered = list(statuses)
    finally:
        redis_server.process.send_signal(signal.SIGCONT)
    assert set(answered) <= {200, 503}, answered  # 503 when no connection was free in time
    time.sleep(0.5)
    assert _redis_clients(watcher) <= held + 16, "the pause left connections open"
    assert _subscribe_status(node, "unknown-again") == 200  # and the node serves as before
    assert node.publish(TOPIC, id="after").status_code == 200


def test_a_tail_that_stops_reading_makes_health_and_publishes_say_so_until_it_reads_again(
    redis_hub: Callable[..., Server], redis_server: RedisServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(
        "skipfilter.hub.transports.redis.transport.STUCK_AFTER", 2.5
    )  # 10 s in service
    node = redis_hub()
    assert node.publish(TOPIC, id="before").status_code == 200
    assert httpx.get(node.url + "/healthz", timeout=10).status_code == 200
    assert redis_server.process is not None
    redis_server.process.send_signal(signal.SIGSTOP)  # the tail's XREAD gets no answer
    try:
        deadline = time.monotonic() + 15
        while True:
            health = httpx.get(node.url + "/healthz", timeout=10)
            if health.status_code == 503:
                break
            assert time.monotonic() < deadline, "the stalled tail was never reported"
            time.sleep(0.1)
        assert "the Redis tail has not read for" in health.text, health.text
        refused = node.publish(TOPIC, id="while-stalled")
        assert refused.status_code == 503, refused.text
        assert "the Redis tail has not read for" in refused.text
        assert "not stored" in refused.text  # the hub never acknowledges what it cannot deliver
    finally:
        redis_server.process.send_signal(signal.SIGCONT)
    deadline = time.monotonic() + 15
    while httpx.get(node.url + "/healthz", timeout=10).status_code != 200:
        assert time.monotonic() < deadline, "the node stayed unhealthy after Redis came back"
        time.sleep(0.1)
    assert node.publish(TOPIC, id="after").status_code == 200
    watcher = redis.Redis.from_url(redis_server.url)
    ids = [json.loads(fields["u"])[0] for fields in stream_fields(watcher)]
    assert "while-stalled" not in ids and ids[-1] == "after"
