"""The ``skipfilter hub`` command as a separate process: durability across SIGKILL, env vars."""

from __future__ import annotations

import resource
import signal
import socket
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from skipfilter.hub.server.cli import add_arguments, settings_from_args
from tests.hub.hubtest import HUB, PUBLISHER_KEY, HubProcess, pub_token
from tests.hub.keytest import key_pair

BOOK = "https://example.com/books/1"


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


def test_acknowledged_updates_survive_sigkill(tmp_path: Path, processes: list[HubProcess]) -> None:
    history = str(tmp_path / "durable.sqlite3")
    args = ("--anonymous", "--history", history)
    env = {"MERCURE_PUBLISHER_JWT_KEY": PUBLISHER_KEY}
    first = HubProcess(*args, env=env)
    processes.append(first)
    headers = {"Authorization": f"Bearer {pub_token()}"}
    with httpx.Client(base_url=first.url, timeout=10) as client:
        ids = [
            client.post(HUB, data={"topic": BOOK, "data": f"n{i}"}, headers=headers).text
            for i in range(40)
        ]
    assert all(i.startswith("urn:uuid:") for i in ids)
    first.kill()  # no shutdown, no flush: only what was committed before each 200 remains
    second = HubProcess(*args, env=env)
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
        "MERCURE_PUBLISHER_JWT_KEY": "p" * 64,
        "MERCURE_PUBLISHER_JWT_ALG": "HS512",
        "MERCURE_SUBSCRIBER_JWT_KEY": subscriber_pem,
        "MERCURE_SUBSCRIBER_JWT_ALG": "RS256",
        "MERCURE_PROTOCOL_VERSION_COMPATIBILITY": "8",  # keys without an issuer: 0.x tokens
    }
    settings = settings_from_args(
        parser.parse_args(["--cors-origins", "https://a, https://b"]), env
    )
    assert (settings.publisher_key, settings.publisher_alg) == ("p" * 64, "HS512")
    assert (settings.subscriber_key, settings.subscriber_alg) == (subscriber_pem, "RS256")
    assert settings.cors_origins == ("https://a", "https://b")
    flag = "flag" * 8
    flags = parser.parse_args(["--publisher-jwt-key", flag, "--anonymous", "--subscriptions"])
    settings = settings_from_args(flags, env)
    assert settings.publisher_key == flag and settings.anonymous and settings.subscriptions
    demo = settings_from_args(parser.parse_args(["--demo"]), {})
    assert demo.demo and demo.anonymous and demo.publisher_key


def test_sigterm_ends_open_streams_with_a_reason(
    tmp_path: Path, processes: list[HubProcess]
) -> None:
    hub = HubProcess("--anonymous", "--history", str(tmp_path / "stop.sqlite3"))
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


def test_the_hub_raises_its_open_files_limit_and_says_how_many_connections_fit(
    tmp_path: Path, processes: list[HubProcess]
) -> None:
    hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
    if hard != resource.RLIM_INFINITY and hard <= 512:
        pytest.skip("the hard open-files limit is too low to raise")
    hub = HubProcess("--anonymous", "--history", str(tmp_path / "f.sqlite3"), open_files=512)
    processes.append(hub)
    with open(f"/proc/{hub.proc.pid}/limits") as limits:
        line = next(row for row in limits if row.startswith("Max open files"))
    soft = int(line.split()[3])
    assert soft == hard if hard != resource.RLIM_INFINITY else soft > 512
    out = hub.kill()
    assert f"open files limit {soft} (raised from 512): room for about" in out


def test_a_full_hub_process_answers_503_and_keeps_serving(
    tmp_path: Path, processes: list[HubProcess]
) -> None:
    history = str(tmp_path / "full.sqlite3")
    hub = HubProcess("--anonymous", "--history", history, hard_open_files=200)
    processes.append(hub)
    assert "open files limit 200: room for about 136 connections" in hub.output()
    held = []
    try:
        for _ in range(136):
            sock = socket.create_connection(("127.0.0.1", hub.port), timeout=10)
            sock.sendall(f"GET {HUB}?topic=t HTTP/1.1\r\nHost: x\r\n\r\n".encode())
            assert sock.recv(12) == b"HTTP/1.1 200"
            held.append(sock)
        response = httpx.get(hub.url + HUB, params={"topic": "t"}, timeout=5)
        assert response.status_code == 503
        assert "maximum of 136 connections" in response.text
        held.pop().close()  # one leaves: there is room again
        deadline = time.monotonic() + 5
        while httpx.get(hub.url + "/healthz", timeout=5).status_code != 200:
            assert time.monotonic() < deadline
            time.sleep(0.05)
    finally:
        for sock in held:
            sock.close()
