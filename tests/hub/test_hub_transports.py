"""The transport contract, for every transport: appends are stored, delivered in one order
and acknowledged once; reads, lookups and trimming; failures reach the publisher."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any

import pytest

from skipfilter.hub import HubSettings
from skipfilter.hub.core.hub import Hub
from skipfilter.hub.transports import Transport, TransportUnavailable, open_transport
from skipfilter.hub.transports.sqlite import _SCHEMA
from skipfilter.hub.update import EARLIEST, Entry, Update
from tests.hub.redis_server import RedisServer, redis_available


class Delivered:
    """Collects what a transport delivers, resolving publishers' futures as the hub does."""

    def __init__(self) -> None:
        self.entries: list[Entry] = []
        self.arrived = asyncio.Event()

    def __call__(self, entries: list[Entry], done: asyncio.Future[Entry] | None) -> None:
        self.entries.extend(entries)
        self.arrived.set()
        if done is not None and not done.done():
            done.set_result(entries[-1])

    async def wait_for(self, count: int, timeout: float = 10) -> None:
        async with asyncio.timeout(timeout):
            while len(self.entries) < count:
                self.arrived.clear()
                await self.arrived.wait()


Opener = Callable[[int], Transport]


@pytest.fixture(params=["sqlite", "shared-sqlite", "redis"])
def opener(request: pytest.FixtureRequest, tmp_path: Path) -> Any:
    """Opens transports of one kind that share storage (a file, or one Redis server); the
    shared SQLite one is what each of ``--workers N`` opens."""
    if request.param.endswith("sqlite"):
        path = str(tmp_path / "t.sqlite3")
        shared = request.param == "shared-sqlite"
        yield lambda keep: open_transport(
            HubSettings(
                anonymous=True,
                history_path=path,
                history_size=keep,
                ring_size=1,
                history_shared=shared,
            )
        )
        return
    if not redis_available():
        pytest.skip("redis-server is not installed (make test installs it as root)")
    with RedisServer(tmp_path) as server:
        yield lambda keep: open_transport(
            HubSettings(anonymous=True, transport_url=server.url, history_size=keep, ring_size=1)
        )


async def _publish(transport: Transport, updates: list[Update]) -> Entry:
    done: asyncio.Future[Entry] = asyncio.get_running_loop().create_future()
    transport.append(updates, [u.encode() for u in updates], done)
    return await asyncio.wait_for(done, 10)  # a publisher never answered fails, not hangs


def _run(work: Coroutine[Any, Any, Any], deadline: float = 60) -> Any:
    """``asyncio.run`` with a deadline on the whole test (reads, starts, closes too)."""
    return asyncio.run(asyncio.wait_for(work, deadline))


def _with_started(opener: Opener, body: Callable[[Transport, Delivered], Any]) -> None:
    """Run ``body`` against a started transport on a fresh event loop."""

    async def go() -> None:
        transport = opener(1000)
        delivered = Delivered()
        await transport.start(asyncio.get_running_loop(), delivered)
        try:
            await body(transport, delivered)
        finally:
            await transport.close()

    _run(go())


def test_appends_are_delivered_in_order_and_read_back(opener: Opener) -> None:
    _with_started(opener, _appends_are_delivered_in_order_and_read_back)


async def _appends_are_delivered_in_order_and_read_back(
    transport: Transport, delivered: Delivered
) -> None:
    assert transport.last_id_at_start == EARLIEST and transport.start_position is None
    await asyncio.gather(
        *(_publish(transport, [Update(f"u{i}", ("t",), f"d{i}")]) for i in range(20))
    )
    await delivered.wait_for(20)
    ids = [e.update.id for e in delivered.entries]
    assert sorted(ids, key=lambda i: int(i[1:])) == [f"u{i}" for i in range(20)]
    positions = [e.position for e in delivered.entries]
    assert positions == sorted(positions) and len(set(positions)) == 20
    everything = await transport.read(None, None, None, 100, 1 << 20)
    assert [e.update.id for e in everything] == ids  # the one total order, stored
    assert [e.position for e in everything] == positions
    middle = await transport.read(positions[4], positions[9], None, 100, 1 << 20)
    assert [e.update.id for e in middle] == ids[5:9]
    upto = await transport.read(positions[4], None, positions[9], 100, 1 << 20)
    assert [e.update.id for e in upto] == ids[5:10]
    assert len(await transport.read(None, None, None, 3, 1 << 20)) == 3
    assert len(await transport.read(None, None, None, 100, 1)) == 1  # bytes bound
    found = await transport.lookup(ids[7])
    assert found is not None and found.position == positions[7]
    assert found.update == delivered.entries[7].update
    assert await transport.lookup("never") is None
    assert await transport.count() == 20


def test_fields_survive_storage(opener: Opener) -> None:
    _with_started(opener, _fields_survive_storage)


async def _fields_survive_storage(transport: Transport, delivered: Delivered) -> None:
    update = Update("x", ("a", "b"), "multi\nline", private=True, type="t", retry=2**64 - 1)
    await _publish(transport, [update])
    (back,) = await transport.read(None, None, None, 10, 1 << 20)
    assert back.update == update
    assert back.chunk == Entry.of(0, update).chunk


def test_trimmed_to_the_history_size_and_reopened(opener: Opener) -> None:
    _run(_trimmed_to_the_history_size_and_reopened(opener))


async def _trimmed_to_the_history_size_and_reopened(opener: Opener) -> None:
    transport = opener(300)
    delivered = Delivered()
    await transport.start(asyncio.get_running_loop(), delivered)
    for start in range(0, 1024, 64):
        await _publish(transport, [Update(f"u{i}", ("t",)) for i in range(start, start + 64)])
    await delivered.wait_for(1024)
    assert 300 <= await transport.count() < 300 + 256
    assert await transport.lookup("u0") is None
    newest = await transport.lookup("u1000")
    assert newest is not None
    await transport.close()
    reopened = opener(300)
    again = Delivered()
    await reopened.start(asyncio.get_running_loop(), again)
    assert reopened.last_id_at_start == "u1023"
    assert reopened.start_position == delivered.entries[-1].position
    await _publish(reopened, [Update("next", ("t",))])
    await again.wait_for(1)
    assert again.entries[0].position > reopened.start_position  # the order continues
    await reopened.close()


def test_a_storage_failure_reaches_the_publisher_and_publishing_recovers(tmp_path: Path) -> None:
    """The failed commit is the publisher's 503; once the storage is back, the next publish
    is stored and delivered (the history thread outlives the failure)."""
    _run(_a_storage_failure_reaches_the_publisher(tmp_path))


async def _a_storage_failure_reaches_the_publisher(tmp_path: Path) -> None:
    transport = open_transport(
        HubSettings(anonymous=True, history_path=str(tmp_path / "f.sqlite3"))
    )
    delivered = Delivered()
    await transport.start(asyncio.get_running_loop(), delivered)
    await _publish(transport, [Update("a", ("t",))])
    transport._db.execute("DROP TABLE updates")  # type: ignore[attr-defined]  # the disk "fails"
    with pytest.raises(TransportUnavailable, match="could not store"):
        await _publish(transport, [Update("b", ("t",))])
    assert [e.update.id for e in delivered.entries] == ["a"]  # nothing else delivered
    transport._db.executescript(_SCHEMA)  # type: ignore[attr-defined]  # the disk is back
    stored = await asyncio.wait_for(_publish(transport, [Update("c", ("t",))]), 10)
    assert stored.update.id == "c"
    assert [e.update.id for e in delivered.entries] == ["a", "c"]
    assert [e.update.id for e in await transport.read(None, None, None, 10, 1 << 20)] == ["c"]
    await transport.close()


def test_a_publish_never_confirmed_is_refused_after_the_delivery_timeout(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Stored but never delivered: each publisher gets its 503 ``DELIVERY_TIMEOUT`` after
    its own publish (not its elder's), and publishing works again once delivery does."""
    monkeypatch.setattr("skipfilter.hub.core.hub.DELIVERY_TIMEOUT", 0.5)

    async def go() -> None:
        hub = Hub(HubSettings(anonymous=True, history_path=str(tmp_path / "h.db"), heartbeat=0))
        await hub.start()
        loop = asyncio.get_running_loop()
        deliver, held = hub.fanout.enqueue, []
        hub.fanout.enqueue = lambda *entries_done: held.append(entries_done)  # type: ignore[method-assign]

        async def timed(name: str) -> tuple[float, str]:
            started = loop.time()
            with pytest.raises(TransportUnavailable) as refused:
                await hub.publish(Update(name, ("t",)))
            return loop.time() - started, str(refused.value)

        first = asyncio.ensure_future(timed("a"))
        await asyncio.sleep(0.3)
        second = asyncio.ensure_future(timed("b"))
        for waited, text in await asyncio.gather(first, second):
            assert 0.45 < waited < 0.9, waited
            assert "no confirmation within 0.5 s" in text and "may still be delivered" in text
        hub.fanout.enqueue = deliver  # type: ignore[method-assign]
        for entries, done in held:  # delivery resumes
            deliver(entries, done)
        assert (await asyncio.wait_for(hub.publish(Update("c", ("t",))), 5)).update.id == "c"
        await hub.close()

    _run(go())


def test_a_stray_redis_entry_is_skipped_not_fatal(tmp_path: Path) -> None:
    """An entry no hub wrote (another program's XADD into the stream) stops neither a
    node's start nor its tail; the hub's own updates around it still arrive, in order."""
    if not redis_available():
        pytest.skip("redis-server is not installed (make test installs it as root)")
    import redis

    from skipfilter.hub.transports.redis.transport import RedisTransport

    async def go(url: str) -> None:
        stray = redis.Redis.from_url(url)
        stray.xadd("skipfilter:updates", {"note": "not an update"})  # newest at start
        transport = RedisTransport(url)
        delivered = Delivered()
        await transport.start(asyncio.get_running_loop(), delivered)
        assert transport.last_id_at_start == EARLIEST
        await _publish(transport, [Update("a", ("t",))])
        stray.xadd("skipfilter:updates", {"u": "{broken"})
        await _publish(transport, [Update("b", ("t",))])
        await delivered.wait_for(2)
        assert [e.update.id for e in delivered.entries] == ["a", "b"]
        assert [e.update.id for e in await transport.read(None, None, None, 10, 1 << 20)] == [
            "a",
            "b",
        ]
        await transport.close()

    with RedisServer(tmp_path) as server:
        _run(go(server.url))


def test_sqlite_commits_one_turns_appends_together_and_keeps_its_log_bounded(
    tmp_path: Path,
) -> None:
    """Appends made in one turn of the loop share one transaction; under a steady stream
    of commits the write-ahead log is still checkpointed and restarted."""
    path = tmp_path / "t.sqlite3"
    wal = tmp_path / "t.sqlite3-wal"

    async def go() -> None:
        transport = open_transport(HubSettings(anonymous=True, history_path=str(path)))
        delivered = Delivered()
        await transport.start(asyncio.get_running_loop(), delivered)
        try:
            await asyncio.gather(
                *(_publish(transport, [Update(f"g{i}", ("t",))]) for i in range(8))
            )
            assert transport.commits == 1  # eight publishes of one turn: one commit
            biggest = 0
            for i in range(1500):  # one commit each: ~25 MB of log without checkpoints
                await _publish(transport, [Update(f"u{i}", ("t",), "x" * 2000)])
                biggest = max(biggest, wal.stat().st_size)
            assert transport.commits == 1501
            assert await transport.count() == 1508
            assert biggest < 8 << 20, f"the log grew to {biggest} bytes"
        finally:
            await transport.close()

    _run(go())


def test_redis_groups_and_a_lost_script_cache_lose_nothing(tmp_path: Path) -> None:
    """Concurrent publishes go to Redis as one group, split into several script calls past
    a call's size; every one is delivered once, in stream order, with its own payload. A
    Redis that forgot its scripts (SCRIPT FLUSH, as after a restart) is taught again and
    the group appended once, not twice."""
    if not redis_available():
        pytest.skip("redis-server is not installed (make test installs it as root)")
    import redis

    from skipfilter.hub.transports.redis import transport as redis_transport

    async def go(url: str) -> None:
        transport = redis_transport.RedisTransport(url)
        delivered = Delivered()
        await transport.start(asyncio.get_running_loop(), delivered)
        count = redis_transport._CALL_ENTRIES * 2 + 7
        updates = [Update(f"u{i}", (f"t{i % 3}",), f"d{i}") for i in range(count)]
        answers = await asyncio.gather(*(_publish(transport, [u]) for u in updates))
        assert [a.update for a in answers] == updates
        redis.Redis.from_url(url).script_flush()
        late = [Update(f"late{i}", ("t",), f"x{i}") for i in range(5)]
        await asyncio.gather(*(_publish(transport, [u]) for u in late))
        await delivered.wait_for(count + 5)
        got = [e.update for e in delivered.entries]
        assert sorted(got, key=lambda u: u.id) == sorted(updates + late, key=lambda u: u.id)
        stored = await transport.read(None, None, None, count + 10, 1 << 30)
        assert [e.update for e in stored] == got  # once each, in the order delivered
        assert await transport.count() == count + 5
        await transport.close()

    with RedisServer(tmp_path) as server:
        _run(go(server.url))
