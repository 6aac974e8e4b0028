"""Restarts are normal: a node that (re)started serves resumes from the stored history like
any other node, whatever it delivered itself (real hub processes, real redis-server)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest

from tests.hub.hubtest import HUB, PUBLISHER_KEY, HubProcess, Stream, pub_token
from tests.hub.redis_server import RedisServer, redis_available

TOPIC = "https://example.com/books/1"
ENV = {"MERCURE_PUBLISHER_JWT_KEY": PUBLISHER_KEY}


@pytest.fixture
def processes() -> Iterator[Callable[..., HubProcess]]:
    """Start hub processes; all killed at teardown."""
    started: list[HubProcess] = []

    def start(*args: str) -> HubProcess:
        node = HubProcess("--anonymous", *args, env=ENV)
        started.append(node)
        return node

    yield start
    for node in started:
        if node.proc.poll() is None:
            node.kill()


def _publish(node: HubProcess, prefix: str, count: int) -> list[str]:
    headers = {"Authorization": f"Bearer {pub_token()}"}
    with httpx.Client(base_url=node.url, timeout=10) as client:
        for i in range(count):
            response = client.post(
                HUB, data={"topic": TOPIC, "id": f"{prefix}{i}"}, headers=headers
            )
            assert response.status_code == 200, response.text
    return [f"{prefix}{i}" for i in range(count)]


def _received(stream: Stream, count: int) -> list[str]:
    """The ids of the next ``count`` events, then nothing more."""
    got = [stream.event(15).id for _ in range(count)]
    stream.nothing(0.5)
    return got


def _resumes(node: HubProcess, acked: list[str]) -> None:
    """Every way to resume, on ``node``: all of ``acked`` (or those after the 50th), in
    order, once; then live updates follow without a gap."""
    url = node  # Stream takes anything with a ``url``
    cases = [
        (Stream(url, [TOPIC], params={"lastEventID": "earliest"}), acked),  # type: ignore[arg-type]
        (Stream(url, [TOPIC], headers={"Last-Event-ID": "earliest"}), acked),  # type: ignore[arg-type]
        (Stream(url, [TOPIC], headers={"Last-Event-ID": acked[49]}), acked[50:]),  # type: ignore[arg-type]
    ]
    for stream, expected in cases:
        assert stream.response is not None and stream.response.status_code == 200
        assert _received(stream, len(expected)) == expected
    more = _publish(node, "more", 3)
    for stream, _ in cases:
        assert _received(stream, 3) == more
        stream.close()


@pytest.mark.skipif(not redis_available(), reason="redis-server is not installed")
def test_a_restarted_redis_node_replays_the_shared_stream(
    processes: Callable[..., HubProcess], tmp_path: Path
) -> None:
    with RedisServer(tmp_path) as redis_server:
        a = processes("--transport", redis_server.url)
        b = processes("--transport", redis_server.url)
        acked = _publish(a, "a", 100)
        a.kill()
        acked += _publish(b, "b", 100)
        restarted = processes("--transport", redis_server.url)  # node A again, same stream
        _resumes(restarted, acked)


@pytest.mark.skipif(not redis_available(), reason="redis-server is not installed")
def test_a_node_started_after_the_updates_replays_them(
    processes: Callable[..., HubProcess], tmp_path: Path
) -> None:
    with RedisServer(tmp_path) as redis_server:
        first = processes("--transport", redis_server.url)
        acked = _publish(first, "u", 100)
        late = processes("--transport", redis_server.url)  # never saw any of them live
        _resumes(late, acked)


def test_a_restarted_sqlite_node_replays_its_history(
    processes: Callable[..., HubProcess], tmp_path: Path
) -> None:
    history = str(tmp_path / "restart.sqlite3")
    first = processes("--history", history)
    acked = _publish(first, "u", 100)
    first.kill()
    _resumes(processes("--history", history), acked)
