"""The subscriptions API over every local worker: ``skipfilter hub --workers 2`` on the
SQLite history, as real processes. A subscription held by either worker is listed by a GET
that either answers; after SIGKILL of a worker its subscriptions vanish from the list and
their end is announced once, while the other worker's stay."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest

from tests.hub.hubtest import PUBLISHER_KEY, SUBSCRIBER_KEY, HubProcess, Stream, sub_token
from tests.hub.test_hub_workers import _children, free_port_pair

SUBSCRIPTIONS = "/.well-known/mercure/subscriptions"
EVENTS = SUBSCRIPTIONS + "/{topic}/{subscriber}"
TOKEN = sub_token(SUBSCRIPTIONS, EVENTS)
TTL = "1.5"  # a worker looks for killed ones every 0.5 s


class TwoWorkers(HubProcess):
    """``skipfilter hub --workers 2 --history FILE --subscriptions``, each worker's metrics
    on its own port."""

    def __init__(self, history: Path) -> None:
        self.metrics_port = free_port_pair()
        super().__init__(
            "--anonymous",
            "--subscriptions",
            "--node-ttl",
            TTL,
            "--history",
            str(history),
            "--workers",
            "2",
            "--metrics-addr",
            f"127.0.0.1:{self.metrics_port}",
            env={
                "MERCURE_PUBLISHER_JWT_KEY": PUBLISHER_KEY,
                "MERCURE_SUBSCRIBER_JWT_KEY": SUBSCRIBER_KEY,
            },
        )
        for index in range(2):
            deadline = time.monotonic() + 30
            while self.subscribers(index) is None:
                assert time.monotonic() < deadline, f"worker {index} idle: {self.output()}"
                time.sleep(0.1)

    def subscribers(self, index: int) -> int | None:
        """Worker ``index``'s open streams (None: it does not answer)."""
        try:
            url = f"http://127.0.0.1:{self.metrics_port + index}/metrics"
            text = httpx.get(url, timeout=2).text
        except httpx.TransportError:
            return None
        for line in text.splitlines():
            if line.startswith("skipfilter_hub_subscribers "):
                return int(float(line.split()[1]))
        return None

    def pid(self, index: int) -> int:
        """The pid of worker ``index`` (the one serving metrics on port + index)."""
        port = self.metrics_port + index
        for pid in _children(self.proc.pid):
            if _listens(pid, port):
                return pid
        raise AssertionError(f"no worker listens on {port}")


def _listens(pid: int, port: int) -> bool:
    """Whether process ``pid`` holds a socket listening on 127.0.0.1:``port``."""
    inodes = set()
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        try:
            link = os.readlink(fd)
        except FileNotFoundError:
            continue
        if link.startswith("socket:["):
            inodes.add(link[8:-1])
    local = f"0100007F:{port:04X}"
    for line in Path(f"/proc/{pid}/net/tcp").read_text().splitlines()[1:]:
        fields = line.split()
        if fields[1] == local and fields[3] == "0A" and fields[9] in inodes:  # 0A: LISTEN
            return True
    return False


@pytest.fixture
def hub(tmp_path: Path) -> Iterator[TwoWorkers]:
    started = TwoWorkers(tmp_path / "history.sqlite3")
    yield started
    if started.proc.poll() is None:
        started.proc.send_signal(signal.SIGTERM)
        try:
            started.proc.wait(30)
        except Exception:
            started.kill()


def _listed(hub: TwoWorkers) -> list[str]:
    """Topics of the subscriptions a GET lists, answered by whichever worker accepts it."""
    response = httpx.get(
        hub.url + SUBSCRIPTIONS,
        headers={"Authorization": f"Bearer {TOKEN}", "Connection": "close"},
        timeout=10,
    )
    assert response.status_code == 200, response.text
    return sorted(doc["topic"] for doc in response.json()["subscriptions"])


def _wait(check: Callable[[], bool], what: str, timeout: float = 20) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, what
        time.sleep(0.1)


def test_every_worker_lists_both_workers_subscriptions_and_a_killed_ones_end_once(
    hub: TwoWorkers,
) -> None:
    watcher = Stream(hub, [EVENTS], headers={"Authorization": f"Bearer {TOKEN}"})
    _wait(lambda: sum(hub.subscribers(i) or 0 for i in (0, 1)) == 1, "the watcher opened")
    survivor = 0 if hub.subscribers(0) == 1 else 1  # the watcher's worker stays
    victim = hub.pid(1 - survivor)
    streams: list[Stream] = []
    while min(hub.subscribers(i) or 0 for i in (0, 1)) < 3:  # the kernel picks the worker
        assert len(streams) < 60, "every connection went to one worker"
        streams.append(Stream(hub, [f"https://example.com/books/{len(streams)}"]))
        time.sleep(0.05)
    topics = sorted(stream.topics[0] for stream in streams)
    every = sorted([EVENTS, *topics])
    for _ in range(6):  # neither worker holds them all: each answer is both workers'
        _wait(lambda: _listed(hub) == every, f"not all listed: {_listed(hub)} != {every}")
    held = hub.subscribers(1 - survivor)  # the victim's streams (the watcher is not one)
    assert held is not None and held >= 3
    os.kill(victim, signal.SIGKILL)
    _wait(lambda: sum(s.ended.is_set() for s in streams) == held, "the victim's streams live")
    ended = sorted(s.topics[0] for s in streams if s.ended.is_set())
    kept = sorted(s.topics[0] for s in streams if not s.ended.is_set())
    assert ended and kept
    _wait(lambda: _listed(hub) == sorted([EVENTS, *kept]), "the victim's are still listed")
    announced: list[dict[str, object]] = []

    def all_announced() -> bool:
        while not watcher.items.empty():
            announced.append(json.loads(watcher.items.get().data))
        return {e["topic"] for e in announced if e["active"] is False} >= set(ended)

    _wait(all_announced, f"ends not announced: {announced}")
    time.sleep(3 * float(TTL))  # the replacement worker looks too: nobody announces twice
    all_announced()
    gone = sorted(str(e["topic"]) for e in announced if e["active"] is False)
    assert gone == ended
    assert _listed(hub) == sorted([EVENTS, *kept])
    for stream in [watcher, *streams]:
        stream.close()


def _ended_events(history: Path) -> list[str]:
    """Topics of the ``active: false`` subscription events stored in the shared history."""
    with sqlite3.connect(history) as db:
        rows = db.execute("SELECT data FROM updates WHERE event = 1 ORDER BY seq").fetchall()
    docs = [json.loads(data) for (data,) in rows]
    return sorted(doc["topic"] for doc in docs if doc["active"] is False)


def _workers_recorded(history: Path) -> list[int]:
    """The pids of the workers registered in the presence table."""
    with sqlite3.connect(history) as db:
        names = [w for (w,) in db.execute("SELECT worker FROM presence_workers")]
    return sorted(int(name.partition("#")[0].split("/")[2]) for name in names)


def test_workers_replaced_on_sighup_leave_no_subscription_behind_and_end_each_once(
    hub: TwoWorkers, tmp_path: Path
) -> None:
    history = tmp_path / "history.sqlite3"
    old = sorted(hub.pid(i) for i in (0, 1))
    _wait(lambda: _workers_recorded(history) == old, "the workers did not register")
    streams: list[Stream] = []
    while min(hub.subscribers(i) or 0 for i in (0, 1)) < 2:
        assert len(streams) < 60, "every connection went to one worker"
        streams.append(Stream(hub, [f"https://example.com/books/{len(streams)}"]))
        time.sleep(0.05)
    topics = sorted(stream.topics[0] for stream in streams)
    _wait(lambda: _listed(hub) == topics, "not every worker's subscriptions listed")
    hub.proc.send_signal(signal.SIGHUP)
    _wait(lambda: hub.output().count("drained and left") >= 2, hub.output(), timeout=90)
    new = sorted(hub.pid(i) for i in (0, 1))
    assert not set(new) & set(old)
    _wait(lambda: all(s.ended.is_set() for s in streams), "a stream outlived its worker")
    _wait(lambda: _listed(hub) == [], f"left behind: {_listed(hub)}")
    _wait(lambda: _ended_events(history) == topics, f"not ended: {_ended_events(history)}")
    time.sleep(3 * float(TTL))  # the new workers look for gone ones: nothing left to end
    assert _ended_events(history) == topics  # each once, by the worker that held it
    assert _workers_recorded(history) == new
    for stream in streams:
        stream.close()
