"""The examples under examples/ run as users will copy them: the FastAPI application that
embeds the hub and publishes from a route, and the Publisher/subscribe script that restarts
its hub in the middle and misses nothing."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import httpx
import pytest
import uvicorn

from benchmarks.ports import restartable_port
from skipfilter.client import discover, subscribe
from skipfilter.hub import Hub

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def load(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"example_{name}", EXAMPLES / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def fastapi_example(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[tuple[ModuleType, str]]:
    """The FastAPI example served by uvicorn on loopback, lifespan and all."""
    monkeypatch.setenv("HUB_HISTORY", str(tmp_path / "hub.sqlite3"))
    module = load("fastapi_embedded")
    config = uvicorn.Config(module.app, host="127.0.0.1", port=0, log_level="warning")
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started:
        assert time.monotonic() < deadline and thread.is_alive(), "the example did not start"
        time.sleep(0.01)
    port = server.servers[0].sockets[0].getsockname()[1]
    yield module, f"http://127.0.0.1:{port}"
    server.should_exit = True
    thread.join(10)


def test_fastapi_example_publishes_from_a_route(fastapi_example: tuple[ModuleType, str]) -> None:
    module, url = fastapi_example
    hub: Hub = module.hub_app.state.hub  # started by the lifespan, before any request
    assert hub.loop.is_running()
    found = discover(f"{url}/books/7")
    assert (found.hub, found.topic) == (f"{url}/.well-known/mercure", module.BOOKS + "7")
    subscription = subscribe(found.hub, [found.topic], reconnect_delay=0.05)
    received = []

    def read() -> None:
        for update in subscription:
            received.append(update)
            return

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    deadline = time.monotonic() + 10
    while len(hub) == 0:
        assert time.monotonic() < deadline, "the subscriber did not connect"
        time.sleep(0.01)
    answer = httpx.put(f"{url}/books/7", json={"title": "Dune"}, timeout=10)
    assert answer.status_code == 200, answer.text
    reader.join(10)
    subscription.close()
    assert [(u.id, u.data) for u in received] == [
        (answer.json()["update"], '{"id": 7, "title": "Dune"}')
    ]


def test_publish_subscribe_example_misses_nothing_across_a_restart() -> None:
    result = subprocess.run(
        [sys.executable, str(EXAMPLES / "publish_subscribe.py")],
        env={**os.environ, "PORT": str(restartable_port())},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "nothing missed (2 connections)" in result.stdout
