"""The shared SQLite history (``SharedSqliteTransport``), several transports on one file as
the workers of ``--workers N`` open it: one order delivered by all, exact trimming whoever
writes, wake-ups (and the poll when one is lost), the write lock's 503, and a follower that
fell behind the trim."""

from __future__ import annotations

import asyncio
import sqlite3
import time
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from skipfilter.hub import HubSettings
from skipfilter.hub.transports import TransportUnavailable, sqlite_follow, sqlite_shared
from skipfilter.hub.transports.sqlite_shared import SharedSqliteTransport
from skipfilter.hub.transports.wakeups import Wakeups
from skipfilter.hub.update import Entry, Update
from tests.hub.hubtest import Server, Stream
from tests.hub.test_hub_transports import Delivered


def _run(work: Coroutine[Any, Any, Any], deadline: float = 60) -> Any:
    return asyncio.run(asyncio.wait_for(work, deadline))


async def _started(
    path: Path, keep: int = 1000, events: int = 1000, backlog: Callable[[], int] = lambda: 0
) -> tuple[SharedSqliteTransport, Delivered]:
    transport = SharedSqliteTransport(str(path), keep, events)
    delivered = Delivered()
    await transport.start(asyncio.get_running_loop(), delivered, backlog)
    return transport, delivered


def _append(
    transport: SharedSqliteTransport, updates: list[Update], events: bool = False
) -> asyncio.Future[Entry]:
    done: asyncio.Future[Entry] = asyncio.get_running_loop().create_future()
    transport.append(updates, [Entry.of(0, u).chunk for u in updates], done, events)
    return done


def test_every_transport_delivers_every_writers_updates_once_in_the_files_order(
    tmp_path: Path,
) -> None:
    async def go() -> None:
        path = tmp_path / "h.sqlite3"
        a, got_a = await _started(path)
        b, got_b = await _started(path)
        c, got_c = await _started(path)
        writers = [a, b, c]
        pending = [
            _append(writers[n % 3], [Update(f"u{n}.{k}", ("t",)) for k in range(n % 4 + 1)])
            for n in range(30)
        ]
        answers = await asyncio.wait_for(asyncio.gather(*pending), 10)
        total = sum(n % 4 + 1 for n in range(30))
        for got in (got_a, got_b, got_c):
            await got.wait_for(total)
        stored = await a.read(None, None, None, 1000, 1 << 30)
        order = [(e.position, e.update.id) for e in stored]
        for got in (got_a, got_b, got_c):
            assert [(e.position, e.update.id) for e in got.entries] == order
            seqs = [e.seq for e in got.entries]
            assert seqs == list(range(1, total + 1))  # each worker numbers what it delivers
        for n, answer in enumerate(answers):  # a publisher is answered with its last row
            assert answer.update.id == f"u{n}.{n % 4}"
        await asyncio.sleep(0.3)
        assert all(len(got.entries) == total for got in (got_a, got_b, got_c))
        for transport in writers:
            await transport.close()

    _run(go())


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    st.lists(
        st.tuples(st.integers(0, 1), st.integers(1, 6), st.booleans()), min_size=1, max_size=25
    ),
    st.integers(1, 12),
    st.integers(1, 6),
)
def test_trimming_is_exact_whichever_worker_writes(
    tmp_path_factory: pytest.TempPathFactory,
    appends: list[tuple[int, int, bool]],
    keep: int,
    events_keep: int,
) -> None:
    """Oracle: one list per kind trimmed by the rule of ``SqliteTransport`` (in steps of
    ``min(256, keep // 4)``) as if one process wrote everything. Counts kept per process
    would let each trim by its own count: the file would hold more, or less."""
    path = tmp_path_factory.mktemp("trim") / "h.sqlite3"

    async def go() -> None:
        writers = [(await _started(path, keep, events_keep))[0] for _ in range(2)]
        kept: dict[bool, list[str]] = {False: [], True: []}
        limit = {False: keep, True: events_keep}
        for n, (writer, count, events) in enumerate(appends):
            ids = [f"{n}.{k}" for k in range(count)]
            await asyncio.wait_for(
                _append(writers[writer], [Update(i, ("t",)) for i in ids], events), 10
            )
            kept[events] += ids
            over = len(kept[events]) - limit[events]
            if over > 0 and over >= min(256, limit[events] // 4):
                del kept[events][:over]
            with sqlite3.connect(path) as db:
                for kind in (False, True):
                    stored = db.execute(
                        "SELECT id FROM updates WHERE event = ? ORDER BY seq", (int(kind),)
                    ).fetchall()
                    assert [r[0] for r in stored] == kept[kind]
                counts = db.execute("SELECT rows0, rows1 FROM history_counts").fetchone()
                assert counts == (len(kept[False]), len(kept[True]))
        for transport in writers:
            await transport.close()

    _run(go())


def test_a_commit_wakes_every_other_follower_at_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With the poll taken away (an hour), only the wake-up can bring the update: four
    workers, each commits in turn, and each of the three others delivers it (a writer that
    woke only the first peer it listed left the rest a poll interval late)."""
    monkeypatch.setattr(sqlite_follow, "POLL", 3600.0)

    async def go() -> None:
        path = tmp_path / "h.sqlite3"
        started = [await _started(path) for _ in range(4)]
        await asyncio.sleep(0.3)  # every follower waits for a wake-up now
        for n, (writer, _) in enumerate(started):
            await asyncio.wait_for(_append(writer, [Update(f"woken{n}", ("t",))]), 10)
            for k, (_, got) in enumerate(started):
                try:
                    await got.wait_for(n + 1, timeout=5)
                except TimeoutError:
                    raise AssertionError(f"worker {n}'s commit did not wake worker {k}") from None
        for _, got in started:
            assert [e.update.id for e in got.entries] == [f"woken{n}" for n in range(4)]
        for transport, _ in started:
            await transport.close()

    _run(go())


def test_a_lost_wake_up_only_delays(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """No wake-up reaches anyone: the followers' poll of ``data_version`` delivers."""
    monkeypatch.setattr(Wakeups, "wake_all", lambda self: None)

    async def go() -> None:
        path = tmp_path / "h.sqlite3"
        a, got_a = await _started(path)
        b, got_b = await _started(path)
        await asyncio.sleep(0.3)
        await asyncio.wait_for(_append(a, [Update("polled", ("t",))]), 10)
        await got_b.wait_for(1, timeout=5)
        assert [e.update.id for e in got_a.entries + got_b.entries] == ["polled", "polled"]
        await a.close()
        await b.close()

    _run(go())


def test_a_write_lock_held_too_long_is_a_503_naming_it_and_publishing_recovers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sqlite_shared, "BUSY_TIMEOUT_MS", 200)

    async def go() -> None:
        path = tmp_path / "h.sqlite3"
        a, got = await _started(path)
        holder = sqlite3.connect(path, isolation_level=None)
        holder.execute("BEGIN IMMEDIATE")  # another worker stuck inside its transaction
        with pytest.raises(TransportUnavailable, match=r"held the write lock .* more than 0.2 s"):
            await asyncio.wait_for(_append(a, [Update("blocked", ("t",))]), 10)
        holder.execute("ROLLBACK")
        holder.close()
        entry = await asyncio.wait_for(_append(a, [Update("after", ("t",))]), 10)
        assert entry.update.id == "after"
        await got.wait_for(1)
        assert [e.update.id for e in got.entries] == ["after"]
        await a.close()

    _run(go())


def test_a_follower_behind_the_trim_reports_the_gap_and_fails_its_publisher(
    tmp_path: Path,
) -> None:
    async def go() -> None:
        path = tmp_path / "h.sqlite3"
        behind = [10**9]  # fan-out of ``a`` far behind: its follower stops reading
        a, got_a = await _started(path, keep=8, backlog=lambda: behind[0])
        b, got_b = await _started(path, keep=8)
        await asyncio.wait_for(_append(b, [Update("first", ("t",))]), 10)
        mine = _append(a, [Update("mine", ("t",))])  # after a row ``a`` has not read
        await asyncio.sleep(0.1)
        assert not mine.done()  # ``a`` delivers in order: its row waits for the one before
        for n in range(5):
            await asyncio.wait_for(_append(b, [Update(f"b{n}.{k}", ("t",)) for k in range(8)]), 10)
        behind[0] = 0
        with pytest.raises(TransportUnavailable, match="removed from the history before"):
            await asyncio.wait_for(mine, 10)
        await got_a.wait_for(8)
        assert a.lost > 0 and a.lost + len(got_a.entries) == 42
        assert [e.update.id for e in got_a.entries] == [e.update.id for e in got_b.entries[-8:]]
        assert [e.seq for e in got_a.entries] == list(range(1, 9))  # numbered without holes
        await a.close()
        await b.close()

    _run(go())


def test_a_transport_opened_later_starts_where_the_file_stands(tmp_path: Path) -> None:
    async def go() -> None:
        path = tmp_path / "h.sqlite3"
        a, _ = await _started(path)
        for n in range(5):
            await asyncio.wait_for(_append(a, [Update(f"u{n}", ("t",))]), 10)
        late, got = await _started(path)
        assert late.last_id_at_start == "u4" and late.start_position == 5
        assert late.start_seq == 5
        await asyncio.wait_for(_append(a, [Update("next", ("t",))]), 10)
        await got.wait_for(1)
        assert [(e.seq, e.position, e.update.id) for e in got.entries] == [(6, 6, "next")]
        await a.close()
        await late.close()

    _run(go())


def test_an_in_memory_history_cannot_be_shared() -> None:
    with pytest.raises(ValueError, match=r"in-memory history .* lives inside one process"):
        SharedSqliteTransport(":memory:")


_REFUSE = """
CREATE TRIGGER refuse BEFORE INSERT ON updates WHEN NEW.id = 'refused'
BEGIN SELECT RAISE(ABORT, 'the disk said no'); END
"""


def test_a_group_commit_failing_inside_its_transaction_is_rolled_back_for_every_worker(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """SQLite aborts an insert inside a group's transaction (a trigger another program
    installed: a real error, as a full disk or an I/O error would be). The group's three
    publishers get the 503 with SQLite's words and none of their rows is stored; the
    worker let go of the write lock, so its next publishes and those of the other two
    workers are stored and delivered everywhere, in one order."""
    monkeypatch.setattr(sqlite_shared, "BUSY_TIMEOUT_MS", 1000)  # a lock kept: 503 in 1 s

    async def go() -> None:
        path = tmp_path / "h.sqlite3"
        started = [await _started(path) for _ in range(3)]
        (a, _), (b, _), (c, _) = started
        await asyncio.wait_for(_append(a, [Update("before", ("t",))]), 10)
        with sqlite3.connect(path) as other:
            other.executescript(_REFUSE)
        commits = a.commits
        group = [_append(a, [Update(i, ("t",))]) for i in ("kept?", "refused", "kept too?")]
        failed = await asyncio.wait_for(asyncio.gather(*group, return_exceptions=True), 10)
        for failure in failed:  # one transaction: all three refused, with SQLite's words
            assert isinstance(failure, TransportUnavailable), failure
            assert "the disk said no" in str(failure)
        assert a.commits == commits
        ids = ["before"]
        for n, writer in enumerate([a, b, c, a]):
            ids.append(f"next{n}")
            entry = await asyncio.wait_for(_append(writer, [Update(ids[-1], ("t",))]), 10)
            assert entry.update.id == ids[-1]
        for _, got in started:
            await got.wait_for(len(ids))
            assert [e.update.id for e in got.entries] == ids
        stored = await asyncio.wait_for(a.read(None, None, None, 100, 1 << 20), 10)
        assert [(e.position, e.update.id) for e in stored] == list(enumerate(ids, 1))
        assert await asyncio.wait_for(c.lookup("kept?"), 10) is None
        for transport, _ in started:
            await transport.close()

    _run(go())


def test_a_followers_read_failure_clears_from_health_once_reads_work_again(
    tmp_path: Path, settings: HubSettings
) -> None:
    """A worker's follower cannot read the history for a moment (the table is renamed
    away: a real SQLite error on its read, as an I/O error would be): ``problem()`` and
    ``/healthz`` say so and publishes are refused; once reads work again both clear and
    the next publish is stored and delivered. A failure kept after it cleared left that
    worker refusing every publish until restarted."""
    path = tmp_path / "h.sqlite3"
    settings = settings.with_changes(history_path=str(path), history_shared=True)
    with Server(settings) as node, node.client() as client:
        assert client.get("/healthz").status_code == 200
        with sqlite3.connect(path) as db:
            db.execute("ALTER TABLE updates RENAME TO away")
        _until(lambda: node.hub.problem() is not None, "the follower's failure is seen")
        assert "the history cannot be read" in str(node.hub.problem())
        answer = client.get("/healthz")
        assert answer.status_code == 503 and "the history cannot be read" in answer.text
        assert node.publish(data="refused").status_code == 503
        with sqlite3.connect(path) as db:
            db.execute("ALTER TABLE away RENAME TO updates")
        _until(lambda: node.hub.problem() is None, "the failure clears once reads work")
        assert client.get("/healthz").status_code == 200, client.get("/healthz").text
        stream = Stream(node, ["https://example.com/books/1"])
        try:
            answer = node.publish(data="after", id="after")
            assert answer.status_code == 200, answer.text
            assert stream.event(10).id == "after"
        finally:
            stream.close()


def _until(check: Callable[[], bool], what: str, timeout: float = 10) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, f"not within {timeout} s: {what}"
        time.sleep(0.02)
