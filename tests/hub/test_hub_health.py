"""Health probes in every state of a hub process: starting while Redis is not reachable yet,
serving, draining. ``/livez`` says the process runs, ``/readyz`` that it serves, ``/healthz``
keeps its meaning; everything else gets a 503 naming why until the hub serves."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import IO

import httpx
import pytest
import redis

from skipfilter.hub import HubSettings
from tests.hub.hubtest import HUB, PUBLISHER_KEY, Server, free_port, pub_token
from tests.hub.redis_server import RedisServer, redis_available

ENV = {"MERCURE_PUBLISHER_JWT_KEY": PUBLISHER_KEY}
TOPIC = "https://example.com/books/1"


def _hub_waiting_for(redis_url: str, port: int, log: IO[str], *extra: str) -> subprocess.Popen[str]:
    command = [sys.executable, "-m", "skipfilter.cli", "hub", "--anonymous", *extra]
    command += ["--protocol-version-compatibility", "8", "--log-level", "warning"]
    command += ["--addr", f"127.0.0.1:{port}", "--transport", redis_url]
    return subprocess.Popen(
        command,
        env={**os.environ, **ENV},
        stdout=log,
        stderr=subprocess.STDOUT,
        text=True,
    )


def _until(check: Callable[[], bool], seconds: float, what: str) -> None:
    deadline = time.monotonic() + seconds
    while not check():
        assert time.monotonic() < deadline, what
        time.sleep(0.1)


def _answers(url: str, path: str, status: int) -> bool:
    try:
        return httpx.get(url + path, timeout=2).status_code == status
    except httpx.TransportError:
        return False


@pytest.mark.skipif(not redis_available(), reason="redis-server is not installed")
def test_a_hub_waiting_for_redis_answers_at_once_and_serves_once_it_comes(
    tmp_path: Path,
) -> None:
    redis_server = RedisServer(tmp_path)  # not started: the hub comes up first
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    with tempfile.TemporaryFile(mode="w+") as log:
        node = _hub_waiting_for(redis_server.url, port, log)
        try:
            _until(lambda: _answers(url, "/livez", 200), 20, "no /livez while waiting")
            with httpx.Client(base_url=url, timeout=2) as client:
                started = time.monotonic()
                ready = client.get("/readyz")
                assert ready.status_code == 503
                assert ready.text.startswith("not ready: the hub is starting: waiting for its")
                assert str(redis_server.port) in ready.text  # names what it waits for
                health = client.get("/healthz")
                assert health.status_code == 503 and health.text.startswith("unhealthy: ")
                published = client.post(
                    HUB, data={"topic": TOPIC}, headers={"Authorization": f"Bearer {pub_token()}"}
                )
                assert published.status_code == 503
                assert "waiting for its transport" in published.text
                assert "nothing was done" in published.text
                assert published.headers["retry-after"] == "1"
                subscribed = client.get(HUB, params={"topic": TOPIC})  # the native path too
                assert subscribed.status_code == 503 and "waiting" in subscribed.text
                assert time.monotonic() - started < 2  # each answered at once
            redis_server.start()
            try:
                _until(lambda: _answers(url, "/readyz", 200), 30, "not ready after Redis came")
                assert httpx.get(url + "/healthz").text == "ok\n"
                published = httpx.post(
                    url + HUB,
                    data={"topic": TOPIC, "id": "after"},
                    headers={"Authorization": f"Bearer {pub_token()}"},
                )
                assert published.status_code == 200 and published.text == "after"
                node.send_signal(signal.SIGTERM)
                assert node.wait(20) in (0, -signal.SIGTERM)  # uvicorn re-raises it
            finally:
                redis_server.stop()
        finally:
            if node.poll() is None:
                node.kill()
            log.seek(0)
            output = log.read()
    assert "cannot start yet" in output
    assert "Traceback" not in output, output


@pytest.mark.skipif(not redis_available(), reason="redis-server is not installed")
def test_ctrl_c_while_waiting_for_redis_exits_quietly(tmp_path: Path) -> None:
    port = free_port()
    with tempfile.TemporaryFile(mode="w+") as log:
        node = _hub_waiting_for(f"redis://127.0.0.1:{free_port()}/0", port, log)
        try:
            url = f"http://127.0.0.1:{port}"
            _until(lambda: _answers(url, "/livez", 200), 20, "no /livez while waiting")
            node.send_signal(signal.SIGINT)
            assert node.wait(15) == 0
        finally:
            if node.poll() is None:
                node.kill()
            log.seek(0)
            output = log.read()
    assert "Traceback" not in output and "TransportUnavailable" not in output, output


def test_probes_of_a_serving_then_draining_hub(
    make_server: Callable[..., Server], settings: HubSettings
) -> None:
    server = make_server(settings)
    with server.client() as client:
        assert [client.get(p).text for p in ("/livez", "/readyz", "/healthz")] == ["ok\n"] * 3
        server.call(_stop(server))
        live, ready, health = (client.get(p) for p in ("/livez", "/readyz", "/healthz"))
        assert (live.status_code, live.text) == (200, "ok\n")
        assert (ready.status_code, ready.text) == (503, "not ready: the hub is shutting down\n")
        assert (health.status_code, health.text) == (503, "shutting down\n")


async def _stop(server: Server) -> None:
    server.hub.stop_streams()


def test_probes_and_metrics_answer_whatever_the_host_with_public_urls(
    make_server: Callable[..., Server], settings: HubSettings
) -> None:
    """Probes and scrapers use addresses, not names: --public-urls answers them (and 421 to
    the rest)."""
    server = make_server(
        settings.with_changes(public_urls=("https://hub.example.com",)), metrics=True
    )
    with server.client() as client:
        for path in ("/livez", "/readyz", "/healthz"):
            assert client.get(path).status_code == 200, path
        assert client.get(HUB, params={"topic": TOPIC}).status_code == 421
    assert httpx.get(server.metrics_url).status_code == 200


class _Silent:
    """A loopback server that accepts connections and never answers (a Redis or a sentinel
    frozen mid-way): what holds a start for as long as the client's timeouts."""

    def __init__(self) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", free_port()))
        self.sock.listen(64)
        self.port = self.sock.getsockname()[1]
        self.held: list[socket.socket] = []
        self.thread = threading.Thread(target=self._accept, daemon=True)
        self.thread.start()

    def _accept(self) -> None:
        with contextlib.suppress(OSError):
            while True:
                self.held.append(self.sock.accept()[0])

    def close(self) -> None:
        """Stop listening and drop what was accepted (the client sees the connection end)."""
        with contextlib.suppress(OSError):
            self.sock.shutdown(socket.SHUT_RDWR)
        self.sock.close()
        for conn in self.held:
            conn.close()
        self.thread.join(5)


def _livez_from_the_port_opening(port: int, node: subprocess.Popen[str]) -> float:
    """Seconds from the moment the hub's port takes connections (it listens before it
    serves) to /livez's 200; fails if the process dies first."""
    deadline = time.monotonic() + 30
    while True:
        with socket.socket() as probe:
            if probe.connect_ex(("127.0.0.1", port)) == 0:
                break
        assert node.poll() is None and time.monotonic() < deadline, "the hub never listened"
        time.sleep(0.02)
    opened = time.monotonic()
    answer = httpx.get(f"http://127.0.0.1:{port}/livez", timeout=30)
    assert (answer.status_code, answer.text) == (200, "ok\n")
    return time.monotonic() - opened


#: Seconds /livez may take from the port opening (the start waits 0.5 s for its transport;
#: a first attempt against a silent Redis takes 10.5 s, against silent sentinels 45 s).
LIVE_WITHIN = 3.0
SECRET = "Kq7wS3cr3tZ9"


@pytest.mark.skipif(not redis_available(), reason="redis-server is not installed")
def test_livez_answers_at_once_while_a_silent_redis_holds_the_start(tmp_path: Path) -> None:
    """/livez from the first moment; /readyz 503 naming the Redis (its password hidden)
    until a real Redis answers there, then 200."""
    silent = _Silent()
    port = free_port()
    with tempfile.TemporaryFile(mode="w+") as log:
        node = _hub_waiting_for(f"redis://:{SECRET}@127.0.0.1:{silent.port}/0", port, log)
        try:
            assert _livez_from_the_port_opening(port, node) < LIVE_WITHIN
            ready = httpx.get(f"http://127.0.0.1:{port}/readyz", timeout=5)
            assert ready.status_code == 503, ready.text
            assert ready.text.startswith("not ready: the hub is starting"), ready.text
            assert f"127.0.0.1:{silent.port}" in ready.text and SECRET not in ready.text
            silent.close()  # the attempt ends; a real Redis takes the port
            with RedisServer(tmp_path, port=silent.port) as redis_server:
                with redis.Redis(port=redis_server.port, socket_timeout=10) as admin:
                    admin.config_set("requirepass", SECRET)
                url = f"http://127.0.0.1:{port}"
                _until(lambda: _answers(url, "/readyz", 200), 30, "not ready once Redis came")
                node.send_signal(signal.SIGTERM)
                node.wait(20)
        finally:
            silent.close()
            if node.poll() is None:
                node.kill()
            log.seek(0)
            output = log.read()
    assert SECRET not in output, output


def test_livez_answers_at_once_while_silent_sentinels_hold_the_start() -> None:
    sentinels = [_Silent() for _ in range(3)]
    hosts = ",".join(f"127.0.0.1:{s.port}" for s in sentinels)
    port = free_port()
    with tempfile.TemporaryFile(mode="w+") as log:
        url = f"redis+sentinel://{SECRET}@{hosts}/hub/0?sentinel_password=Vx4sEnT1nelP8"
        node = _hub_waiting_for(url, port, log, "--header-timeout", "1")
        try:
            assert _livez_from_the_port_opening(port, node) < LIVE_WITHIN
            ready = httpx.get(f"http://127.0.0.1:{port}/readyz", timeout=5)
            assert ready.status_code == 503 and hosts in ready.text, ready.text
            assert SECRET not in ready.text and "Vx4sEnT1nelP8" not in ready.text
            # a connection that never sends its head is closed while the start still waits
            with socket.create_connection(("127.0.0.1", port), timeout=10) as idle:
                opened = time.monotonic()
                assert idle.recv(1) == b"", "the hub answered a head it never got"
                assert time.monotonic() - opened < 1 + 4, "no head timeout while starting"
        finally:
            node.kill()
            node.wait(10)
            for sentinel in sentinels:
                sentinel.close()


def test_livez_answers_at_once_on_sqlite(tmp_path: Path) -> None:
    port = free_port()
    command = [sys.executable, "-m", "skipfilter.cli", "hub", "--anonymous"]
    command += ["--protocol-version-compatibility", "8", "--addr", f"127.0.0.1:{port}"]
    command += ["--history", str(tmp_path / "history.db")]
    with tempfile.TemporaryFile(mode="w+") as log:
        node = subprocess.Popen(
            command, env={**os.environ, **ENV}, stdout=log, stderr=subprocess.STDOUT, text=True
        )
        try:
            assert _livez_from_the_port_opening(port, node) < LIVE_WITHIN
            _until(lambda: _answers(f"http://127.0.0.1:{port}", "/readyz", 200), 10, "not ready")
        finally:
            node.kill()
            node.wait(10)
