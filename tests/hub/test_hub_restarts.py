"""Restarts are normal: a node that (re)started serves resumes from the stored history like
any other node, whatever it delivered itself (real hub processes, real redis-server)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import httpx
import pytest

from tests.hub.hubtest import HUB, PUBLISHER_KEY, HubProcess, Stream, pub_token
from tests.hub.redis_server import redis_available
from tests.hub.test_hub_nodes import nodes, redis_server  # noqa: F401  (fixtures)

TOPIC = "https://example.com/books/1"
ENV = {"MERCURE_PUBLISHER_JWT_KEY": PUBLISHER_KEY}


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
        (Stream(url, [TOPIC], params={"lastEventID": "earliest"}), acked),
        (Stream(url, [TOPIC], headers={"Last-Event-ID": "earliest"}), acked),
        (Stream(url, [TOPIC], headers={"Last-Event-ID": acked[49]}), acked[50:]),
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
    nodes: Callable[..., HubProcess],  # noqa: F811
) -> None:
    a, b = nodes(), nodes()
    acked = _publish(a, "a", 100)
    a.kill()
    acked += _publish(b, "b", 100)
    _resumes(nodes(), acked)  # node A again, on the same stream


@pytest.mark.skipif(not redis_available(), reason="redis-server is not installed")
def test_a_node_started_after_the_updates_replays_them(
    nodes: Callable[..., HubProcess],  # noqa: F811
) -> None:
    acked = _publish(nodes(), "u", 100)
    _resumes(nodes(), acked)  # it never saw any of them live


def test_a_restarted_sqlite_node_replays_its_history(tmp_path: Path) -> None:
    history = str(tmp_path / "restart.sqlite3")
    first = HubProcess("--anonymous", "--history", history, env=ENV)
    acked = _publish(first, "u", 100)
    first.kill()
    restarted = HubProcess("--anonymous", "--history", history, env=ENV)
    try:
        _resumes(restarted, acked)
    finally:
        restarted.kill()
