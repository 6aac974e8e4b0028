"""Fixtures for the hub tests: each test gets its own hub (port, SQLite file) and streams."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from skipfilter.hub import HubSettings
from tests.hub.hubtest import PUBLISHER_KEY, SUBSCRIBER_KEY, HubProcess, Server, Stream
from tests.hub.redis_server import RedisServer, redis_available


@pytest.fixture(autouse=True)
def state_home(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Each test's hub processes keep their default history (``$XDG_STATE_HOME``) in a folder
    of its own: never the user's, never another test's."""
    home = tmp_path_factory.mktemp("state")
    monkeypatch.setenv("XDG_STATE_HOME", str(home))
    return home


@pytest.fixture
def settings(tmp_path: Path) -> HubSettings:
    return HubSettings(
        publisher_key=PUBLISHER_KEY,
        subscriber_key=SUBSCRIBER_KEY,
        anonymous=True,
        history_path=str(tmp_path / "history.sqlite3"),
        heartbeat=0,
        ring_size=64,
        history_size=1000,
        protocol_version_compatibility=8,  # the 0.x suite runs in compatibility mode
    )


@pytest.fixture(params=["native", "asgi"])
def stream_path(request: pytest.FixtureRequest) -> str:
    """Every hub test runs on both stream paths: written straight to sockets, and ASGI."""
    return str(request.param)


@pytest.fixture
def make_server(stream_path: str) -> Iterator[Callable[..., Server]]:
    """Start servers with given settings; all stopped at teardown."""
    started: list[Server] = []

    def make(settings: HubSettings, **kw: Any) -> Server:
        kw.setdefault("streams", stream_path)
        server = Server(settings, **kw).__enter__()
        started.append(server)
        return server

    yield make
    for server in started:
        server.__exit__()


@pytest.fixture
def server(make_server: Callable[..., Server], settings: HubSettings) -> Server:
    return make_server(settings)


@pytest.fixture
def streams() -> Iterator[Callable[..., Stream]]:
    """Open SSE streams: ``streams(server, ["topic"], headers=..., raw=True)``."""
    opened: list[Stream] = []

    def open_stream(server: Server, topics: list[str], **kw: Any) -> Stream:
        stream = Stream(server, topics, **kw)
        opened.append(stream)
        return stream

    yield open_stream
    for stream in opened:
        stream.close()


@pytest.fixture
def redis_server(tmp_path: Path) -> Iterator[RedisServer]:
    """A real redis-server (Debian's) for this test, on a free loopback port."""
    if not redis_available():
        pytest.skip("redis-server is not installed (make test installs it as root)")
    with RedisServer(tmp_path) as server:
        yield server


@pytest.fixture
def redis_hub(redis_server: RedisServer, settings: HubSettings) -> Iterator[Callable[..., Server]]:
    """Start hub nodes (in this process, native streams) sharing ``redis_server``:
    ``redis_hub(ring_size=4)``; all stopped at teardown."""
    started: list[Server] = []

    def make(**changes: Any) -> Server:
        node = Server(settings.with_changes(transport_url=redis_server.url, **changes))
        started.append(node.__enter__())
        return node

    yield make
    for node in started:
        node.__exit__()


@pytest.fixture
def processes() -> Iterator[list[HubProcess]]:
    """``skipfilter hub`` processes a test started (append them); killed at teardown."""
    started: list[HubProcess] = []
    yield started
    for process in started:
        if process.proc.poll() is None:
            process.kill()
