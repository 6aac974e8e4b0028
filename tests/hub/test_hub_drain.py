"""SIGTERM drains a hub process (real processes, EventSource-like clients): it stops
accepting, ends its streams, answers every publish it accepted, and exits within
``--shutdown-timeout``; its clients resume (here, or on another node) with the last id they
got and receive every stored update exactly once, in the one stored order."""

from __future__ import annotations

import os
import signal
import socket
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

import httpx
import pytest
import redis

from tests.hub.clients import Publishing, Resuming, check_delivery
from tests.hub.hubtest import HUB, PUBLISHER_KEY, HubProcess, free_port, pub_token
from tests.hub.redis_server import RedisServer, redis_available, stream_fields
from tests.hub.test_hub_nodes import nodes, redis_server  # noqa: F401  (fixtures)

TOPIC = "https://example.com/books/1"
ENV = {"MERCURE_PUBLISHER_JWT_KEY": PUBLISHER_KEY}


def _sigterm(node: HubProcess, bound: float) -> float:
    """Send SIGTERM; return how long the process took to exit (asserting it did, cleanly)."""
    started = time.monotonic()
    node.proc.send_signal(signal.SIGTERM)
    code = node.proc.wait(bound + 10)
    took = time.monotonic() - started
    assert code in (0, -signal.SIGTERM), node.output()  # uvicorn re-raises the signal
    assert took < bound, f"took {took:.1f} s to drain: {node.output()}"
    assert "exiting now" not in node.output()  # the drain finished before its deadline
    return took


def test_sigterm_drains_a_sqlite_node_and_its_clients_resume_after_the_restart(
    tmp_path: Path,
) -> None:
    history = str(tmp_path / "drain.sqlite3")
    args = ("--anonymous", "--history", history, "--shutdown-timeout", "5")
    node = HubProcess(*args, env=ENV)
    target = {"url": node.url}
    clients = [Resuming(lambda: target["url"], [TOPIC]) for _ in range(5)]
    for client in clients:
        client.wait_opened()
    publisher = Publishing(lambda: target["url"], "p", pub_token(), TOPIC)
    restarted = None
    try:
        publisher.wait_acked(50)
        _sigterm(node, 5)
        ended = {len(c.ids) for c in clients}
        restarted = HubProcess(*args, env=ENV)
        target["url"] = restarted.url  # the same node, back (on another port here)
        publisher.wait_acked(len(publisher.acked) + 20)
        publisher.stop()
        with sqlite3.connect(history) as db:
            stored = [row[0] for row in db.execute("SELECT id FROM updates ORDER BY seq")]
        assert min(ended) < len(stored)  # the clients did have something to resume
        check_delivery([publisher], stored, clients)
        assert all(c.opened >= 2 for c in clients)
    finally:
        publisher.stop()
        for client in clients:
            client.close()
        if restarted is not None:
            restarted.kill()


@pytest.mark.skipif(not redis_available(), reason="redis-server is not installed")
def test_sigterm_drains_a_redis_node_and_its_clients_resume_on_another(
    nodes: Callable[..., HubProcess],  # noqa: F811
    redis_server: RedisServer,  # noqa: F811
) -> None:
    a = nodes("--shutdown-timeout", "5")
    b = nodes("--shutdown-timeout", "5")
    target = {"url": a.url}
    clients = [Resuming(lambda: target["url"], [TOPIC]) for _ in range(5)]
    for client in clients:
        client.wait_opened()
    publishers = [
        Publishing(lambda: a.url, "a", pub_token(), TOPIC),
        Publishing(lambda: b.url, "b", pub_token(), TOPIC),
    ]
    try:
        publishers[0].wait_acked(40)
        target["url"] = b.url  # where a load balancer sends them once a stops accepting
        _sigterm(a, 5)
        publishers[1].wait_acked(len(publishers[1].acked) + 20)
        for publisher in publishers:
            publisher.stop()
        store = redis.Redis.from_url(redis_server.url, decode_responses=True)
        stored = [f["i"] for f in stream_fields(store)]
        store.close()
        check_delivery(publishers, stored, clients)
        assert all(c.opened >= 2 for c in clients)
    finally:
        for publisher in publishers:
            publisher.stop()
        for client in clients:
            client.close()


@pytest.mark.skipif(not redis_available(), reason="redis-server is not installed")
def test_a_drain_answers_a_publish_redis_never_confirmed_and_keeps_its_deadline(
    nodes: Callable[..., HubProcess],  # noqa: F811
    redis_server: RedisServer,  # noqa: F811
) -> None:
    node = nodes("--shutdown-timeout", "3")
    answer: dict[str, httpx.Response | Exception] = {}

    def publish() -> None:
        try:
            answer["r"] = httpx.post(
                node.url + HUB,
                data={"topic": TOPIC, "id": "stuck"},
                headers={"Authorization": f"Bearer {pub_token()}"},
                timeout=30,
            )
        except httpx.HTTPError as exc:
            answer["r"] = exc

    assert redis_server.process is not None
    os.kill(redis_server.process.pid, signal.SIGSTOP)  # Redis hangs: nothing is confirmed
    try:
        thread = threading.Thread(target=publish)
        thread.start()
        time.sleep(0.5)  # the publish waits for Redis
        started = time.monotonic()
        node.proc.send_signal(signal.SIGTERM)
        node.proc.wait(15)
        took = time.monotonic() - started
        thread.join(15)
    finally:
        os.kill(redis_server.process.pid, signal.SIGCONT)
    assert took < 3 + 1, f"took {took:.1f} s: {node.output()}"
    response = answer["r"]
    assert isinstance(response, httpx.Response), response  # an answer, not a reset
    assert response.status_code == 503
    assert "may or may not have been stored" in response.text


@pytest.mark.skipif(not redis_available(), reason="redis-server is not installed")
def test_a_node_stopped_before_it_served_answers_the_requests_waiting_for_it(
    redis_server: RedisServer,  # noqa: F811
) -> None:
    """A node waiting for Redis at start-up has its port open (connections queue up); told
    to stop, it answers each waiting request 503 instead of leaving the kernel to reset it."""
    redis_server.stop()
    port = free_port()
    command = [sys.executable, "-m", "skipfilter.cli", "hub", "--anonymous"]
    command += ["--protocol-version-compatibility", "8"]
    command += ["--addr", f"127.0.0.1:{port}", "--transport", redis_server.url]
    node = subprocess.Popen(
        command,
        env={**os.environ, **ENV},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        deadline = time.monotonic() + 30
        while True:  # the port opens before the hub can serve
            try:
                waiting = [socket.create_connection(("127.0.0.1", port)) for _ in range(3)]
                break
            except OSError:
                assert time.monotonic() < deadline and node.poll() is None
                time.sleep(0.1)
        body = f"topic={TOPIC}&id=queued".encode()
        for sock in waiting:
            sock.sendall(
                f"POST {HUB} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
                f"Authorization: Bearer {pub_token()}\r\n"
                "Content-Type: application/x-www-form-urlencoded\r\n"
                f"Content-Length: {len(body)}\r\n\r\n".encode()
                + body
            )
        time.sleep(1)
        node.send_signal(signal.SIGTERM)
        output, _ = node.communicate(timeout=20)
        for sock in waiting:
            sock.settimeout(10)
            answer = sock.recv(4096)
            assert answer.startswith(b"HTTP/1.1 503"), (answer, output)
            assert b"nothing was done" in answer
            sock.close()
        assert "cannot start yet" in output
    finally:
        if node.poll() is None:
            node.kill()
