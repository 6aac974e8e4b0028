"""The embedded default transport: SQLite, with group commit on the event loop.

Publishes made in one turn of the event loop share one transaction, committed at the end
of that turn; each is acknowledged once its transaction has committed and it has been
delivered (WAL, ``synchronous=NORMAL``: a committed update survives a crash of this
process). A commit appends to the write-ahead log without waiting for the disk (no fsync),
so it runs on the loop: handing every publish to a thread and back cost more than the
commit itself (a wake-up and a GIL hand-over each way; 131 against 102 µs of hub CPU per
publish, ``benchmarks/hub/hub_publish.py``). The one wait for the disk left on the loop is
SQLite's own checkpoint, every 256 pages of log (``_CHECKPOINT_PAGES``), which copies the
log into the database and syncs it (a checkpoint run from another thread meets a steady
stream of commits and never lets the log restart: it grew without bound). Replay reads and
id lookups run on the transport's thread, with a connection of their own, and come back as
futures. An in-memory history has one connection, read on the loop. One process owns the
file: the total order is the order of its commits, an update's position its row's number.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import queue
import sqlite3
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from json.encoder import encode_basestring_ascii
from typing import Any

from skipfilter.hub.transports.base import (
    Backlog,
    Deliver,
    Keep,
    Position,
    Transport,
    TransportUnavailable,
    no_backlog,
)
from skipfilter.hub.update import EARLIEST, Entry, Update, http_chunk

log = logging.getLogger("skipfilter.hub")

_SCHEMA = """
CREATE TABLE IF NOT EXISTS updates (
    seq     INTEGER PRIMARY KEY,
    id      TEXT NOT NULL,
    topics  TEXT NOT NULL,
    data    TEXT NOT NULL,
    private INTEGER NOT NULL,
    type    TEXT,
    retry   INTEGER,
    event   INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX IF NOT EXISTS updates_id ON updates (id);
"""
#: Subscription events are rows with ``event = 1``, trimmed to a budget of their own.
_EVENT_INDEX = "CREATE INDEX IF NOT EXISTS updates_event ON updates (event, seq)"
_COLUMNS = "seq, id, topics, data, private, type, retry"
_INSERT = f"INSERT INTO updates ({_COLUMNS}, event) VALUES (?, ?, ?, ?, ?, ?, ?, ?)"
_TRIM_EVERY = 256
#: ``retry`` is an unsigned 64-bit value; those past SQLite's signed range wrap around.
_INT64, _UINT64 = 2**63, 2**64


@dataclass(slots=True)
class _Append:
    updates: Sequence[Update]
    chunks: Sequence[bytes]
    done: asyncio.Future[Entry] | None
    events: bool


@dataclass(slots=True)
class _Call:
    fn: Callable[[], Any]
    future: asyncio.Future[Any]


#: Publishers' futures with their committed entries, or the failure to store them.
_Results = list[tuple["asyncio.Future[Entry] | None", "list[Entry] | BaseException"]]


#: Pages of log after which a commit checkpoints (SQLite's default is 1,000). A checkpoint
#: runs on the loop and waits for the disk, so it is what the slowest acknowledgements
#: wait for: at 7,400 publishes/s, ack p99 5.4-6.4 ms with 256 pages against 10.1-10.4 ms
#: with 1,000 (13-19 ms with 4,000 at 4,600/s), and no fewer publishes/s.
_CHECKPOINT_PAGES = 256


class SqliteTransport(Transport):
    """Updates ``1..head`` in one SQLite table: the newest ``history_size`` updates, and
    apart from them the newest ``events_history_size`` subscription events.

    Call it from the event loop given to ``start``: appends are committed there, reads and
    checkpoints happen on the transport's thread (on the loop for an in-memory history).
    """

    def __init__(
        self, path: str, history_size: int = 100_000, events_history_size: int = 10_000
    ) -> None:
        self.shown = f"the SQLite history {path}"
        self._db = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=NORMAL")
        self._db.execute(f"PRAGMA wal_autocheckpoint={_CHECKPOINT_PAGES}")
        self._db.executescript(_SCHEMA)
        columns = {row[1] for row in self._db.execute("PRAGMA table_info(updates)")}
        if "event" not in columns:  # a history written before events had their own budget
            self._db.execute("ALTER TABLE updates ADD COLUMN event INTEGER NOT NULL DEFAULT 0")
        self._db.execute(_EVENT_INDEX)
        #: A file is read and checkpointed by the thread, through a connection of its own.
        self._memory = path in ("", ":memory:") or "mode=memory" in path
        self._reader = self._db
        if not self._memory:
            self._reader = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
        #: Rows kept of each kind (updates, events) and how many there are.
        self._keep = {0: history_size, 1: events_history_size}
        self._rows = {0: 0, 1: 0}
        self._rows.update(self._db.execute("SELECT event, count(*) FROM updates GROUP BY event"))
        row = self._db.execute("SELECT max(seq) FROM updates").fetchone()
        self._head: int = row[0] or 0
        last = self._db.execute("SELECT id FROM updates WHERE seq = ?", (self._head,)).fetchone()
        self.last_id_at_start = last[0] if last else EARLIEST
        self.start_position = self._head or None
        self.start_seq = self._head
        self._jobs: queue.SimpleQueue[_Call | None] = queue.SimpleQueue()
        self._pending: list[_Append] = []  # appended in this turn of the loop
        self._loop: asyncio.AbstractEventLoop | None = None
        self._deliver: Deliver | None = None
        self._thread = threading.Thread(target=self._run, name="skipfilter-sqlite", daemon=True)
        self.commits = 0  # transactions committed (each may hold several publishes)

    @property
    def head(self) -> int:
        """Sequence number of the newest committed update (0 when none). O(1)."""
        return self._head

    async def start(
        self, loop: asyncio.AbstractEventLoop, deliver: Deliver, backlog: Backlog = no_backlog
    ) -> None:
        self.backlog = backlog
        self._loop = loop
        self._deliver = deliver
        self._thread.start()

    # -- from the event loop ------------------------------------------------------------

    def append(
        self,
        updates: Sequence[Update],
        chunks: Sequence[bytes],
        done: asyncio.Future[Entry] | None,
        events: bool = False,
    ) -> None:
        """Store ``updates`` in the next group commit (at the end of this turn of the event
        loop); once committed they are delivered, and ``done`` resolves when the last one
        has been."""
        if not self._pending:
            assert self._loop is not None
            self._loop.call_soon(self._flush)
        self._pending.append(_Append(updates, chunks, done, events))

    def _flush(self) -> None:
        """Commit what this turn appended, then deliver it."""
        if self._pending:
            group, self._pending = self._pending, []
            self._finish(self._commit(group))

    async def read(
        self,
        after: Position | None,
        before: Position | None,
        upto: Position | None,
        max_rows: int,
        max_bytes: int,
        keep: Keep | None = None,
    ) -> list[Entry]:
        low = after if after is not None else 0
        high = 2**63 - 1
        if before is not None:
            high = min(high, before - 1)
        if upto is not None:
            high = min(high, upto)
        if keep is not None:
            return await self._call(lambda: self._read_kept(low, high, max_rows, max_bytes, keep))  # type: ignore[no-any-return]
        return await self._call(lambda: self._read(low, high, max_rows, max_bytes))  # type: ignore[no-any-return]

    async def lookup(self, update_id: str) -> Entry | None:
        return await self._call(lambda: self._lookup(update_id))  # type: ignore[no-any-return]

    async def count(self) -> int:
        return await self._call(  # type: ignore[no-any-return]
            lambda: self._reader.execute("SELECT count(*) FROM updates").fetchone()[0]
        )

    async def _call(self, fn: Callable[[], Any]) -> Any:
        if self._memory:  # one connection, read where it is written
            try:
                return fn()
            except (sqlite3.Error, ValueError, OverflowError) as exc:
                raise TransportUnavailable(f"the history could not be read: {exc}") from exc
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._jobs.put(_Call(fn, future))
        return await future

    async def close(self) -> None:
        self._flush()
        await asyncio.to_thread(self.close_now)

    def close_now(self) -> None:
        """Finish queued work, then close the database (blocks until done)."""
        if self._thread.is_alive():
            self._jobs.put(None)
            self._thread.join()
        if self._reader is not self._db:
            self._reader.close()
        self._db.close()

    # -- on the event loop --------------------------------------------------------------

    def _commit(self, group: list[_Append]) -> _Results:
        rows = []
        seq = self._head
        added = {0: 0, 1: 0}
        for job in group:
            for update in job.updates:
                seq += 1
                rows.append(_row(seq, update, job.events))
                added[int(job.events)] += 1
        try:
            self._db.execute("BEGIN")
            self._db.executemany(_INSERT, rows)
            rows_after = {kind: self._rows[kind] + added[kind] for kind in added}
            for kind, keep in self._keep.items():
                over = rows_after[kind] - keep
                if over > 0 and over >= min(_TRIM_EVERY, keep // 4):  # trimmed in steps
                    rows_after[kind] -= self._db.execute(
                        "DELETE FROM updates WHERE seq IN (SELECT seq FROM updates"
                        " WHERE event = ? ORDER BY seq LIMIT ?)",
                        (kind, over),
                    ).rowcount
            self._db.execute("COMMIT")
        except (sqlite3.Error, ValueError, OverflowError) as exc:
            if self._db.in_transaction:
                self._db.execute("ROLLBACK")
            log.error("sqlite transport: could not store %d updates: %s", len(rows), exc)
            failure = TransportUnavailable(f"the history could not store the update: {exc}")
            return [(job.done, failure) for job in group]
        self.commits += 1
        self._rows = rows_after
        results: _Results = []
        seq = self._head
        for job in group:
            entries = []
            for update, chunk in zip(job.updates, job.chunks, strict=True):
                seq += 1
                entries.append(Entry(seq, update, chunk, position=seq))
            results.append((job.done, entries))
        self._head = seq
        return results

    def _finish(self, results: _Results) -> None:
        """Deliver what was committed, fail who could not be stored."""
        assert self._deliver is not None
        for done, result in results:
            if isinstance(result, BaseException):
                if done is None:
                    log.error("sqlite transport: hub updates not stored: %s", result)
                elif not done.done():
                    done.set_exception(result)
            else:
                self._deliver(result, done)

    # -- on the history thread ----------------------------------------------------------

    def _run(self) -> None:
        while True:
            job = self._jobs.get()
            if job is None:
                return
            self._answer(job)

    def _answer(self, call: _Call) -> None:
        try:
            result, error = call.fn(), None
        except (sqlite3.Error, ValueError, OverflowError) as exc:
            result, error = None, TransportUnavailable(f"the history could not be read: {exc}")
        assert self._loop is not None
        with contextlib.suppress(RuntimeError):
            self._loop.call_soon_threadsafe(_settle, call.future, result, error)

    def _read(self, after: int, upto: int, max_rows: int, max_bytes: int) -> list[Entry]:
        cursor = self._reader.execute(
            f"SELECT {_COLUMNS} FROM updates WHERE seq > ? AND seq <= ? ORDER BY seq LIMIT ?",
            (after, upto, max_rows),
        )
        entries: list[Entry] = []
        size = 0
        for row in cursor:
            entry = _entry(row)
            entries.append(entry)
            size += entry.size
            if size >= max_bytes:
                break
        cursor.close()
        return entries

    def _read_kept(
        self, after: int, upto: int, max_rows: int, max_bytes: int, keep: Keep
    ) -> list[Entry]:
        """Like ``_read``, loading the data (the large part) of kept rows only."""
        rows = self._reader.execute(
            "SELECT seq, id, topics, private, type, retry FROM updates "
            "WHERE seq > ? AND seq <= ? ORDER BY seq LIMIT ?",
            (after, upto, max_rows),
        ).fetchall()
        entries: list[Entry] = []
        size = 0
        for seq, id_, topics, private, type_, retry in rows:
            names = tuple(json.loads(topics))
            if not keep(names, bool(private)):
                entries.append(Entry(0, Update(id_, names, "", bool(private)), b"", position=seq))
                continue
            (data,) = self._reader.execute(
                "SELECT data FROM updates WHERE seq = ?", (seq,)
            ).fetchone()
            entry = _entry((seq, id_, topics, data, private, type_, retry))
            entries.append(entry)
            size += entry.size
            if size >= max_bytes:
                break
        return entries

    def _lookup(self, update_id: str) -> Entry | None:
        row = self._reader.execute(
            f"SELECT {_COLUMNS} FROM updates WHERE id = ? ORDER BY seq ASC LIMIT 1", (update_id,)
        ).fetchone()
        return _entry(row) if row is not None else None


def _row(seq: int, update: Update, event: bool) -> tuple[Any, ...]:
    retry = update.retry
    if retry is not None and retry >= _INT64:  # SQLite integers are signed 64-bit
        retry -= _UINT64
    return (
        seq,
        update.id,
        topics_json(update.topics),
        update.data,
        int(update.private),
        update.type,
        retry,
        int(event),
    )


def topics_json(topics: tuple[str, ...]) -> str:
    """``json.dumps(topics)``, the same text, each topic encoded by json's C string
    encoder without building an encoder per row (``dumps`` does, for a list)."""
    return "[" + ", ".join(map(encode_basestring_ascii, topics)) + "]"


def _entry(row: tuple[Any, ...]) -> Entry:
    seq, id_, topics, data, private, type_, retry = row
    if retry is not None and retry < 0:
        retry += _UINT64
    update = Update(id_, tuple(json.loads(topics)), data, bool(private), type_, retry)
    return Entry(0, update, http_chunk(update.encode()), position=seq)


def _settle(future: asyncio.Future[Any], result: Any, error: BaseException | None) -> None:
    if future.done():
        return
    if error is not None:
        future.set_exception(error)
    else:
        future.set_result(result)
