"""Who is subscribed, across the workers of one machine sharing a SQLite history file.

Each worker records its active subscriptions as rows of the file's ``presence`` table under
its name (its process mark, ``process_mark.py``, and an instance suffix), registered in
``presence_workers``; the subscriptions API lists the rows of every live worker. A Redis node
can only guess that a silent peer died; workers on one machine know: a worker whose process
ended (SIGKILL, the OOM killer; a reused pid has another start time) is gone, and a paused
one (SIGSTOP, a long GC pause) is not, however long it stays silent. Every ``ttl / 3``
seconds each worker looks for gone ones; the first to claim one (its claim is a write
transaction, so one wins) publishes the ``active: false`` events of its subscriptions, then
removes its rows. A claimer that dies before removing them leaves the claim to the next
worker: the events are then published twice, never lost. A worker that finds it was removed
anyway (a file edited by hand) writes its subscriptions back and announces them again.

Rows per worker are the subscriptions it holds (its connections times ``max_selectors`` at
most): changes not yet written are kept by subscription, an add undone before it was written
costs nothing, so a file that stays locked costs memory bounded the same way. Records are
input too: a row no hub wrote is skipped with a warning. Every query runs on one thread of
the presence's own, with its own connection: the event loop never waits for the file's lock.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import logging
import sqlite3
import uuid
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Literal, TypeVar

from skipfilter.hub.transports import process_mark
from skipfilter.hub.transports.presence_records import SkippedRecords
from skipfilter.hub.update import Update

log = logging.getLogger("skipfilter.hub")

_SCHEMA = """
CREATE TABLE IF NOT EXISTS presence_workers (
    worker TEXT PRIMARY KEY,
    reaper TEXT
);
CREATE TABLE IF NOT EXISTS presence (
    pos    INTEGER PRIMARY KEY,
    worker TEXT NOT NULL,
    field  TEXT NOT NULL,
    doc    TEXT NOT NULL,
    UNIQUE (field, worker)
);
CREATE INDEX IF NOT EXISTS presence_worker ON presence (worker);
"""
_UPSERT = (
    "INSERT INTO presence (worker, field, doc) VALUES (?, ?, ?)"
    " ON CONFLICT (field, worker) DO UPDATE SET doc = excluded.doc"
)
#: Rows of the workers named in a JSON array (the live ones). A page walks the rows in
#: recorded order from its cursor (``+``: not through the worker index, which would read
#: every row after the cursor and sort them, O(rows) a page instead of O(page)).
_LIVE = "+worker IN (SELECT value FROM json_each(?))"
#: Seconds a write waits for the file's lock (held by another worker's commit) before failing.
BUSY_TIMEOUT = 5.0
#: Seconds before changes that could not be written are tried again.
RETRY = 0.5
#: Changes written per transaction: the file's write lock, which every worker's publishes
#: wait for, is held about a millisecond at a time (a burst of 10,000 subscriptions in one
#: transaction held it for 15-50 ms; ``benchmarks/hub/presence_local.py``).
CHUNK = 128
#: Subscription events of a gone worker made per turn of the event loop.
EVENTS_PER_TURN = 256
#: Rows of a gone (or leaving) worker deleted per transaction.
_DELETE_CHUNK = 1024

#: The largest row number SQLite holds (a cursor past it has nothing after it).
_LAST = 2**63 - 1

_T = TypeVar("_T")
#: This worker's registration, as a write finds it.
_State = Literal["ours", "claimed", "missing"]


class SqlitePresence:
    """This worker's subscriptions, and every live worker's, in the SQLite file ``path``.

    ``publish(updates)`` stores subscription events (the hub's ``publish_nowait``);
    ``make_update(doc)`` turns a recorded subscription document into its event (``active``
    as the document says; ValueError for one no hub wrote). Call it from one event loop.
    """

    def __init__(
        self,
        path: str,
        publish: Callable[[Sequence[Update]], None],
        make_update: Callable[[dict[str, Any]], Update],
        ttl: float = 15.0,
    ) -> None:
        #: This worker's name: its process's mark, and an instance (a process may hold two).
        self.node = f"{process_mark.current()}#{uuid.uuid4().hex[:12]}"
        self._path = path
        self._publish = publish
        self._make_update = make_update
        self._ttl = ttl
        self._records: dict[str, str] = {}  # field -> doc: what this worker holds
        self._pending: dict[str, str | None] = {}  # field -> doc to write, None to delete
        self._stored: set[str] = set()  # fields whose row is written
        self._flying: dict[str, str | None] = {}  # the changes being written now
        self._writing = asyncio.Lock()  # one write in flight: they land in order
        self._wake = asyncio.Event()
        self._tasks: list[asyncio.Task[None]] = []
        self._thread = ThreadPoolExecutor(1, thread_name_prefix="skipfilter-presence")
        self._db: sqlite3.Connection | None = None  # the thread's
        self._announced = False  # registered once: a later registration re-announces
        self._skipped = SkippedRecords("worker")
        self.reaped = 0
        self.reannounced = 0

    async def start(self) -> None:
        """Register this worker (or leave it to the next beat while the file is locked)."""
        try:
            await self._flush(check=True)
        except sqlite3.Error as exc:
            log.warning("presence: first registration failed (%s); retrying", exc)
        loop = asyncio.get_running_loop()
        self._tasks = [
            loop.create_task(self._write_forever(), name="skipfilter-presence-write"),
            loop.create_task(self._beat_forever(), name="skipfilter-presence-beat"),
        ]

    @property
    def pending(self) -> int:
        """Changes not yet written (bounded by the subscriptions held and written)."""
        return len(self._pending)

    # -- this worker's subscriptions ----------------------------------------------------

    def add(self, field: str, doc: dict[str, Any]) -> None:
        """Record an active subscription under ``field`` (its id), written in the background."""
        recorded = json.dumps(doc)
        self._records[field] = recorded
        self._pending[field] = recorded
        self._wake.set()

    def remove(self, field: str) -> None:
        """Forget a subscription that ended (an add not yet written is simply dropped)."""
        self._records.pop(field, None)
        self._pending.pop(field, None)
        if field in self._stored or field in self._flying:
            self._pending[field] = None
        self._wake.set()

    async def _write_forever(self) -> None:
        while True:
            await self._wake.wait()
            self._wake.clear()
            try:
                await self._flush()
            except sqlite3.Error as exc:
                log.error("presence: %d subscription changes not recorded: %s", self.pending, exc)
                await asyncio.sleep(RETRY)
                self._wake.set()

    async def _flush(self, check: bool = False) -> None:
        """Write the pending changes (with ``check``, even none: to see whether this worker
        is still registered). Raises sqlite3.Error, the changes kept for the next try."""
        async with self._writing:
            ops = {f: self._pending.pop(f) for f in list(itertools.islice(self._pending, CHUNK))}
            if not ops and not check:
                return
            self._flying = ops
            try:
                state = await self._call(self._apply, ops)
                if state == "missing":  # first start, or removed as if gone: write it all
                    snapshot = dict(self._records)
                    self._flying = {field: doc for field, doc in snapshot.items()}
                    await self._call(self._rewrite, snapshot)
            except BaseException:
                ops.update(self._pending)  # newer changes win
                self._pending = ops
                raise
            finally:
                self._flying = {}
            if state == "claimed":  # a reaper is ending it: written back once it is done
                ops.update(self._pending)
                self._pending = ops
                return
            if state == "missing":
                self._stored = set(snapshot)
                self._reannounce()
                return
            for field, doc in ops.items():
                if doc is None:
                    self._stored.discard(field)
                else:
                    self._stored.add(field)
            if self._pending:
                self._wake.set()

    async def _written(self) -> None:
        """Write every change made so far (a read by this worker then sees them)."""
        for _ in range(len(self._pending) // CHUNK + 1):
            await self._flush()
            if not self._pending:
                return

    def _reannounce(self) -> None:
        if not self._announced:
            self._announced = True
            return
        docs = [json.loads(doc) for doc in self._records.values()]
        announced = self._skipped.events(self.node, self._make_update, docs)
        if announced:
            self._publish(announced)
        self.reannounced += len(docs)
        log.warning(
            "presence: this worker had been taken for gone; re-announced its %d subscriptions",
            len(docs),
        )

    # -- every worker's subscriptions ---------------------------------------------------

    async def page(
        self, cursor: tuple[str, int] | None, count: int
    ) -> tuple[list[str], tuple[str, int] | None]:
        """Up to ``count`` recorded subscriptions (raw JSON) of live workers, in the order
        they were recorded, from ``cursor`` (None: the start), and the cursor of the rest
        (None: done). Runtime: O(count + rows of gone workers not yet reaped)."""
        await self._written()
        after = min(cursor[1], _LAST) if cursor is not None else 0  # a client's cursor
        rows = await self._call(self._page, after, count)
        rest = ("all", rows[-1][0]) if len(rows) >= count > 0 else None
        return [doc for _, doc in rows], rest

    async def find(self, field: str) -> str | None:
        """The subscription recorded under ``field`` (raw JSON) by a live worker."""
        await self._written()
        return await self._call(self._find, field)

    # -- liveness -----------------------------------------------------------------------

    async def _beat_forever(self) -> None:
        period = max(0.1, self._ttl / 3)
        while True:
            await asyncio.sleep(period)
            try:
                await self._flush(check=True)
                await self._reap()
            except sqlite3.Error as exc:
                log.warning("presence: a beat failed: %s", exc)
            except Exception:  # whatever a stray record holds, the beat goes on
                log.exception("presence: a beat failed")

    async def _reap(self) -> None:
        """Announce the end of the subscriptions of gone workers this worker claimed."""
        for worker in await self._call(self._claim):
            docs = await self._call(self._rows_of, worker)
            ended = 0
            for start in range(0, len(docs), EVENTS_PER_TURN):  # the loop serves in between
                recorded = []
                for field, raw in docs[start : start + EVENTS_PER_TURN]:
                    doc = self._document(worker, field, raw)
                    if doc is not None:
                        recorded.append({**doc, "active": False})
                events = self._skipped.events(worker, self._make_update, recorded)
                if events:
                    self._publish(events)
                ended += len(events)
                await asyncio.sleep(0)
            await self._call(self._forget, worker)
            self.reaped += ended
            log.warning(
                "presence: worker %r is gone; ended its %d subscriptions", worker[:80], ended
            )

    def _gone(self, worker: str) -> bool:
        """Whether ``worker`` (a name from the file) has certainly ended; a name no hub
        wrote is taken for gone (with a warning), so its rows are reaped."""
        if worker == self.node:
            return False
        try:
            mark = process_mark.ProcessMark.parse(worker.partition("#")[0])
        except ValueError as exc:
            self._skipped.warn(worker, "", str(exc))
            return True
        return process_mark.gone(mark)

    def _document(self, worker: str, field: str, raw: str) -> dict[str, Any] | None:
        try:
            doc = json.loads(raw)
        except ValueError:
            doc = None
        if not isinstance(doc, dict):
            self._skipped.warn(worker, field, f"not a subscription document: {raw[:80]!r}")
            return None
        return doc

    async def stop(self) -> None:
        """Leave: write what is pending, then remove this worker's rows."""
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        try:
            await self._written()
            await self._call(self._leave)
        except sqlite3.Error as exc:
            log.warning("presence: could not remove this worker's records: %s", exc)
        await self._call(self._close)
        self._thread.shutdown(wait=True)

    # -- on the presence's thread -------------------------------------------------------

    async def _call(self, fn: Callable[..., _T], *args: Any) -> _T:
        return await asyncio.get_running_loop().run_in_executor(self._thread, fn, *args)

    def _connection(self) -> sqlite3.Connection:
        if self._db is None:
            db = sqlite3.connect(self._path, timeout=BUSY_TIMEOUT, isolation_level=None)
            try:
                db.execute("PRAGMA journal_mode=WAL")
                db.execute("PRAGMA synchronous=NORMAL")
                # the history's writer checkpoints (every subscription change is an event
                # it appends too): this thread never waits for the disk
                db.execute("PRAGMA wal_autocheckpoint=0")
                db.executescript(_SCHEMA)
            except sqlite3.Error:
                db.close()
                raise
            self._db = db
        return self._db

    def _write(self, fn: Callable[[sqlite3.Connection], _T]) -> _T:
        """``fn(db)`` in a write transaction (taken at once: no upgrade to deadlock on)."""
        db = self._connection()
        db.execute("BEGIN IMMEDIATE")
        try:
            result = fn(db)
            db.execute("COMMIT")
        except BaseException:
            if db.in_transaction:
                db.execute("ROLLBACK")
            raise
        return result

    def _state(self, db: sqlite3.Connection) -> _State:
        row = db.execute(
            "SELECT reaper FROM presence_workers WHERE worker = ?", (self.node,)
        ).fetchone()
        return "missing" if row is None else "ours" if row[0] is None else "claimed"

    def _apply(self, ops: dict[str, str | None]) -> _State:
        """Write ``ops`` if this worker is registered and unclaimed; say which it is."""
        if not ops:  # a check: reading needs no lock
            return self._state(self._connection())

        def apply(db: sqlite3.Connection) -> _State:
            state = self._state(db)
            if state == "ours":
                db.executemany(
                    _UPSERT, [(self.node, f, doc) for f, doc in ops.items() if doc is not None]
                )
                db.executemany(
                    "DELETE FROM presence WHERE field = ? AND worker = ?",
                    [(f, self.node) for f, doc in ops.items() if doc is None],
                )
            return state

        return self._write(apply)

    def _rewrite(self, records: dict[str, str]) -> None:
        """Register this worker with exactly ``records``."""

        def rewrite(db: sqlite3.Connection) -> None:
            db.execute("DELETE FROM presence WHERE worker = ?", (self.node,))
            db.execute("INSERT OR REPLACE INTO presence_workers VALUES (?, NULL)", (self.node,))
            db.executemany(_UPSERT, [(self.node, f, doc) for f, doc in records.items()])

        self._write(rewrite)

    def _live(self, db: sqlite3.Connection) -> str:
        """The unclaimed workers not gone, as a JSON array."""
        workers = db.execute("SELECT worker FROM presence_workers WHERE reaper IS NULL")
        return json.dumps([w for (w,) in workers.fetchall() if not self._gone(w)])

    def _page(self, after: int, count: int) -> list[tuple[int, str]]:
        db = self._connection()
        db.execute("BEGIN")  # one snapshot for the workers and their rows
        try:
            return db.execute(
                f"SELECT pos, doc FROM presence WHERE pos > ? AND {_LIVE} ORDER BY pos LIMIT ?",
                (after, self._live(db), count),
            ).fetchall()
        finally:
            db.execute("COMMIT")

    def _find(self, field: str) -> str | None:
        db = self._connection()
        row = db.execute(
            f"SELECT doc FROM presence WHERE field = ? AND {_LIVE} LIMIT 1",
            (field, self._live(db)),
        ).fetchone()
        return str(row[0]) if row is not None else None

    def _claim(self) -> list[str]:
        """Claim the gone workers nobody live is reaping (a short write: their rows are
        read after it, and removed a chunk at a time)."""
        db = self._connection()
        workers = db.execute("SELECT worker, reaper FROM presence_workers").fetchall()
        if not any(self._claimable(w, r) for w, r in workers):
            return []  # the usual case: read, no lock taken

        def claim(db: sqlite3.Connection) -> list[str]:
            listed = db.execute("SELECT worker, reaper FROM presence_workers").fetchall()
            claimed = [w for w, r in listed if self._claimable(w, r)]
            db.executemany(
                "UPDATE presence_workers SET reaper = ? WHERE worker = ?",
                [(self.node, w) for w in claimed],
            )
            return claimed

        return self._write(claim)

    def _claimable(self, worker: str, reaper: str | None) -> bool:
        if not self._gone(worker):
            return False
        return reaper is None or reaper == self.node or self._gone(reaper)

    def _rows_of(self, worker: str) -> list[tuple[str, str]]:
        """What a claimed worker recorded (nobody writes it any more: no lock needed)."""
        db = self._connection()
        query = "SELECT field, doc FROM presence WHERE worker = ? ORDER BY pos"
        return db.execute(query, (worker,)).fetchall()

    def _forget(self, worker: str) -> None:
        """Remove a reaped worker and its rows, a chunk per transaction (unless another
        reaper took it over meanwhile)."""
        self._remove(worker, "SELECT reaper = ? FROM presence_workers WHERE worker = ?")

    def _leave(self) -> None:
        self._remove(self.node, "SELECT ? IS NOT NULL FROM presence_workers WHERE worker = ?")

    def _remove(self, worker: str, still_ours: str) -> None:
        """Delete ``worker``'s rows, then the worker, while ``still_ours`` says so."""

        def chunk(db: sqlite3.Connection) -> bool:
            row = db.execute(still_ours, (self.node, worker)).fetchone()
            if row is None or not row[0]:
                return True
            deleted = db.execute(
                "DELETE FROM presence WHERE pos IN"
                " (SELECT pos FROM presence WHERE worker = ? LIMIT ?)",
                (worker, _DELETE_CHUNK),
            ).rowcount
            if deleted < _DELETE_CHUNK:
                db.execute("DELETE FROM presence_workers WHERE worker = ?", (worker,))
                return True
            return False

        while not self._write(chunk):
            pass

    def _close(self) -> None:
        if self._db is not None:
            self._db.close()
            self._db = None
