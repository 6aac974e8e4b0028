"""What keeping presence in the shared SQLite file costs local workers (``--workers N``).

In one process, on a real file: recording subscriptions (CPU on the event loop, and the time
a write transaction holds the file's write lock, which publishes on every worker wait for),
one per turn of the loop (connects arriving one by one) and in bursts (a turn with many); a
page of the subscriptions API among every worker's rows (walked in recorded order from the
cursor, against the worker index SQLite first chose); and the reaping of a killed
worker's rows (claim, events, removal). Read the ratios, not the times.

    .venv/bin/python -m benchmarks.hub.presence_local --subscriptions 10000
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sqlite3
import tempfile
import time
from pathlib import Path
from typing import Any

from skipfilter.hub.frontends.v1.subscription_events import Subscription, SubscriptionBook
from skipfilter.hub.transports import sqlite_presence
from skipfilter.hub.transports.sqlite_presence import SqlitePresence
from skipfilter.hub.update import Update

#: How a page finds the live workers' rows: walking them in recorded order from the cursor
#: (the hub's), or through the worker index, which reads every row after the cursor and
#: sorts them (what SQLite chose before the ``+``).
_PAGING = {
    "walk": sqlite_presence._LIVE,
    "indexed": sqlite_presence._LIVE.lstrip("+"),
}


def _doc(n: int) -> tuple[str, dict[str, Any]]:
    sub = Subscription((f"https://example.com/users/{n}/books/{{id}}", "exact"), f"urn:s:{n}")
    return sub.id, sub.document()


class _Timed(SqlitePresence):
    """A presence that times each write transaction (how long it holds the write lock)."""

    held: list[float]

    def _write(self, fn: Any) -> Any:
        start = time.perf_counter()
        try:
            return super()._write(fn)
        finally:
            self.held.append(time.perf_counter() - start)


def _presence(path: Path, published: list[Update]) -> _Timed:
    book = SubscriptionBook(published.extend, lambda: f"e{len(published)}")
    presence = _Timed(str(path), published.extend, book.recorded_update, 60.0)
    presence.held = []
    return presence


async def _record(path: Path, count: int, burst: int) -> dict[str, float]:
    """Record ``count`` subscriptions, ``burst`` per turn of the loop, until written."""
    presence = _presence(path, [])
    await presence.start()
    presence.held.clear()
    docs = [_doc(n) for n in range(count)]
    cpu = time.thread_time()
    wall = time.perf_counter()
    loop_cpu = 0.0
    for start in range(0, count, burst):
        turn = time.thread_time()
        for field, doc in docs[start : start + burst]:
            presence.add(field, doc)
        loop_cpu += time.thread_time() - turn
        await asyncio.sleep(0)
    while presence.pending or presence._flying:
        await asyncio.sleep(0.001)
    await presence.page(None, 1)
    wall = time.perf_counter() - wall
    cpu = time.thread_time() - cpu
    held = sorted(presence.held)
    result = {
        "loop_us_per_sub": loop_cpu / count * 1e6,
        "wall_us_per_sub": wall / count * 1e6,
        "writes": len(held),
        "lock_held_p50_ms": held[len(held) // 2] * 1e3,
        "lock_held_p99_ms": held[len(held) * 99 // 100] * 1e3,
        "lock_held_max_ms": held[-1] * 1e3,
    }
    await presence.stop()
    return result


async def _page_and_reap(path: Path, count: int, workers: int, page: int) -> dict[str, float]:
    """``workers`` workers holding ``count`` subscriptions between them; a page of the API;
    then one of them is made gone (its mark rewritten to a dead process) and reaped."""
    published: list[Update] = []
    held = [_presence(path, published) for _ in range(workers)]
    for presence in held:
        await presence.start()
    for n in range(count):
        held[n % workers].add(*_doc(n))
    for presence in held:
        await presence.page(None, 1)
    reader = held[0]
    paging = {}
    for name, live in _PAGING.items():  # side by side: the ratio is the figure
        sqlite_presence._LIVE = live
        start = time.perf_counter()
        rounds = 20
        for _ in range(rounds):
            await reader.page(None, page)
        first_page = (time.perf_counter() - start) / rounds
        start = time.perf_counter()
        cursor: tuple[str, int] | None = None
        listed = 0
        while True:
            raws, cursor = await reader.page(cursor, page)
            listed += len(raws)
            if cursor is None:
                break
        paging[f"{name}_first_page_ms"] = first_page * 1e3
        paging[f"{name}_all_pages_ms"] = (time.perf_counter() - start) * 1e3
    sqlite_presence._LIVE = _PAGING["walk"]
    victim = held[-1]
    dead = "0/0/1/0#victim"  # boot id "0": written before this machine booted
    with sqlite3.connect(path) as db:
        db.execute("UPDATE presence_workers SET worker = ? WHERE worker = ?", (dead, victim.node))
        db.execute("UPDATE presence SET worker = ? WHERE worker = ?", (dead, victim.node))
    victim.node = dead + "-stopped"  # its own stop must not touch the rows
    reader.held.clear()
    start = time.perf_counter()
    await reader._reap()
    reap = time.perf_counter() - start
    reap_held = max(reader.held)
    ended = sum(1 for u in published if not json.loads(u.data)["active"])
    for presence in held:
        await presence.stop()
    return {
        "listed": listed,
        **paging,
        "all_pages_indexed_over_walk": paging["indexed_all_pages_ms"] / paging["walk_all_pages_ms"],
        "reaped": ended,
        "reap_ms": reap * 1e3,
        "reap_us_per_sub": reap / max(ended, 1) * 1e6,
        "reap_lock_held_max_ms": reap_held * 1e3,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--subscriptions", type=int, default=10_000)
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument("--page", type=int, default=1000)
    args = parser.parse_args()
    sqlite_presence.BUSY_TIMEOUT = 5.0
    with tempfile.TemporaryDirectory() as folder:
        rows = {}
        for burst in (1, 100):
            path = Path(folder) / f"record{burst}.sqlite3"
            rows[burst] = asyncio.run(_record(path, args.subscriptions, burst))
            print(f"record, {burst} per turn:", json.dumps(rows[burst]))
        ratio = rows[1]["wall_us_per_sub"] / rows[100]["wall_us_per_sub"]
        print(f"one per turn / bursts of 100, wall per subscription: {ratio:.1f}x")
        path = Path(folder) / "page.sqlite3"
        found = asyncio.run(_page_and_reap(path, args.subscriptions, args.workers, args.page))
        print(f"page of {args.page} among {args.workers} workers:", json.dumps(found))


if __name__ == "__main__":
    main()
