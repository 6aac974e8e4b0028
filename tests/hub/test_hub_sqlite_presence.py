"""Presence over one SQLite file, as local workers keep it: instances in one process and
workers in real processes on a real file. Every worker's subscriptions are listed by any;
a killed worker's end is announced once (whoever notices), a paused one keeps its
subscriptions, and a file no hub wrote, or one that stays locked, costs bounded work."""

from __future__ import annotations

import asyncio
import json
import logging
import os
import select
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, TypeVar

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from skipfilter.hub.frontends.v1.subscription_events import Subscription, SubscriptionBook
from skipfilter.hub.transports import process_mark, sqlite_presence
from skipfilter.hub.transports.process_mark import ProcessMark
from skipfilter.hub.transports.sqlite_presence import SqlitePresence
from skipfilter.hub.update import Update

_T = TypeVar("_T")
TTL = 0.3  # a beat every 0.1 s


def subscription(n: int, who: str = "s") -> Subscription:
    return Subscription((f"https://example.com/books/{n}", "exact"), f"{who}{n}")


class Worker:
    """A presence with what it published, as the hub would run it."""

    def __init__(self, path: Path, ttl: float = TTL) -> None:
        self.published: list[Update] = []
        book = SubscriptionBook(self.published.extend, lambda: f"e{len(self.published)}")
        self.presence = SqlitePresence(str(path), self.published.extend, book.recorded_update, ttl)

    def add(self, *subscriptions: Subscription) -> None:
        for sub in subscriptions:
            self.presence.add(sub.id, sub.document())

    def ended(self) -> list[str]:
        """Topics of the subscriptions it announced ended."""
        return [u.topics[0] for u in self.published if not json.loads(u.data)["active"]]

    async def listed(self, count: int = 1000) -> list[str]:
        """The ids of every live worker's subscriptions, read in pages of ``count``."""
        found: list[str] = []
        cursor: tuple[str, int] | None = None
        while True:
            raws, cursor = await self.presence.page(cursor, count)
            found += [json.loads(raw)["id"] for raw in raws]
            if cursor is None:
                return found


@asynccontextmanager
async def workers(path: Path, n: int, ttl: float = TTL) -> AsyncIterator[list[Worker]]:
    started = [Worker(path, ttl) for _ in range(n)]
    for worker in started:
        await worker.presence.start()
    try:
        yield started
    finally:
        for worker in started:
            await worker.presence.stop()


async def eventually(check: Callable[[], Awaitable[_T | None]], timeout: float = 10) -> _T:
    """``check()``'s first truthy result, within ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while not (result := await check()):
        assert time.monotonic() < deadline, "never happened"
        await asyncio.sleep(0.05)
    return result


def run(test: Callable[[], Awaitable[None]], timeout: float = 60) -> None:
    asyncio.run(asyncio.wait_for(test(), timeout))


def rows(path: Path, sql: str = "SELECT count(*) FROM presence") -> Any:
    with sqlite3.connect(path) as db:
        return db.execute(sql).fetchone()[0]


# -- process marks ------------------------------------------------------------------------


def _mark_of(pid: int) -> ProcessMark:
    here = process_mark.current()
    stat = Path(f"/proc/{pid}/stat").read_text()
    start = int(stat[stat.rindex(")") + 2 :].split()[19])
    return ProcessMark(here.boot, here.namespace, pid, start)


def test_a_mark_tells_live_paused_dead_zombie_and_reused_processes_apart() -> None:
    assert not process_mark.gone(process_mark.current())
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        mark = _mark_of(child.pid)
        assert not process_mark.gone(mark)
        os.kill(child.pid, signal.SIGSTOP)  # paused: alive
        assert not process_mark.gone(mark)
        os.kill(child.pid, signal.SIGCONT)
        reused = ProcessMark(mark.boot, mark.namespace, mark.pid, mark.start + 1)
        assert process_mark.gone(reused)  # the same pid, started at another time
        os.kill(child.pid, signal.SIGKILL)
        deadline = time.monotonic() + 10
        while Path(f"/proc/{child.pid}/stat").read_text().split(") ")[1][0] != "Z":
            assert time.monotonic() < deadline
            time.sleep(0.01)
        assert process_mark.gone(mark)  # a zombie its parent has not waited for yet
    finally:
        child.kill()
        child.wait(10)
    assert process_mark.gone(mark)  # waited for: no such process
    assert process_mark.gone(ProcessMark("another-boot", mark.namespace, os.getpid(), 0))
    other_namespace = ProcessMark(mark.boot, "1", mark.pid, mark.start)
    assert not process_mark.gone(other_namespace)  # cannot be judged: never taken for gone
    assert ProcessMark.parse(str(mark)) == mark
    for bad in ("", "a/b/c", "a/b/1/x", "a/b/-1/2", "a/b/1/2/3"):
        with pytest.raises(ValueError, match="not a process mark"):
            ProcessMark.parse(bad)


# -- workers in one process ---------------------------------------------------------------


def test_every_worker_lists_and_finds_every_workers_subscriptions(tmp_path: Path) -> None:
    async def go() -> None:
        async with workers(tmp_path / "h.sqlite3", 2) as (a, b):
            a.add(*(subscription(n, "a") for n in range(13)))
            b.add(*(subscription(n, "b") for n in range(12)))
            await a.presence.page(None, 1)  # a's changes written (b writes its own on read)
            every = {subscription(n, w).id for n in range(13) for w in "ab"} - {
                subscription(12, "b").id
            }
            for reader in (a, b):
                for size in (1, 10, 1000):  # pages: each subscription exactly once
                    listed = await reader.listed(size)
                    assert sorted(listed) == sorted(every)
            gone = subscription(3, "a")
            assert json.loads(await b.presence.find(gone.id) or "null") == gone.document()
            a.presence.remove(gone.id)
            assert await a.presence.find(gone.id) is None  # its own read sees its removal
            assert await b.presence.find(gone.id) is None
            assert gone.id not in await b.listed()
            assert not a.ended() and not b.ended()  # nobody is gone
            for beyond in (2**63 - 1, 10**20 - 1):  # the API's cursors hold up to 20 digits
                assert await b.presence.page(("all", beyond), 10) == ([], None)
        assert rows(tmp_path / "h.sqlite3") == 0  # each left and took its rows along
        assert rows(tmp_path / "h.sqlite3", "SELECT count(*) FROM presence_workers") == 0

    run(go)


def test_a_locked_file_costs_memory_bounded_by_what_is_held(tmp_path: Path) -> None:
    """10,000 subscriptions come and go while another process holds the file's write lock:
    what waits is the 10 held, and once the lock is released exactly they are recorded."""
    path = tmp_path / "h.sqlite3"

    async def go() -> None:
        async with workers(path, 1) as (a,):
            a.add(*(subscription(n, "kept") for n in range(10)))
            await a.listed()
            lock = sqlite3.connect(path, isolation_level=None)
            lock.execute("BEGIN EXCLUSIVE")
            try:
                for n in range(10_000):
                    sub = subscription(n, "churn")
                    a.add(sub)
                    if n % 100 == 0:
                        await asyncio.sleep(0)  # the writer runs, meets the lock
                    a.presence.remove(sub.id)
                a.add(*(subscription(n, "late") for n in range(10)))
                assert a.presence.pending <= 20
            finally:
                lock.execute("ROLLBACK")
                lock.close()
            listed = await eventually(lambda: _when(a.listed(), lambda ids: len(ids) == 20))
            assert sorted(listed) == sorted(
                subscription(n, w).id for n in range(10) for w in ("kept", "late")
            )
            assert rows(path) == 20

    run(go)


async def _when(result: Awaitable[_T], ok: Callable[[_T], bool]) -> _T | None:
    value = await result
    return value if ok(value) else None


def test_a_worker_removed_from_the_file_writes_itself_back_and_announces_again(
    tmp_path: Path,
) -> None:
    path = tmp_path / "h.sqlite3"

    async def go() -> None:
        async with workers(path, 2) as (a, b):
            held = [subscription(n, "a") for n in range(3)]
            a.add(*held)
            await a.listed()
            with sqlite3.connect(path) as db:  # what a reaper that erred would leave
                db.execute("DELETE FROM presence")
                db.execute("DELETE FROM presence_workers WHERE worker = ?", (a.presence.node,))
            assert await b.listed() == []
            listed = await eventually(lambda: _when(b.listed(), lambda ids: len(ids) == 3))
            assert sorted(listed) == sorted(s.id for s in held)
            again = [json.loads(u.data) for u in a.published]
            assert sorted(e["id"] for e in again if e["active"]) == sorted(s.id for s in held)
            assert a.presence.reannounced == 3

    run(go)


def test_rows_no_hub_wrote_are_skipped_and_a_valid_one_is_ended_once(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "h.sqlite3"
    real = subscription(1, "ghost")
    forged = {**real.document(), "id": "https://example.com/not-a-subscription"}

    async def go() -> None:
        async with workers(path, 1) as (a,):
            with sqlite3.connect(path) as db:
                db.executemany(
                    "INSERT INTO presence_workers VALUES (?, NULL)",
                    [("ghost",), (f"{process_mark.current()}-not-a-suffix",)],
                )
                db.executemany(
                    "INSERT INTO presence (worker, field, doc) VALUES ('ghost', ?, ?)",
                    [
                        ("a", "not json"),
                        ("b", "[1, 2]"),
                        ("c", json.dumps(forged)),
                        (real.id, json.dumps(real.document())),
                    ],
                )
            assert await a.listed() == []  # a worker no hub names is not live
            await eventually(lambda: _now(rows(path) == 0))
            await asyncio.sleep(5 * TTL)  # more beats: nothing announced twice
            assert a.ended() == [real.id]
            assert rows(path, "SELECT count(*) FROM presence_workers") == 1  # a itself

    run(go)
    assert "skipped a record" in caplog.text


async def _now(value: bool) -> bool:
    return value


def _dead_mark() -> ProcessMark:
    """The mark of a process that ran and ended (and was waited for)."""
    child = subprocess.Popen(["sleep", "60"])
    try:
        mark = _mark_of(child.pid)
    finally:
        child.kill()
        child.wait(10)
    assert process_mark.gone(mark)
    return mark


def test_a_claim_held_by_a_dead_reaper_is_taken_over_and_a_live_ones_is_left(
    tmp_path: Path,
) -> None:
    """A worker died (SIGKILL) holding three subscriptions, and the worker that claimed it
    died too before ending them: the next live worker takes the claim over, announces the
    three ended (once) and removes the dead worker's rows. A claim held by a live reaper (a
    slow one) is left to it: nothing announced, its rows kept."""
    path = tmp_path / "h.sqlite3"
    dead = f"{_dead_mark()}#{'d' * 12}"
    dead_reaper = f"{_dead_mark()}#{'r' * 12}"
    slow = f"{_dead_mark()}#{'s' * 12}"  # dead too, but claimed by a live reaper
    live_reaper = f"{process_mark.current()}#{'l' * 12}"
    held = [subscription(n, "dead") for n in range(3)]
    kept = [subscription(n, "slow") for n in range(2)]

    async def go() -> None:
        async with workers(path, 1) as (a,):
            with sqlite3.connect(path) as db:
                db.executemany(
                    "INSERT INTO presence_workers VALUES (?, ?)",
                    [(dead, dead_reaper), (slow, live_reaper)],
                )
                db.executemany(
                    "INSERT INTO presence (worker, field, doc) VALUES (?, ?, ?)",
                    [(dead, s.id, json.dumps(s.document())) for s in held]
                    + [(slow, s.id, json.dumps(s.document())) for s in kept],
                )
            await eventually(lambda: _now(sorted(a.ended()) == sorted(s.id for s in held)))
            await asyncio.sleep(5 * TTL)  # more beats: nothing announced twice, slow kept
            assert sorted(a.ended()) == sorted(s.id for s in held)
            assert rows(path, f"SELECT count(*) FROM presence WHERE worker = '{dead}'") == 0
            assert rows(path, f"SELECT count(*) FROM presence WHERE worker = '{slow}'") == 2
            workers_left = "SELECT count(*) FROM presence_workers WHERE worker IN (?, ?)"
            with sqlite3.connect(path) as db:
                left = db.execute(workers_left, (dead, slow)).fetchone()[0]
            assert left == 1  # the slow one, still its reaper's

    run(go)


def test_a_skipped_record_is_warned_about_once_not_at_every_listing_and_beat(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A worker named as no hub names one: taken for gone and skipped, with one warning,
    however many listings and finds read past it (the beats, an hour apart here, would
    reap it) and however many beats find it claimed by a live reaper."""
    path = tmp_path / "h.sqlite3"
    stray = "another-program's-worker"
    doc = json.dumps(subscription(1, "stray").document())

    def warnings() -> int:
        said = [r.getMessage() for r in caplog.records]
        return sum("skipped a record" in m and stray in m for m in said)

    async def listings() -> None:
        async with workers(path, 1, ttl=3600) as (a,):
            with sqlite3.connect(path) as db:
                db.execute("INSERT INTO presence_workers VALUES (?, NULL)", (stray,))
                db.execute(
                    "INSERT INTO presence (worker, field, doc) VALUES (?, 'f', ?)", (stray, doc)
                )
            for _ in range(5):
                assert await a.listed() == []
                assert await a.presence.find(subscription(1, "stray").id) is None
        assert warnings() == 1

    async def beats() -> None:
        async with workers(path, 1) as (a,):
            with sqlite3.connect(path) as db:  # its claim held by a live (slow) reaper
                db.execute(
                    "UPDATE presence_workers SET reaper = ? WHERE worker = ?",
                    (f"{process_mark.current()}#{'l' * 12}", stray),
                )
            await eventually(lambda: _now(warnings() > 0))
            await asyncio.sleep(10 * TTL)  # ten beats or so, each claiming what it can
            assert rows(path) == 1 and not a.ended()
        assert warnings() == 1

    with caplog.at_level(logging.WARNING, logger="skipfilter.hub"):
        run(listings)
        caplog.clear()
        run(beats)


#: add a subscription, remove one, let the writer start (a write in flight) or finish, take
#: or release the file's lock.
_OPS = st.lists(
    st.tuples(
        st.sampled_from(["add", "remove", "yield", "run", "lock", "unlock"]), st.integers(0, 7)
    ),
    max_size=60,
)


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(ops=_OPS)
def test_what_is_recorded_is_what_is_held_whatever_the_lock_did(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, ops: list[tuple[str, int]]
) -> None:
    """Against an oracle (a dict of what the worker holds): adds and removes, with the
    writer running at any point and another process taking the file's write lock."""
    monkeypatch.setattr(sqlite_presence, "BUSY_TIMEOUT", 0.02)
    monkeypatch.setattr(sqlite_presence, "RETRY", 0.01)
    path = tmp_path / f"h{time.monotonic_ns()}.sqlite3"

    async def go() -> None:
        held: dict[str, dict[str, Any]] = {}
        lock: sqlite3.Connection | None = None
        async with workers(path, 1, ttl=60) as (a,):
            try:
                for op, n in ops:
                    sub = subscription(n)
                    if op == "add" and sub.id not in held:
                        held[sub.id] = sub.document()
                        a.add(sub)
                    elif op == "remove":
                        held.pop(sub.id, None)
                        a.presence.remove(sub.id)
                    elif op == "yield":
                        await asyncio.sleep(0)
                    elif op == "run":
                        await asyncio.sleep(0.03)
                    elif op == "lock" and lock is None:
                        lock = sqlite3.connect(path, isolation_level=None)
                        lock.execute("BEGIN EXCLUSIVE")
                    elif op == "unlock" and lock is not None:
                        lock.execute("ROLLBACK")
                        lock.close()
                        lock = None
                    assert a.presence.pending <= 8
            finally:
                if lock is not None:
                    lock.execute("ROLLBACK")
                    lock.close()
            want = sorted(json.dumps(doc) for doc in held.values())

            async def recorded() -> bool:
                with sqlite3.connect(path) as db:
                    docs = sorted(d for (d,) in db.execute("SELECT doc FROM presence"))
                return docs == want and not a.presence.pending

            await eventually(recorded)
            assert sorted(await a.listed()) == sorted(held)

    run(go)


# -- workers in their own processes -------------------------------------------------------

_CHILD = """
import asyncio, sys
from skipfilter.hub.frontends.v1.subscription_events import Subscription
from skipfilter.hub.transports.sqlite_presence import SqlitePresence

async def main():
    presence = SqlitePresence(sys.argv[1], print, lambda doc: doc, 0.3)
    await presence.start()
    for n in range(int(sys.argv[2])):
        sub = Subscription((f"https://example.com/books/{n}", "exact"), f"{sys.argv[3]}{n}")
        presence.add(sub.id, sub.document())
    await presence.page(None, 1)
    print("ready", flush=True)
    await asyncio.sleep(120)

asyncio.run(main())
"""


def _spawn(path: Path, held: int, who: str) -> subprocess.Popen[str]:
    child = subprocess.Popen(
        [sys.executable, "-c", _CHILD, str(path), str(held), who], stdout=subprocess.PIPE, text=True
    )
    assert child.stdout is not None
    ready, _, _ = select.select([child.stdout], [], [], 30)
    assert ready and child.stdout.readline() == "ready\n", "the child worker did not start"
    return child


def test_a_killed_workers_subscriptions_vanish_and_end_once_a_paused_ones_stay(
    tmp_path: Path,
) -> None:
    path = tmp_path / "h.sqlite3"
    path.touch()
    children = [_spawn(path, 3, who) for who in ("paused", "killed")]

    async def go() -> None:
        paused, killed = children
        async with workers(path, 2) as (a, b):  # two readers, both reaping
            assert sorted(await a.listed()) == sorted(
                subscription(n, who).id for n in range(3) for who in ("paused", "killed")
            )
            os.kill(paused.pid, signal.SIGSTOP)
            os.kill(killed.pid, signal.SIGKILL)
            still = sorted(subscription(n, "paused").id for n in range(3))
            await eventually(lambda: _when(b.listed(), lambda ids: sorted(ids) == still))
            await asyncio.sleep(10 * TTL)  # many beats of both: the paused one is not gone
            assert sorted(await a.listed()) == still
            ended = sorted(a.ended() + b.ended())  # once, by whichever noticed first
            assert ended == sorted(subscription(n, "killed").id for n in range(3))
            assert rows(path) == 3
            os.kill(paused.pid, signal.SIGCONT)

    try:
        run(go)
    finally:
        for child in children:
            child.kill()
            child.wait(10)
