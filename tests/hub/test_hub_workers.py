"""``--workers N`` as real processes over a real redis-server: one failure never becomes all
(a worker that dies while Redis is down, or right after it started, comes back while the
others keep serving), and a connection is served whenever any worker has room."""

from __future__ import annotations

import os
import signal
import socket
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest
import redis

from tests.hub.clients import Publishing, Resuming, check_delivery
from tests.hub.hubtest import HUB, PUBLISHER_KEY, HubProcess, Stream, pub_token
from tests.hub.redis_server import RedisServer, redis_available, stream_fields
from tests.hub.test_hub_nodes import redis_server  # noqa: F401  (a fixture)

pytestmark = pytest.mark.skipif(
    not redis_available(), reason="redis-server is not installed (make test installs it as root)"
)

TOPIC = "https://example.com/books/1"


def free_port_pair() -> int:
    """A port P with P + 1 free too (worker i serves its metrics on P + i)."""
    for _ in range(100):
        with socket.socket() as first:
            first.bind(("127.0.0.1", 0))
            port = int(first.getsockname()[1])
            with socket.socket() as second:
                try:
                    second.bind(("127.0.0.1", port + 1))
                except OSError:
                    continue
        return port
    raise RuntimeError("no two consecutive free ports")


class Supervised(HubProcess):
    """``skipfilter hub --workers 2`` with each worker's metrics on its own port."""

    def __init__(self, redis_url: str, *args: str, hard_open_files: int | None = None) -> None:
        self.metrics_port = free_port_pair()
        super().__init__(
            "--anonymous",
            "--transport",
            redis_url,
            "--workers",
            "2",
            "--metrics-addr",
            f"127.0.0.1:{self.metrics_port}",
            *args,
            env={"MERCURE_PUBLISHER_JWT_KEY": PUBLISHER_KEY},
            hard_open_files=hard_open_files,
        )

    def workers(self, exclude: tuple[int, ...] = (), count: int = 2) -> list[int]:
        """The pids of the worker processes (the supervisor's spawned children), once there
        are ``count`` of them not in ``exclude``."""
        deadline = time.monotonic() + 30
        while True:
            found = [pid for pid in _children(self.proc.pid) if pid not in exclude]
            if len(found) >= count:
                return found
            assert time.monotonic() < deadline, self.output()
            time.sleep(0.1)

    def serving(self, index: int) -> bool:
        """Whether worker ``index`` answers on its metrics port."""
        try:
            url = f"http://127.0.0.1:{self.metrics_port + index}/metrics"
            return httpx.get(url, timeout=2).status_code == 200
        except httpx.TransportError:
            return False

    def wait_serving(self, index: int, timeout: float = 30) -> None:
        deadline = time.monotonic() + timeout
        while not self.serving(index):
            assert time.monotonic() < deadline, f"worker {index} does not serve: {self.output()}"
            time.sleep(0.2)


@pytest.fixture
def supervised(
    redis_server: RedisServer,  # noqa: F811
) -> Iterator[Callable[..., Supervised]]:
    started: list[Supervised] = []

    def start(*args: str, **kw: int) -> Supervised:
        hub = Supervised(redis_server.url, *args, **kw)
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
    headers = {"Authorization": f"Bearer {pub_token()}"}
    return httpx.post(url + HUB, data={"topic": TOPIC, "id": update_id}, headers=headers)


def _children(pid: int) -> list[int]:
    """Live worker processes started by ``pid`` (not multiprocessing's resource tracker)."""
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as listing:
            pids = [int(p) for p in listing.read().split()]
    except FileNotFoundError:
        return []
    workers = []
    for child in pids:
        try:
            with open(f"/proc/{child}/cmdline", "rb") as cmdline:
                command = cmdline.read()
        except FileNotFoundError:
            continue
        if b"spawn_main" in command and _alive(child):
            workers.append(child)
    return workers


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().split()[2] != "Z"
    except FileNotFoundError:
        return False


def _sockets(pid: int) -> int:
    """Sockets process ``pid`` holds open (its listeners and connections)."""
    count = 0
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        try:  # the worker runs on: a descriptor listed may be closed before it is read
            count += os.readlink(fd).startswith("socket:")
        except FileNotFoundError:
            continue
    return count


def test_a_worker_that_dies_while_redis_is_down_comes_back_and_the_other_keeps_serving(
    supervised: Callable[..., Supervised],
    redis_server: RedisServer,  # noqa: F811
) -> None:
    hub = supervised()
    hub.wait_serving(0)
    hub.wait_serving(1)
    first, second = hub.workers()
    before = {pid: _sockets(pid) for pid in (first, second)}
    streams = [Stream(hub, [TOPIC]) for _ in range(10)]
    held = {pid: _sockets(pid) - before[pid] for pid in (first, second)}
    if held[first] > held[second]:  # the kernel may hand one worker most connections:
        first, second = second, first  # kill the other, whose streams then must all live
    redis_server.stop()
    os.kill(first, signal.SIGKILL)
    (replacement,) = (pid for pid in hub.workers(exclude=(first,)) if pid != second)
    time.sleep(6)  # well past the old "failed at start" window
    assert hub.proc.poll() is None, hub.output()  # the supervisor did not give up
    assert _alive(second), "the healthy worker was stopped"
    assert _alive(replacement), hub.output()
    assert "cannot start yet" in hub.output()  # the replacement says why it waits
    for _ in range(10):  # new connections are all served, by the worker that can
        assert httpx.get(hub.url + "/healthz", timeout=5).status_code == 200
    survivors = [s for s in streams if not s.ended.is_set()]
    assert survivors, "every stream ended: the healthy worker's subscribers were dropped"
    redis_server.start()
    hub.wait_serving(0)
    hub.wait_serving(1)
    more = [Stream(hub, [TOPIC]) for _ in range(6)]
    deadline = time.monotonic() + 20
    while (response := _publish(hub.url, "after")).status_code != 200:
        assert time.monotonic() < deadline, response.text
        time.sleep(0.2)
    for stream in survivors + more:
        assert stream.event(15).id == "after"
    assert hub.proc.poll() is None
    for stream in streams + more:
        stream.close()


def test_a_worker_killed_right_after_it_started_is_restarted(
    supervised: Callable[..., Supervised],
) -> None:
    hub = supervised()
    other, victim = hub.workers()
    os.kill(victim, signal.SIGKILL)
    (fresh,) = (pid for pid in hub.workers(exclude=(victim,)) if pid != other)
    os.kill(fresh, signal.SIGKILL)  # well within 5 s of its start
    (replacement,) = (pid for pid in hub.workers(exclude=(victim, fresh)) if pid != other)
    hub.wait_serving(0)
    hub.wait_serving(1)
    assert hub.proc.poll() is None, hub.output()
    assert _alive(replacement)
    stream = Stream(hub, [TOPIC])
    assert _publish(hub.url, "x").status_code == 200
    assert stream.event(10).id == "x"
    stream.close()
    hub.proc.send_signal(signal.SIGTERM)  # the supervisor exits when told to, and only then
    assert hub.proc.wait(30) == 0


def test_a_connection_is_served_whenever_any_worker_has_room(
    supervised: Callable[..., Supervised],
) -> None:
    """Each worker holds 136 connections (open-files limit 200); 272 streams all open,
    whatever the kernel's and the workers' timing; the 273rd gets a 503 naming the limit."""
    hub = supervised(hard_open_files=200)
    hub.wait_serving(0)
    hub.wait_serving(1)
    assert "room for about 272 connections (2 workers)" in hub.output()
    held: list[socket.socket] = []
    request = f"GET {HUB}?topic=t HTTP/1.1\r\nHost: x\r\n\r\n".encode()
    try:
        for start in range(0, 272, 68):  # bursts: both workers accept at once
            burst = [socket.create_connection(("127.0.0.1", hub.port)) for _ in range(68)]
            for sock in burst:
                sock.sendall(request)
            for sock in burst:
                sock.settimeout(10)
                assert sock.recv(12) == b"HTTP/1.1 200", f"connection {start}+ refused"
            held.extend(burst)
        response = httpx.get(hub.url + HUB, params={"topic": "t"}, timeout=10)
        assert response.status_code == 503
        assert "maximum of 136 connections" in response.text
    finally:
        for sock in held:
            sock.close()


class _Prober:
    """Opens a new connection to ``url`` every 50 ms and keeps whatever was not a 200."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.failures: list[str] = []
        self.probes = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(0.05):
            self.probes += 1
            try:
                response = httpx.get(self.url + "/healthz", timeout=10)
                if response.status_code != 200:
                    self.failures.append(f"{response.status_code}: {response.text}")
            except httpx.HTTPError as exc:
                self.failures.append(repr(exc))

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(20)


def test_sighup_replaces_the_workers_one_at_a_time_and_loses_nothing(
    supervised: Callable[..., Supervised],
    redis_server: RedisServer,  # noqa: F811
) -> None:
    hub = supervised("--shutdown-timeout", "5")
    hub.wait_serving(0)
    hub.wait_serving(1)
    old = set(hub.workers())
    clients = [Resuming(lambda: hub.url, [TOPIC]) for _ in range(6)]
    for client in clients:
        client.wait_opened()
    publisher = Publishing(lambda: hub.url, "p", pub_token(), TOPIC)
    prober = _Prober(hub.url)
    try:
        publisher.wait_acked(30)
        hub.proc.send_signal(signal.SIGHUP)
        deadline = time.monotonic() + 90
        while hub.output().count("drained and left") < 2:
            assert time.monotonic() < deadline, hub.output()
            assert hub.proc.poll() is None, hub.output()
            time.sleep(0.2)
        new = set(hub.workers())
        assert len(new) == 2 and not new & old, (old, new)
        publisher.wait_acked(len(publisher.acked) + 20)
        publisher.stop()
        prober.stop()
        store = redis.Redis.from_url(redis_server.url, decode_responses=True)
        stored = [f["i"] for f in stream_fields(store)]
        store.close()
        check_delivery([publisher], stored, clients)
        assert not publisher.unsent and not publisher.refused  # the port never closed
        assert prober.probes > 20 and not prober.failures, prober.failures
        assert all(c.opened >= 2 for c in clients)  # every stream was on a replaced worker
        assert hub.proc.poll() is None
    finally:
        publisher.stop()
        prober.stop()
        for client in clients:
            client.close()
