"""Limits a client runs into, each saying so: connections that never send a request, the
metrics listener, a publish's field count, reserved ids."""

from __future__ import annotations

import socket
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.hub.hubtest import HubProcess, Stream

BOOK = "https://example.com/books/1"


@pytest.fixture
def processes() -> Iterator[list[HubProcess]]:
    started: list[HubProcess] = []
    yield started
    for process in started:
        if process.proc.poll() is None:
            process.kill()


def _closed_by_hub(sock: socket.socket, within: float) -> bool:
    sock.settimeout(within)
    try:
        return sock.recv(1) == b""
    except TimeoutError:
        return False
    except OSError:
        return True


def test_connections_that_never_send_a_request_are_closed_and_free_their_room(
    tmp_path: Path, processes: list[HubProcess]
) -> None:
    history = str(tmp_path / "idle.sqlite3")
    hub = HubProcess("--anonymous", "--history", history, hard_open_files=200)
    processes.append(hub)
    assert "room for about 136 connections" in hub.output()
    idle = [socket.create_connection(("127.0.0.1", hub.port)) for _ in range(139)]
    idle.append(socket.create_connection(("127.0.0.1", hub.port)))
    idle[-1].sendall(b"GET /healthz HT")  # a request line that never ends
    try:
        started = time.monotonic()
        assert _closed_by_hub(idle[0], within=15), "an idle connection was never closed"
        assert 9 < time.monotonic() - started < 15  # the default --header-timeout: 10 s
        assert all(_closed_by_hub(sock, within=2) for sock in idle)
        response = httpx.get(hub.url + "/healthz", timeout=5)
        assert response.status_code == 200  # the room they held is free again
        stream = Stream(hub, [BOOK])  # type: ignore[arg-type]
        time.sleep(11)  # a stream sends no request head: it is never cut for that
        assert not stream.ended.is_set()
        stream.close()
    finally:
        for sock in idle:
            sock.close()
