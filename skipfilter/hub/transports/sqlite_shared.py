"""The SQLite history shared by the worker processes of one machine (``--workers N``).

One file, one total order: each process commits the publishes of a turn of its event
loop in one ``BEGIN IMMEDIATE`` transaction, so writers take SQLite's write lock in turn
and a row's number (the head kept in ``history_counts`` plus one, read inside the
transaction) is its place in the order of commits. Row counts per kind live in
``history_counts`` too, updated in the same transaction, so every process trims the history
to its exact sizes. A lock not obtained within ``busy_timeout`` (5 s) fails the publishes
with a 503 that names it.

Every process, the publisher included, delivers rows from its follower (``sqlite_follow``)
in row order, so every subscriber on every worker sees one order, once; a publisher is
answered once its own row has come back through its follower and been handed to fan-out.
A process reads right after its own commit; it then wakes the other followers
(``wakeups``). Replays and lookups read the
shared file (``SqliteTransport``'s reader thread), so ``Last-Event-ID`` and ``earliest``
resume on any worker, including one started a moment ago.
"""

from __future__ import annotations

import asyncio
import logging
import sqlite3
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from skipfilter.hub.transports.base import (
    Backlog,
    Deliver,
    TransportUnavailable,
    no_backlog,
)
from skipfilter.hub.transports.sqlite import (
    _INSERT,
    _TRIM_EVERY,
    SqliteTransport,
    _Append,
    _Results,
    _row,
)
from skipfilter.hub.transports.sqlite_follow import Follower, Row
from skipfilter.hub.transports.sqlite_presence import SqlitePresence
from skipfilter.hub.transports.sqlite_rows import RowReader
from skipfilter.hub.transports.wakeups import Wakeups, wake_folder
from skipfilter.hub.update import EARLIEST, Entry, Update

log = logging.getLogger("skipfilter.hub")

#: One row: the newest row's number ever stored, and how many rows of each kind there are.
_COUNTS = (
    "CREATE TABLE IF NOT EXISTS history_counts (one INTEGER PRIMARY KEY CHECK (one = 0),"
    " head INTEGER NOT NULL, rows0 INTEGER NOT NULL, rows1 INTEGER NOT NULL)"
)
#: Milliseconds a writer waits for SQLite's write lock before its publishes get a 503.
BUSY_TIMEOUT_MS = 5000
#: Seconds ``close`` waits for this process's own stored publishes to come back.
_CLOSE_WAIT = 2.0
#: Seconds stored publishes may wait for this process's follower before health says so.
STUCK_AFTER = 10.0


def memory_refused(path: str) -> str | None:
    """Why ``path`` cannot be shared by workers (None: it can)."""
    if path in ("", ":memory:") or "mode=memory" in path:
        return (
            "--workers above 1 needs a history file the workers share: an in-memory "
            "history (':memory:') lives inside one process; give --history PATH"
        )
    return None


#: Followed rows as entries (topics read once per distinct string: a memo, shareable).
_ROWS = RowReader()


def entry_of(row: Row, seq: int) -> Entry:
    """The entry of a stored row, numbered ``seq`` on this process: its update decoded
    only when a subscriber here receives it (``sqlite_rows``, issue 42)."""
    return _ROWS.entry(row, seq)


@dataclass(slots=True)
class _Own:
    """A row this process stored: its update and encoded event (never decoded again), and
    the publisher waiting for it (on the last row of a publish)."""

    update: Update
    chunk: bytes
    done: asyncio.Future[Entry] | None
    since: float


class SharedSqliteTransport(SqliteTransport):
    """``SqliteTransport``'s table and reads, written by several processes at once: each
    delivers every process's rows, in row order, from its follower."""

    def __init__(
        self, path: str, history_size: int = 100_000, events_history_size: int = 10_000
    ) -> None:
        refused = memory_refused(path)
        if refused is not None:
            raise ValueError(refused)
        super().__init__(path, history_size, events_history_size)
        self.shown = f"the shared SQLite history {path}"
        self._path = path
        for db in (self._db, self._reader):
            db.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
        self._db.execute(_COUNTS)
        self._own: dict[int, _Own] = {}  # rows this process stored, not yet delivered
        self._delivered = 0  # the newest row delivered (the loop's cursor)
        self._seq = 0  # entries delivered on this process are numbered from start_seq + 1
        self._follower: Follower | None = None
        self._locking_since: float | None = None  # the pending group waits for the lock
        self._tries = 0  # times it found the lock taken
        self._closing = False
        self._wakeups: Wakeups | None = None
        self.lost = 0  # rows removed before this process could deliver them
        self._at_start()

    def _at_start(self) -> None:
        """Read where the shared history stands (and count its rows again, exactly, under
        the write lock: a file written by one process before has no counts)."""
        db = self._db
        try:
            db.execute("BEGIN IMMEDIATE")
            counts = dict(db.execute("SELECT event, count(*) FROM updates GROUP BY event"))
            newest = db.execute("SELECT max(seq) FROM updates").fetchone()[0] or 0
            row = db.execute("SELECT head FROM history_counts").fetchone()
            head = max(newest, row[0] if row else 0)
            db.execute(
                "INSERT OR REPLACE INTO history_counts (one, head, rows0, rows1)"
                " VALUES (0, ?, ?, ?)",
                (head, counts.get(0, 0), counts.get(1, 0)),
            )
            db.execute("COMMIT")
        except sqlite3.Error as exc:
            if db.in_transaction:
                db.execute("ROLLBACK")
            raise TransportUnavailable(f"{self.shown} cannot be read: {exc}") from exc
        last = db.execute(
            "SELECT id FROM updates WHERE seq <= ? ORDER BY seq DESC LIMIT 1", (head,)
        ).fetchone()
        self.last_id_at_start = last[0] if last else EARLIEST
        self.start_position = head or None
        self.start_seq = self._seq = self._delivered = self._head = head

    @property
    def head(self) -> int:
        """The newest row this process has delivered (0 when none). O(1)."""
        return self._delivered

    async def start(
        self, loop: asyncio.AbstractEventLoop, deliver: Deliver, backlog: Backlog = no_backlog
    ) -> None:
        self._at_start()  # rows stored since this transport was made belong to the history
        self._db.execute("PRAGMA busy_timeout=0")  # the loop never sleeps in SQLite (_flush)
        await super().start(loop, deliver, backlog)
        self._wakeups = Wakeups(wake_folder(self._path))
        self._follower = Follower(
            self._path, self._delivered, loop, self._hand_out, backlog, self._wakeups
        )
        self._follower.start()

    def presence(
        self,
        publish: Callable[[Sequence[Update]], None],
        make_update: Callable[[dict[str, Any]], Update],
        ttl: float,
    ) -> SqlitePresence:
        """Subscriptions of every worker, in the shared file beside the history."""
        return SqlitePresence(self._path, publish, make_update, ttl)

    # -- appends (on the event loop) ----------------------------------------------------

    def _flush(self) -> None:
        """Commit what waits once this process holds SQLite's write lock. The lock is
        asked for without waiting (a writer holds it ~0.1 ms; SQLite's own busy handler
        would put the loop to sleep for 1 ms and more): taken, it is tried again on the next
        turns of the loop, then every millisecond, while appends join the group, for
        ``BUSY_TIMEOUT_MS`` at most; then the group gets a 503 naming the lock."""
        if not self._pending or self._closing:
            return
        try:
            self._db.execute("BEGIN IMMEDIATE")
        except sqlite3.Error as exc:
            if self._retry_lock(exc):
                return
            group, self._pending = self._pending, []
            self._locking_since, self._tries = None, 0
            self._finish(self._failed(group, exc))
            return
        self._locking_since, self._tries = None, 0
        group, self._pending = self._pending, []
        self._finish(self._commit(group))

    def _retry_lock(self, exc: sqlite3.Error) -> bool:
        """Whether ``exc`` says another writer holds the lock and there is time to wait."""
        busy = getattr(exc, "sqlite_errorcode", None) == sqlite3.SQLITE_BUSY
        if not (busy or "locked" in str(exc)):
            return False
        now = time.monotonic()
        if self._locking_since is None:
            self._locking_since = now
        if now - self._locking_since >= BUSY_TIMEOUT_MS / 1000:
            return False
        assert self._loop is not None
        self._tries += 1
        if self._tries <= 3:
            self._loop.call_soon(self._flush)
        else:
            self._loop.call_later(0.001, self._flush)
        return True

    def _failed(self, group: list[_Append], exc: BaseException) -> _Results:
        """Every publisher of ``group`` told why it was not stored."""
        reason = str(exc)
        if isinstance(exc, sqlite3.OperationalError) and "locked" in reason:
            reason = (
                f"another worker held the write lock of {self._path} for more than "
                f"{BUSY_TIMEOUT_MS / 1000:g} s ({reason})"
            )
        count = sum(len(job.updates) for job in group)
        log.error("shared sqlite transport: could not store %d updates: %s", count, reason)
        failure = TransportUnavailable(f"the history could not store the update: {reason}")
        return [(job.done, failure) for job in group]

    def _commit(self, group: list[_Append]) -> _Results:
        """Store ``group`` in the transaction ``_flush`` began (it holds the write lock);
        its rows are delivered as the follower reads them back, at once."""
        db = self._db
        try:
            first, rows0, rows1 = db.execute(
                "SELECT head, rows0, rows1 FROM history_counts"
            ).fetchone()
            seq = first
            rows = {0: rows0, 1: rows1}
            values = []
            for job in group:
                kind = int(job.events)
                for update in job.updates:
                    seq += 1
                    values.append(_row(seq, update, job.events))
                    rows[kind] += 1
            db.executemany(_INSERT, values)
            for kind, keep in self._keep.items():
                over = rows[kind] - keep
                if over > 0 and over >= min(_TRIM_EVERY, keep // 4):  # trimmed in steps
                    rows[kind] -= db.execute(
                        "DELETE FROM updates WHERE seq IN (SELECT seq FROM updates"
                        " WHERE event = ? ORDER BY seq LIMIT ?)",
                        (kind, over),
                    ).rowcount
            db.execute(
                "UPDATE history_counts SET head = ?, rows0 = ?, rows1 = ?", (seq, rows[0], rows[1])
            )
            db.execute("COMMIT")
        except (sqlite3.Error, ValueError, OverflowError) as exc:
            if db.in_transaction:
                db.execute("ROLLBACK")
            return self._failed(group, exc)
        self.commits += 1
        now = time.monotonic()
        seq = first
        for job in group:
            last = seq + len(job.updates)
            for update, chunk in zip(job.updates, job.chunks, strict=True):
                seq += 1
                self._own[seq] = _Own(update, chunk, job.done if seq == last else None, now)
        follower = self._follower
        assert self._wakeups is not None and follower is not None, "append before start"
        self._wakeups.wake_all()
        if follower.cursor == first:  # nothing between: deliver them without reading back
            follower.cursor = seq
            self._hand_out([(position,) for position in range(first + 1, seq + 1)])
        else:
            follower.follow()  # the rows before them first, then these, in order
        return []

    # -- delivery (on the event loop) ---------------------------------------------------

    def _hand_out(self, rows: list[Row]) -> None:
        """Deliver rows the follower read, in order, resolving this process's publishers
        as their rows pass; a row removed before it was read is reported lost. Rows this
        process stored may come as their position alone (``_commit``)."""
        assert self._deliver is not None
        run: list[Entry] = []
        for row in rows:
            position = row[0]
            if position <= self._delivered:
                continue  # read twice (never expected): delivered once
            if position != self._delivered + 1:
                self._lost(self._delivered + 1, position - 1)
            self._delivered = position
            own = self._own.pop(position, None)
            if own is not None:
                entry = Entry(self._seq + 1, own.update, own.chunk, position=position)
            else:
                try:
                    entry = entry_of(row, self._seq + 1)
                except (ValueError, TypeError) as exc:  # not a row a hub wrote
                    log.warning("shared sqlite transport: row %d skipped: %s", position, exc)
                    continue
            self._seq += 1
            run.append(entry)
            if own is not None and own.done is not None:
                self._deliver(run, own.done)
                run = []
        if run:
            self._deliver(run, None)

    def _lost(self, first: int, last: int) -> None:
        """Rows ``first..last`` were trimmed before this process read them: say so, and fail
        its publishers waiting for any of them."""
        self.lost += last - first + 1
        log.warning(
            "shared sqlite transport: rows %d..%d were removed from the history before this "
            "worker delivered them (its fan-out fell behind by more than the history holds)",
            first,
            last,
        )
        for position in [p for p in self._own if p <= last]:
            own = self._own.pop(position)
            if own.done is not None and not own.done.done():
                own.done.set_exception(
                    TransportUnavailable(
                        f"the update was stored as row {position} but removed from the "
                        "history before this worker could deliver it"
                    )
                )

    # -- health -------------------------------------------------------------------------

    def problem(self) -> str | None:
        """Why this process cannot deliver what it stores (None: it can)."""
        follower = self._follower
        if follower is None or follower.stopped:
            return None
        if follower.failure is not None:
            return follower.failure
        if self._own:
            oldest = next(iter(self._own.values()))
            waited = time.monotonic() - oldest.since
            if waited > STUCK_AFTER:
                return f"{len(self._own)} stored updates wait {waited:.0f} s for this worker"
        return None

    # -- the end ------------------------------------------------------------------------

    async def close(self) -> None:
        """Store what was accepted, wait (a little) for this process's rows to come back,
        then stop following and fail whoever still waits."""
        deadline = time.monotonic() + _CLOSE_WAIT
        while self._pending and time.monotonic() < deadline:
            self._flush()  # (waiting for the write lock, perhaps)
            await asyncio.sleep(0.001)
        self._closing = True
        unstored, self._pending = self._pending, []
        if unstored:
            self._finish(self._failed(unstored, TransportUnavailable("the hub stopped first")))
        while any(o.done is not None for o in self._own.values()):
            if time.monotonic() > deadline or self._follower is None:
                break
            await asyncio.sleep(0.01)
        if self._follower is not None:
            self._follower.stop()
        if self._wakeups is not None:
            self._wakeups.close()
        failure = TransportUnavailable("the hub stopped before delivering it; it is stored")
        for own in self._own.values():
            if own.done is not None and not own.done.done():
                own.done.set_exception(failure)
        self._own.clear()
        await asyncio.to_thread(self.close_now)

    def stats(self) -> dict[str, int]:
        """Counters for metrics and tests."""
        follower = self._follower
        return {
            "delivered": self._delivered,
            "lost": self.lost,
            "reads": follower.reads if follower is not None else 0,
        }
