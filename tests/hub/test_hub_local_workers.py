"""``--workers N`` on the default SQLite history, with no other server: real worker
processes sharing one file give every guarantee one process gives (one order, delivered
once to subscribers on every worker; acknowledged survives SIGKILL; resume on a worker
restarted a moment ago; drain; rolling replacement; restarts)."""

from __future__ import annotations

import os
import signal
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest

from tests.hub.cli_run import refusal, skipfilter
from tests.hub.clients import Publishing, Resuming, check_delivery
from tests.hub.hubtest import HUB, PUBLISHER_KEY, HubProcess, pub_token
from tests.hub.test_hub_workers import _alive, _children, free_port_pair

TOPIC = "https://example.com/books/1"


class LocalWorkers(HubProcess):
    """``skipfilter hub --workers N --history FILE``, each worker's metrics on its own port."""

    def __init__(self, history: Path, workers: int, *args: str, url: bool = False) -> None:
        """``url``: the file named as ``--transport sqlite://FILE`` instead of ``--history``."""
        self.history = history
        self.count = workers
        self.metrics_port = free_port_pair() if workers <= 2 else _free_ports(workers)
        where = ["--transport", f"sqlite://{history}"] if url else ["--history", str(history)]
        super().__init__(
            "--anonymous",
            *where,
            "--workers",
            str(workers),
            "--metrics-addr",
            f"127.0.0.1:{self.metrics_port}",
            *args,
            env={"MERCURE_PUBLISHER_JWT_KEY": PUBLISHER_KEY},
        )
        for index in range(workers):
            self.wait_serving(index)

    def metric(self, index: int, name: str) -> int:
        """Worker ``index``'s value of ``skipfilter_hub_<name>``."""
        url = f"http://127.0.0.1:{self.metrics_port + index}/metrics"
        for line in httpx.get(url, timeout=5).text.splitlines():
            if line.startswith(f"skipfilter_hub_{name} "):
                return int(float(line.split()[1]))
        raise AssertionError(f"no metric {name}")

    def serving(self, index: int) -> bool:
        try:
            url = f"http://127.0.0.1:{self.metrics_port + index}/metrics"
            return httpx.get(url, timeout=2).status_code == 200
        except httpx.TransportError:
            return False

    def wait_serving(self, index: int, timeout: float = 30) -> None:
        deadline = time.monotonic() + timeout
        while not self.serving(index):
            assert time.monotonic() < deadline, f"worker {index} does not serve: {self.output()}"
            time.sleep(0.1)

    def workers(self, exclude: tuple[int, ...] = ()) -> list[int]:
        """The worker pids, once ``count`` of them not in ``exclude`` run."""
        deadline = time.monotonic() + 30
        while True:
            found = [pid for pid in _children(self.proc.pid) if pid not in exclude]
            if len(found) >= self.count:
                return found
            assert time.monotonic() < deadline, self.output()
            time.sleep(0.05)

    def stored(self) -> list[str]:
        """Ids of the updates in the shared file, in its one order."""
        with sqlite3.connect(self.history) as db:
            return [r[0] for r in db.execute("SELECT id FROM updates WHERE event = 0 ORDER BY seq")]


def _free_ports(count: int) -> int:
    """A port P with P + 1 .. P + count - 1 free too."""
    import socket

    for _ in range(100):
        held = []
        try:
            first = socket.socket()
            first.bind(("127.0.0.1", 0))
            held.append(first)
            port = int(first.getsockname()[1])
            for offset in range(1, count):
                other = socket.socket()
                held.append(other)
                other.bind(("127.0.0.1", port + offset))
            return port
        except OSError:
            continue
        finally:
            for sock in held:
                sock.close()
    raise RuntimeError(f"no {count} consecutive free ports")


@pytest.fixture
def local(tmp_path: Path) -> Iterator[Callable[..., LocalWorkers]]:
    started: list[LocalWorkers] = []

    def start(workers: int = 2, *args: str, url: bool = False) -> LocalWorkers:
        hub = LocalWorkers(tmp_path / "history.sqlite3", workers, *args, url=url)
        started.append(hub)
        return hub

    yield start
    for hub in started:
        if hub.proc.poll() is None:
            hub.proc.send_signal(signal.SIGTERM)
            try:
                hub.proc.wait(30)
            except Exception:
                hub.kill()


def _publish(url: str, update_id: str) -> httpx.Response:
    """One publish on a connection of its own (so on whichever worker accepts it)."""
    headers = {"Authorization": f"Bearer {pub_token()}", "Connection": "close"}
    return httpx.post(url + HUB, data={"topic": TOPIC, "id": update_id}, headers=headers)


def _on_every_worker(hub: LocalWorkers, clients: list[Resuming], most: int = 40) -> None:
    """Open subscribers until every worker holds one (the kernel picks the worker)."""
    deadline = time.monotonic() + 30
    while True:
        for client in clients:
            client.wait_opened()
        counts = [hub.metric(i, "subscribers") for i in range(hub.count)]
        if all(counts):
            return
        assert len(clients) < most and time.monotonic() < deadline, counts
        clients.append(Resuming(lambda: hub.url, [TOPIC]))


@pytest.mark.parametrize("workers", [2, 3])
def test_an_update_published_to_any_worker_reaches_every_worker_once_in_one_order(
    local: Callable[..., LocalWorkers], workers: int
) -> None:
    hub = local(workers)
    clients = [Resuming(lambda: hub.url, [TOPIC]) for _ in range(workers * 2)]
    try:
        _on_every_worker(hub, clients)
        acked: list[str] = []
        lock = threading.Lock()

        def publish(prefix: str) -> None:  # three publishers at once, a connection each
            for n in range(15):
                response = _publish(hub.url, f"{prefix}-{n}")
                assert response.status_code == 200, response.text
                with lock:
                    acked.append(response.text)

        threads = [threading.Thread(target=publish, args=(p,)) for p in "abc"]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(60)
        commits = [hub.metric(i, "history_commits_total") for i in range(workers)]
        stored = hub.stored()
        assert sorted(stored) == sorted(acked) and len(stored) == 45
        for prefix in "abc":  # each publisher's own order is kept
            mine = [i for i in stored if i.startswith(prefix)]
            assert mine == [f"{prefix}-{n}" for n in range(15)]
        for client in clients:  # one order everywhere, each update once
            assert client.wait_for(45) == stored
        time.sleep(0.3)
        assert all(client.ids == stored for client in clients), "an update came twice"
        assert all(commits), f"some worker took no publish: {commits}"
    finally:
        for client in clients:
            client.close()


def test_sigkill_of_a_worker_during_publishes_loses_no_acknowledged_update(
    local: Callable[..., LocalWorkers],
) -> None:
    hub = local(2)
    clients = [Resuming(lambda: hub.url, [TOPIC]) for _ in range(4)]
    publishers: list[Publishing] = []
    try:
        _on_every_worker(hub, clients)
        publishers = [Publishing(lambda: hub.url, p, pub_token(), TOPIC, 0.002) for p in "pq"]
        for publisher in publishers:
            publisher.wait_acked(20)
        victim = hub.workers()[0]
        os.kill(victim, signal.SIGKILL)
        hub.workers(exclude=(victim,))  # the supervisor restarts it
        for publisher in publishers:
            publisher.wait_acked(len(publisher.acked) + 20)
            publisher.stop()
        stored = hub.stored()
        for publisher in publishers:
            # a publish cut by the kill got no answer: stored or not, never acknowledged
            assert len(publisher.unanswered) <= 1, publisher.unanswered
            publisher.unanswered.clear()
        check_delivery(publishers, stored, clients)
        assert "exited with -9" in hub.output()
    finally:
        for publisher in publishers:
            publisher.stop()
        for client in clients:
            client.close()


def _ids(url: str, last_event_id: str, count: int) -> list[str]:
    """The ids of the first ``count`` events of a stream resumed from ``last_event_id``."""
    got: list[str] = []
    headers = {"Last-Event-ID": last_event_id}
    with (
        httpx.Client(base_url=url, timeout=10) as client,
        client.stream("GET", HUB, params={"topic": TOPIC}, headers=headers) as response,
    ):
        assert response.status_code == 200
        for line in response.iter_lines():
            if line.startswith("id: "):
                got.append(line[4:])
                if len(got) == count:
                    break
    return got


def test_last_event_id_and_earliest_resume_on_workers_restarted_a_moment_ago(
    local: Callable[..., LocalWorkers],
) -> None:
    hub = local(2)
    ids = [f"u{n}" for n in range(30)]
    for update_id in ids:
        assert _publish(hub.url, update_id).status_code == 200
    old = hub.workers()
    for pid in old:  # every worker killed: whichever takes the next connection is new
        os.kill(pid, signal.SIGKILL)
    new = hub.workers(exclude=tuple(old))
    hub.wait_serving(0)
    hub.wait_serving(1)
    assert not set(new) & set(old)
    assert hub.output().count("restarting it") >= 2  # the restart policy brought both back
    for _ in range(4):  # several connections: both fresh workers answer
        assert _ids(hub.url, ids[9], 20) == ids[10:]
        assert _ids(hub.url, "earliest", 30) == ids
    assert _publish(hub.url, "after").status_code == 200
    assert _ids(hub.url, ids[-1], 1) == ["after"]  # the order goes on after the restart


def test_sigterm_drains_every_worker_and_keeps_what_was_acknowledged(
    local: Callable[..., LocalWorkers],
) -> None:
    hub = local(2, "--shutdown-timeout", "5")
    publisher = Publishing(lambda: hub.url, "d", pub_token(), TOPIC, 0.002)
    try:
        publisher.wait_acked(20)
        hub.proc.send_signal(signal.SIGTERM)
        assert hub.proc.wait(30) == 0, hub.output()
    finally:
        publisher.stop()
    assert hub.output().count("drained and left") == 2
    stored = hub.stored()
    assert set(publisher.acked) <= set(stored)
    assert len(set(stored)) == len(stored)


def test_sighup_replaces_the_workers_one_at_a_time_and_loses_nothing(
    local: Callable[..., LocalWorkers],
) -> None:
    hub = local(2, "--shutdown-timeout", "5")
    old = set(hub.workers())
    clients = [Resuming(lambda: hub.url, [TOPIC]) for _ in range(4)]
    for client in clients:  # subscribed before the first publish
        client.wait_opened()
    publisher = Publishing(lambda: hub.url, "h", pub_token(), TOPIC)
    try:
        publisher.wait_acked(20)
        hub.proc.send_signal(signal.SIGHUP)
        deadline = time.monotonic() + 60
        while hub.output().count("drained and left") < 2:
            assert time.monotonic() < deadline, hub.output()
            assert hub.proc.poll() is None, hub.output()
            time.sleep(0.1)
        new = set(hub.workers())
        assert len(new) == 2 and not new & old, (old, new)
        publisher.wait_acked(len(publisher.acked) + 20)
        publisher.stop()
        check_delivery([publisher], hub.stored(), clients)
        assert not publisher.unsent and not publisher.refused  # the port never closed
        assert all(client.opened >= 2 for client in clients)  # each was on a replaced worker
        assert all(_alive(pid) for pid in new)
    finally:
        publisher.stop()
        for client in clients:
            client.close()


def test_a_sqlite_transport_url_is_shared_by_the_workers_too(
    local: Callable[..., LocalWorkers],
) -> None:
    """``--transport sqlite://FILE``: before, each worker numbered rows on its own, and
    their commits collided on the same numbers."""
    hub = local(2, url=True)
    with ThreadPoolExecutor(4) as pool:
        answers = list(pool.map(lambda n: _publish(hub.url, f"s{n}"), range(40)))
    assert [a.status_code for a in answers] == [200] * 40, [a.text for a in answers]
    stored = hub.stored()
    assert sorted(stored) == sorted(f"s{n}" for n in range(40))
    assert _ids(hub.url, "earliest", 40) == stored


def test_workers_refuse_an_in_memory_history_saying_why() -> None:
    found = skipfilter(
        "hub", "--anonymous", "--workers", "2", "--history", ":memory:", "--addr", "127.0.0.1:0"
    )
    line = refusal(found)
    assert "in-memory history" in line and "--history PATH" in line
