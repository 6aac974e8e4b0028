"""What sharing the SQLite history between workers costs, in CPU per update (a script).

In one run, on the same updates (one topic, 5 bytes of data): a process appends ``--count``
updates, ``--in-flight`` publishes at a time (each turn of its loop one group commit), to

- ``sqlite``: the one-process history (``SqliteTransport``), as ``--workers 1`` runs;
- ``shared``: the shared history (``SharedSqliteTransport``) while ``--followers`` other
  processes follow the same file, as each of ``--workers N`` does.

Each row is CPU time (``process_time``, all threads) per update: the publisher's (store,
deliver, answer; wake the others), and each follower's (woken, read, decode, deliver), with
the transport handing entries to a callback that answers the publisher as fan-out would. No
HTTP and no index: what the transport adds. CPU time, not wall time, so a busy machine blurs
it little; the ratios are the figures (same run, same machine).

    .venv/bin/python -m benchmarks.hub.shared_history_cost
    .venv/bin/python -m benchmarks.hub.shared_history_cost --count 20000 --in-flight 16
"""

from __future__ import annotations

import argparse
import asyncio
import multiprocessing
import tempfile
import time
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

from skipfilter.hub.transports.sqlite import SqliteTransport
from skipfilter.hub.transports.sqlite_shared import SharedSqliteTransport
from skipfilter.hub.update import Entry, Update, http_chunk

TOPIC = "https://example.com/books/1"


def _loop() -> asyncio.AbstractEventLoop:
    try:
        import uvloop

        return uvloop.new_event_loop()
    except ImportError:  # pragma: no cover - the hub extra brings it
        return asyncio.new_event_loop()


class _Counted:
    """A transport's deliver callback: counts entries, answers publishers at once."""

    def __init__(self, count: int) -> None:
        self.count = count
        self.seen = 0
        self.all_in: asyncio.Future[None] | None = None

    def __call__(self, entries: list[Entry], done: asyncio.Future[Entry] | None) -> None:
        self.seen += len(entries)
        if done is not None and not done.done():
            done.set_result(entries[-1])
        if self.seen >= self.count and self.all_in is not None and not self.all_in.done():
            self.all_in.set_result(None)


async def _publish(transport: Any, count: int, in_flight: int) -> float:
    """Append ``count`` updates, ``in_flight`` at a time; CPU seconds it took."""
    loop = asyncio.get_running_loop()
    delivered = _Counted(count)
    await transport.start(loop, delivered)
    updates = [Update(f"u{i}", (TOPIC,), "hello") for i in range(count)]

    async def one(update: Update) -> None:
        done: asyncio.Future[Entry] = loop.create_future()
        transport.append((update,), (http_chunk(update.encode()),), done)
        await done

    async def lane(start: int) -> None:
        for i in range(start, count, in_flight):
            await one(updates[i])

    started = time.process_time()
    await asyncio.gather(*(lane(k) for k in range(in_flight)))
    spent = time.process_time() - started
    await transport.close()
    return spent


def _follow(path: str, count: int, ready: Any, report: Connection) -> None:
    """A follower process: CPU seconds from ready until ``count`` entries were delivered."""

    async def go() -> float:
        transport = SharedSqliteTransport(path, count * 2)
        delivered = _Counted(count)
        delivered.all_in = asyncio.get_running_loop().create_future()
        await transport.start(asyncio.get_running_loop(), delivered)
        started = time.process_time()
        ready.set()
        await asyncio.wait_for(delivered.all_in, 600)
        spent = time.process_time() - started
        await transport.close()
        return spent

    report.send(_loop().run_until_complete(go()))


def measure(kind: str, count: int, in_flight: int, followers: int) -> dict[str, Any]:
    """One row: the publisher's CPU per update, and each follower's."""
    folder = tempfile.mkdtemp(prefix="shared-history-")
    path = str(Path(folder) / "history.sqlite3")
    context = multiprocessing.get_context("spawn")
    procs, pipes = [], []
    if kind == "shared":
        for _ in range(followers):
            ready = context.Event()
            ours, theirs = context.Pipe()
            proc = context.Process(target=_follow, args=(path, count, ready, theirs))
            proc.start()
            if not ready.wait(60):
                raise RuntimeError("a follower did not start")
            procs.append(proc)
            pipes.append(ours)
    transport: Any = (
        SharedSqliteTransport(path, count * 2)
        if kind == "shared"
        else SqliteTransport(path, count * 2)
    )
    spent = _loop().run_until_complete(_publish(transport, count, in_flight))
    followed = [pipe.recv() for pipe in pipes]
    for proc in procs:
        proc.join(60)
    return {
        "row": kind,
        "in_flight": in_flight,
        "publisher_us": round(1e6 * spent / count, 1),
        "follower_us": [round(1e6 * f / count, 1) for f in followed],
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=10_000)
    parser.add_argument("--in-flight", type=int, nargs="+", default=[1, 16])
    parser.add_argument("--followers", type=int, default=1)
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    print("| row | in flight | publisher µs/update | each follower µs/update |")
    print("|---|---|---|---|")
    for in_flight in args.in_flight:
        for _ in range(args.rounds):
            for kind in ("sqlite", "shared"):
                row = measure(kind, args.count, in_flight, args.followers)
                followers = " / ".join(map(str, row["follower_us"])) or "-"
                print(f"| {kind} | {in_flight} | {row['publisher_us']} | {followers} |", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
