"""The ``skipfilter hub`` command as a separate process: durability across SIGKILL, env vars."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from hubtest import HUB, PUBLISHER_KEY, free_port, pub_token
from keytest import key_pair

from skipfilter.hub.cli import add_arguments, settings_from_args

BOOK = "https://example.com/books/1"


class Process:
    """``python -m skipfilter.cli hub ...`` on a free port."""

    def __init__(self, *args: str, env: dict[str, str] | None = None) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        cmd = [sys.executable, "-m", "skipfilter.cli", "hub", "--addr", f"127.0.0.1:{self.port}"]
        self.proc = subprocess.Popen(
            [*cmd, "--heartbeat", "0", "--log-level", "warning", *args],
            env={**os.environ, **(env or {})},
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        deadline = time.monotonic() + 20
        while True:
            try:
                httpx.get(self.url + "/metrics", timeout=1)
                break
            except httpx.TransportError:
                if time.monotonic() > deadline or self.proc.poll() is not None:
                    self.proc.kill()
                    raise AssertionError(
                        f"hub did not start: {self.proc.communicate()[0]}"
                    ) from None
                time.sleep(0.1)

    def kill(self) -> str:
        self.proc.send_signal(signal.SIGKILL)
        out, _ = self.proc.communicate(timeout=10)
        return out


@pytest.fixture
def processes() -> Iterator[list[Process]]:
    started: list[Process] = []
    yield started
    for process in started:
        if process.proc.poll() is None:
            process.kill()


def _ids(url: str, last_event_id: str, count: int) -> list[str]:
    got: list[str] = []
    with (
        httpx.Client(base_url=url, timeout=10) as client,
        client.stream(
            "GET", HUB, params={"topic": BOOK}, headers={"Last-Event-ID": last_event_id}
        ) as response,
    ):
        assert response.status_code == 200
        for line in response.iter_lines():
            if line.startswith("id: "):
                got.append(line[4:])
                if len(got) == count:
                    break
    return got


def test_acknowledged_updates_survive_sigkill(tmp_path: Path, processes: list[Process]) -> None:
    history = str(tmp_path / "durable.sqlite3")
    args = ("--anonymous", "--history", history)
    env = {"MERCURE_PUBLISHER_JWT_KEY": PUBLISHER_KEY}
    first = Process(*args, env=env)
    processes.append(first)
    headers = {"Authorization": f"Bearer {pub_token()}"}
    with httpx.Client(base_url=first.url, timeout=10) as client:
        ids = [
            client.post(HUB, data={"topic": BOOK, "data": f"n{i}"}, headers=headers).text
            for i in range(40)
        ]
    assert all(i.startswith("urn:uuid:") for i in ids)
    first.kill()  # no shutdown, no flush: only what was committed before each 200 remains
    second = Process(*args, env=env)
    processes.append(second)
    assert _ids(second.url, ids[9], 30) == ids[10:]
    assert _ids(second.url, "earliest", 40) == ids
    with httpx.Client(base_url=second.url, timeout=10) as client:
        new = client.post(HUB, data={"topic": BOOK}, headers=headers).text
    assert _ids(second.url, ids[-1], 1) == [new]  # sequence numbers continue after restart


def test_go_hub_environment_variables_and_flags() -> None:
    import argparse

    parser = argparse.ArgumentParser()
    add_arguments(parser)
    subscriber_pem = key_pair("RS256").public_pem  # RS256 keys are checked at start-up
    env: dict[str, Any] = {
        "MERCURE_PUBLISHER_JWT_KEY": "p",
        "MERCURE_PUBLISHER_JWT_ALG": "HS512",
        "MERCURE_SUBSCRIBER_JWT_KEY": subscriber_pem,
        "MERCURE_SUBSCRIBER_JWT_ALG": "RS256",
    }
    settings = settings_from_args(
        parser.parse_args(["--cors-origins", "https://a, https://b"]), env
    )
    assert (settings.publisher_key, settings.publisher_alg) == ("p", "HS512")
    assert (settings.subscriber_key, settings.subscriber_alg) == (subscriber_pem, "RS256")
    assert settings.cors_origins == ("https://a", "https://b")
    flags = parser.parse_args(["--publisher-jwt-key", "flag", "--anonymous", "--subscriptions"])
    settings = settings_from_args(flags, env)
    assert settings.publisher_key == "flag" and settings.anonymous and settings.subscriptions
    demo = settings_from_args(parser.parse_args(["--demo"]), {})
    assert demo.demo and demo.anonymous and demo.publisher_key


def test_sigterm_ends_open_streams_with_a_reason(tmp_path: Path, processes: list[Process]) -> None:
    hub = Process("--anonymous", "--history", str(tmp_path / "stop.sqlite3"))
    processes.append(hub)
    lines: list[str] = []
    with (
        httpx.Client(base_url=hub.url, timeout=10) as client,
        client.stream("GET", HUB, params={"topic": BOOK}) as response,
    ):
        assert response.status_code == 200
        started = time.monotonic()
        hub.proc.send_signal(signal.SIGTERM)
        lines.extend(response.iter_lines())  # ends when the hub closes the stream
    assert any("shutting down" in line for line in lines)
    assert hub.proc.wait(10) in (0, -signal.SIGTERM)  # uvicorn re-raises the signal
    assert time.monotonic() - started < 4
