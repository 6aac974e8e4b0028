"""The examples under examples/ run as users will copy them: the FastAPI application that
embeds the hub and publishes from a route, and the Publisher/subscribe script that restarts
its hub in the middle and misses nothing.

Each example's docstring lists what to type, one ``Label:  command  (what it shows)`` a line
(a line ending in a backslash goes on). The commands run here as written, through bash, with
``python`` the test's interpreter and port 8000 a free one; ``Needs:`` names the extra to
install and is the one label not run. What a parenthesis says comes out is checked."""

from __future__ import annotations

import importlib.util
import os
import queue
import re
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

from rigs.ports import restartable_port
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
    command = docstring_commands("publish_subscribe")["Run it"][0]
    assert command == "python examples/publish_subscribe.py"
    result = subprocess.run(
        ["bash", "-c", _as_run_here(command, 8000)],
        cwd=EXAMPLES.parent,
        env={**os.environ, "PORT": str(restartable_port())},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "nothing missed (2 connections)" in result.stdout


def docstring_commands(name: str) -> dict[str, tuple[str, str]]:
    """``{label: (command, what its parenthesis says)}`` from the example's docstring."""
    doc = load(name).__doc__ or ""
    found: dict[str, tuple[str, str]] = {}
    lines = iter(doc.splitlines())
    for line in lines:
        head = re.match(r"^([A-Z][a-z]*(?: [a-z]+)?):\s+(.*)$", line)
        if head is None:
            continue
        text = head.group(2)
        while text.endswith("\\"):
            text = text[:-1] + " " + next(lines).strip()
        command, _, note = text.partition("  (")
        found[head.group(1)] = (command.strip(), note.rstrip(")").strip())
    return found


def test_the_docstring_commands_are_read() -> None:
    commands = docstring_commands("fastapi_embedded")
    assert list(commands) == ["Needs", "Run it", "Find", "Watch", "Publish"]
    assert commands["Publish"][0].endswith("""-d '{"title": "Dune"}'""")
    assert commands["Find"][1] == 'link: </.well-known/mercure>; rel="mercure"'


def _as_run_here(command: str, port: int) -> str:
    """``command`` with this test's interpreter and port, otherwise as written."""
    command = re.sub(r"^python ", f"{sys.executable} ", command)
    return command.replace("127.0.0.1:8000", f"127.0.0.1:{port}")


def _lines_of(process: subprocess.Popen[str]) -> queue.Queue[str]:
    """What ``process`` prints, a line at a time, read in a thread."""
    lines: queue.Queue[str] = queue.Queue()

    def read() -> None:
        assert process.stdout is not None
        for line in process.stdout:
            lines.put(line.rstrip("\n"))

    threading.Thread(target=read, daemon=True).start()
    return lines


def _next_line(lines: queue.Queue[str], deadline: float) -> str:
    return lines.get(timeout=max(0.01, deadline - time.monotonic()))


def test_fastapi_example_runs_as_its_docstring_says(tmp_path: Path) -> None:
    commands = docstring_commands("fastapi_embedded")
    port = restartable_port()
    env = {**os.environ, "PORT": str(port), "HUB_HISTORY": str(tmp_path / "hub.sqlite3")}
    root = EXAMPLES.parent

    def bash(label: str, **kw: object) -> subprocess.Popen[str]:
        command = _as_run_here(commands[label][0], port)
        return subprocess.Popen(  # type: ignore[call-overload, no-any-return]
            ["bash", "-c", command], cwd=root, env=env, text=True, **kw
        )

    server = bash("Run it", stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    watch: subprocess.Popen[str] | None = None
    try:
        docs = _as_run_here(commands["Run it"][1].removeprefix("then open "), port)
        deadline = time.monotonic() + 30
        while True:  # "then open .../docs": it serves the OpenAPI page
            assert server.poll() is None, server.communicate()[1]
            try:
                if httpx.get(docs, timeout=1).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            assert time.monotonic() < deadline, f"{docs} never answered"
            time.sleep(0.05)

        find = bash("Find", stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        out, err = find.communicate(timeout=10)
        assert find.returncode == 0, err
        assert out.startswith("HTTP/1.1 200"), out  # was a 404: HEAD reached the hub's mount
        assert commands["Find"][1] in out, out

        watch = bash("Watch", stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        lines = _lines_of(watch)
        deadline = time.monotonic() + 10
        assert _next_line(lines, deadline) == ":"  # the hub's first comment: subscribed

        publish = bash("Publish", stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        out, err = publish.communicate(timeout=10)
        assert publish.returncode == 0, err
        update = re.fullmatch(r'\{"update":"(urn:uuid:[0-9a-f-]+)"\}', out)
        assert update is not None, out
        shown = commands["Publish"][1].removeprefix("the watcher prints ")
        got = [_next_line(lines, deadline) for _ in range(2)]
        assert got == [f"id: {update.group(1)}", shown]
    finally:
        for process in (watch, server):
            if process is not None:
                process.terminate()
                process.communicate(timeout=10)
