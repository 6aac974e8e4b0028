"""The chaos soak (``benchmarks/chaos/``) as a test: a seeded run with every kind of fault
and zero violations; and, one test each, the defects the soak found (each failed before
its fix)."""

from __future__ import annotations

import asyncio
import json
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import cast

import httpx
import pytest

from skipfilter.hub import HubSettings
from tests.hub.hubtest import HUB, PUBLISHER_KEY, HubProcess, Server, Stream, pub_token
from tests.hub.redis_server import RedisServer, redis_available

ROOT = Path(__file__).resolve().parents[2]
TOPIC = "https://example.com/books/1"


def test_each_publisher_is_answered_with_its_own_id_when_publishes_share_a_batch(
    server: Server,
) -> None:
    """Publishes that arrive together share a commit and a fan-out batch; each 200 must
    name the publisher's own update (one batch answered every publisher with its last id)."""
    headers = {"Authorization": f"Bearer {pub_token()}"}

    async def publish_all() -> list[tuple[str, str]]:
        async with httpx.AsyncClient(base_url=server.url, timeout=30) as client:

            async def one(i: int) -> tuple[str, str]:
                data = {"topic": "https://example.com/t", "id": f"own-{i}"}
                response = await client.post(HUB, data=data, headers=headers)
                assert response.status_code == 200, response.text
                return f"own-{i}", response.text

            return await asyncio.gather(*(one(i) for i in range(60)))

    answers = asyncio.run(publish_all())
    assert server.hub.fanout.batches > 0  # some publishes did go out together
    assert [sent for sent, _ in answers] == [got for _, got in answers]


def test_clients_that_do_not_read_their_replay_do_not_hold_up_other_resumes(
    tmp_path: Path,
) -> None:
    """Four clients resume from ``earliest`` over 6.5 MB of history and read nothing: their
    replays wait on full sockets. Another client's resume must not wait behind them (the
    replay slots were held while waiting, so it waited the whole dispatch timeout)."""
    node = HubProcess(
        "--anonymous",
        "--history",
        str(tmp_path / "h.sqlite3"),
        "--dispatch-timeout",
        "30",
        env={"MERCURE_PUBLISHER_JWT_KEY": PUBLISHER_KEY},
    )
    stalled: list[socket.socket] = []
    try:
        headers = {"Authorization": f"Bearer {pub_token()}"}
        with httpx.Client(base_url=node.url, timeout=30) as client:
            for i in range(100):
                data = {"topic": "t", "id": f"b{i}", "data": "x" * 65536}
                assert client.post(HUB, data=data, headers=headers).status_code == 200
        for _ in range(4):
            sock = socket.socket()
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
            sock.connect(("127.0.0.1", node.port))
            sock.sendall(
                f"GET {HUB}?topic=t&lastEventID=earliest HTTP/1.1\r\nHost: x\r\n\r\n".encode()
            )
            stalled.append(sock)
        time.sleep(1)  # their replays run into full sockets
        started = time.monotonic()
        with httpx.stream(
            "GET",
            node.url + HUB,
            params={"topic": "t"},
            headers={"Last-Event-ID": "b97"},
            timeout=60,
        ) as response:
            ids = []
            for line in response.iter_lines():
                if line.startswith("id: "):
                    ids.append(line[4:])
                    if len(ids) == 2:
                        break
        assert ids == ["b98", "b99"]
        assert time.monotonic() - started < 5, "a resume waited behind clients that do not read"
    finally:
        for sock in stalled:
            sock.close()
        node.kill()


def test_a_drain_reaches_every_connection_already_accepted() -> None:
    """A connection accepted just before the drain got its protocol after uvicorn had told
    every connection to close, so it stayed open (keep-alive) and the drain ran to its
    deadline. Stopping the acceptor now returns once accepted connections have one."""
    from skipfilter.hub.server.accept import Acceptor

    async def go() -> list[str]:
        loop = asyncio.get_running_loop()
        listener = socket.socket()
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        made: list[str] = []

        class Recorder(asyncio.Protocol):
            def connection_made(self, transport: asyncio.BaseTransport) -> None:
                made.append("made")
                transport.close()

        acceptor = Acceptor(loop, listener, Recorder, capacity=10, count=lambda: 0)
        acceptor.start()
        client = socket.create_connection(listener.getsockname())
        acceptor._ready()  # what the loop does when the connection arrives
        await acceptor.stop()  # the drain begins right then
        seen = list(made)
        client.close()
        listener.close()
        return seen

    assert asyncio.run(go()) == ["made"]


def test_resetting_a_connection_whose_socket_is_gone_is_quiet() -> None:
    """uvloop hands out a socket with descriptor -1 once a transport is closed: resetting
    it raised ValueError in a timer callback (logged as an error by every drain)."""
    import uvloop

    from skipfilter.hub.server.fast_paths import reset

    async def go() -> None:
        loop = asyncio.get_running_loop()
        server = await loop.create_server(asyncio.Protocol, "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        transport, _ = await loop.create_connection(asyncio.Protocol, "127.0.0.1", port)
        transport.get_extra_info("socket")  # as uvicorn does when a connection is made
        transport.close()
        await asyncio.sleep(0.05)
        reset(transport)  # the timer a stream's close arms
        server.close()

    uvloop.run(go())


@pytest.mark.slow
@pytest.mark.timeout(900)  # about 90 s alone; more on a busy machine
@pytest.mark.skipif(not redis_available(), reason="redis-server is not installed")
def test_a_seeded_chaos_soak_loses_nothing(tmp_path: Path) -> None:
    """60 seconds of faults (40 over Redis with three nodes, 20 on one SQLite node): every
    kind injected, and every acknowledged update reaches every subscriber that wants it,
    once, in the stored order; every publish gets an answer (benchmarks/chaos/)."""
    out = tmp_path / "chaos.json"
    command = [sys.executable, "-m", "benchmarks.chaos", "--seed", "1", "--seconds", "40"]
    command += ["--sqlite-seconds", "20", "--json", str(out)]
    try:  # the soak bounds each run itself (and prints where it hung): this is a backstop
        done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=840)
    except subprocess.TimeoutExpired as hung:
        pytest.fail(f"the soak did not end: {hung.stdout!r}\n{hung.stderr!r}")
    assert out.exists(), done.stdout + done.stderr
    redis_run, sqlite_run = json.loads(out.read_text())
    for run, kinds in (
        (redis_run, {"kill", "drain", "redis", "stall"}),
        (sqlite_run, {"kill", "drain", "stall"}),
    ):
        assert run["violations"] == 0, done.stdout
        assert set(run["faults"]) == kinds, run["faults"]
        assert all(f["effective"] >= 1 for f in run["faults"].values()), run["faults"]
        assert run["deliveries_checked"] > 1000
        assert run["deliveries_received"] == run["deliveries_checked"]
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.mark.slow
@pytest.mark.timeout(600)  # about 45 s alone
@pytest.mark.skipif(not redis_available(), reason="redis-server is not installed")
def test_a_seeded_chaos_soak_over_sentinel_with_failovers_loses_nothing(tmp_path: Path) -> None:
    """30 seconds of faults over a Sentinel set (a primary, two replicas, three sentinels)
    with three nodes: primaries SIGKILLed or SIGSTOPped (replicas frozen first, sometimes)
    and brought back as replicas, replicas restarted, nodes killed and drained, a stalled
    subscriber; every acknowledged update is on the last primary and reaches every
    subscriber that wants it, once, in order, and nothing unstored is delivered."""
    out = tmp_path / "chaos.json"
    command = [sys.executable, "-m", "benchmarks.chaos", "--seed", "1", "--seconds", "0"]
    command += ["--sqlite-seconds", "0", "--sentinel-seconds", "30", "--subscribers", "100"]
    command += ["--fault-every", "2.5", "--json", str(out)]
    try:
        done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=540)
    except subprocess.TimeoutExpired as hung:
        pytest.fail(f"the soak did not end: {hung.stdout!r}\n{hung.stderr!r}")
    assert out.exists(), done.stdout + done.stderr
    (run,) = json.loads(out.read_text())
    assert run["violations"] == 0, done.stdout
    assert set(run["faults"]) == {"kill", "drain", "redis", "stall", "failover"}, run["faults"]
    assert all(f["effective"] >= 1 for f in run["faults"].values()), run["faults"]
    assert run["faults"]["failover"]["max_unacknowledged_s"] < 15, run["faults"]
    assert run["deliveries_checked"] > 1000
    assert run["deliveries_received"] == run["deliveries_checked"]
    assert done.returncode == 0, done.stdout + done.stderr


def _soak(
    tmp_path: Path, *args: str, timeout: float
) -> tuple[subprocess.CompletedProcess[str], list[dict[str, object]]]:
    """Run ``python -m benchmarks.chaos ARGS`` (no Redis runs) and read its reports."""
    out = tmp_path / "chaos.json"
    command = [sys.executable, "-m", "benchmarks.chaos", "--seconds", "0", "--sqlite-seconds", "0"]
    command += [*args, "--json", str(out)]
    try:  # the soak bounds each run itself (and prints where it hung): this is a backstop
        done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired as hung:
        pytest.fail(f"the soak did not end: {hung.stdout!r}\n{hung.stderr!r}")
    assert out.exists(), done.stdout + done.stderr
    return done, json.loads(out.read_text())


@pytest.mark.slow
@pytest.mark.timeout(600)  # about 60 s alone
def test_a_seeded_chaos_soak_of_local_workers_loses_nothing(tmp_path: Path) -> None:
    """35 seconds of faults on one ``skipfilter hub --workers 2`` sharing a SQLite file,
    nothing beside it: workers SIGKILLed and drained (the supervisor restarts them), all
    replaced by SIGHUP, a stalled subscriber; every acknowledged update reaches every
    subscriber that wants it, once, in the stored order, and every publish is answered."""
    done, (run,) = _soak(
        tmp_path,
        *("--seed", "1", "--local-seconds", "35", "--local-workers", "2"),
        *("--subscribers", "100", "--fault-every", "2.5"),
        timeout=540,
    )
    assert run["violations"] == 0, done.stdout
    assert run["workers"] == 2
    faults = cast(dict[str, dict[str, int]], run["faults"])
    assert set(faults) == {"kill", "drain", "roll", "stall"}, faults
    assert all(f["effective"] >= 1 for f in faults.values()), faults
    publishes = cast(dict[str, int], run["publishes"])
    assert publishes["acked"] > 300 and publishes["unanswered"] == run["unanswered_explained"]
    assert cast(int, run["deliveries_checked"]) > 1000
    assert run["deliveries_received"] == run["deliveries_checked"]
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.mark.timeout(300)  # about 30 s alone
def test_a_delivery_the_clients_drop_fails_the_local_soak(tmp_path: Path) -> None:
    """``--plant drop``: the clients forget one delivery they got (their cursor moves on,
    as a hub skipping an update would leave it). The check must name it missing and the
    soak exit 1: a soak that reported 0 here could not catch a lost update."""
    done, (run,) = _soak(
        tmp_path,
        *("--seed", "2", "--local-seconds", "6", "--local-workers", "2"),
        *("--subscribers", "40", "--kinds", "kill", "--settle", "8", "--plant", "drop"),
        timeout=240,
    )
    assert run["planted"], done.stdout
    assert run["problems"] == {"missing": 1}, done.stdout
    assert str(run["planted"]).split()[0] in str(run["examples"]), done.stdout
    assert done.returncode == 1, done.stdout + done.stderr


@pytest.mark.skipif(not redis_available(), reason="redis-server is not installed")
def test_a_resume_on_a_node_behind_the_client_sends_nothing_twice(
    make_server: Callable[..., Server],
    settings: HubSettings,
    streams: Callable[..., Stream],
    tmp_path: Path,
) -> None:
    """Nodes tail the stream each at its own pace (after a Redis restart each reconnects
    after its own backoff). A client that got ``u5`` from a node ahead and resumes on one
    that has not read ``u3``..``u5`` yet got them again once that node caught up."""
    with RedisServer(tmp_path) as redis_server:
        shared = settings.with_changes(transport_url=redis_server.url)
        ahead, behind = make_server(shared), make_server(shared)
        for i in range(3):
            assert ahead.publish(TOPIC, id=f"u{i}").status_code == 200
        deadline = time.monotonic() + 10
        while behind.hub.ring.head < 3:
            assert time.monotonic() < deadline
            time.sleep(0.01)
        behind.hub.transport.backlog = lambda: 1 << 30  # its tail stops reading
        for i in range(3, 6):
            assert ahead.publish(TOPIC, id=f"u{i}").status_code == 200
        stream = streams(behind, [TOPIC], headers={"Last-Event-ID": "u5"})
        stream.nothing(0.5)
        behind.hub.transport.backlog = lambda: 0  # it catches up: u3..u5, then u6
        assert ahead.publish(TOPIC, id="u6").status_code == 200
        assert stream.event(10).id == "u6"
        stream.nothing(0.5)


def test_a_replay_loads_only_the_rows_its_subscriber_wants(tmp_path: Path) -> None:
    """After a restart every resume reads from SQLite: 300 resumes across 6.5 MB of updates
    on a topic they did not follow took 46 s and 23 s of CPU, each loading and encoding
    every large row to discard it. Rows a reader does not keep now come back without their
    data, and only kept rows count against the read's byte budget."""
    from skipfilter.hub.transports import open_transport
    from skipfilter.hub.update import Update

    async def go() -> list[tuple[str, bytes]]:
        transport = open_transport(
            HubSettings(anonymous=True, history_path=str(tmp_path / "k.sqlite3"))
        )
        done: list[object] = []
        await transport.start(asyncio.get_running_loop(), lambda e, d: done.append(e))
        updates = [Update(f"big{i}", ("bulk",), "x" * 65536) for i in range(3)]
        updates += [Update(f"small{i}", ("t",), "s") for i in range(3)]
        future: asyncio.Future[object] = asyncio.get_running_loop().create_future()
        transport.append(updates, [b""] * len(updates), future)  # type: ignore[arg-type]
        while not done:
            await asyncio.sleep(0.01)
        read = await transport.read(None, None, None, 100, 1000, lambda topics, _: "t" in topics)
        await transport.close()
        return [(e.update.id, e.chunk) for e in read]

    got = asyncio.run(asyncio.wait_for(go(), 30))  # an append never delivered: no hang
    assert [i for i, _ in got] == ["big0", "big1", "big2", "small0", "small1", "small2"]
    assert all(chunk == b"" for i, chunk in got if i.startswith("big"))  # not loaded
    assert all(b"data: s" in chunk for i, chunk in got if i.startswith("small"))


def test_the_room_a_worker_shows_never_counts_a_connection_twice() -> None:
    """A connection sat in both ``pending`` and ``count()`` between its protocol's
    ``connection_made`` and the accepting task's next step: a worker showed less room than
    it had, and a full neighbour took a connection only to answer 503 (a CI failure)."""
    from skipfilter.hub.server.accept import Acceptor

    async def go() -> list[int]:
        loop = asyncio.get_running_loop()
        listener = socket.socket()
        listener.bind(("127.0.0.1", 0))
        listener.listen(64)
        held: list[asyncio.Protocol] = []

        class Held(asyncio.Protocol):
            def connection_made(self, transport: asyncio.BaseTransport) -> None:
                held.append(self)

        acceptor = Acceptor(loop, listener, Held, capacity=100, count=lambda: len(held))
        clients = [socket.create_connection(listener.getsockname()) for _ in range(20)]
        acceptor.start()
        shown: list[int] = []
        for _ in range(50):  # what the board shows, at every step of the loop
            shown.append(acceptor.room + acceptor.accepted)
            await asyncio.sleep(0)
        await acceptor.stop()
        for client in clients:
            client.close()
        listener.close()
        assert len(held) == 20
        return shown

    assert set(asyncio.run(go())) == {100}
