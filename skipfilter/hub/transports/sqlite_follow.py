"""A follower of a shared SQLite history: every row after a cursor, in row order, handed
to the event loop in batches.

It runs on a thread of its own with a connection of its own, reading ``seq > cursor ORDER
BY seq LIMIT n`` whenever a writer wakes it (``wakeups``), and otherwise every
``POLL`` seconds when ``PRAGMA data_version`` says another connection committed: a lost
wake-up only delays. While this process's fan-out is behind (``backlog``) it stops
reading, as the Redis tail does, and at most ``_IN_FLIGHT`` batches wait for the loop.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import sqlite3
import threading
from collections.abc import Callable
from typing import Any

from skipfilter.hub.transports.base import Backlog
from skipfilter.hub.transports.wakeups import Wakeups

log = logging.getLogger("skipfilter.hub")

#: Seconds between polls of the file when no wake-up comes.
POLL = 0.2
#: Most rows per read.
BATCH = 512
#: The follower stops reading while this many entries wait for this process's fan-out.
BACKLOG = 4096
#: Batches handed to the loop and not yet taken.
_IN_FLIGHT = 2

#: The columns a follower reads, in the order ``Row`` holds them.
COLUMNS = "seq, id, topics, data, private, type, retry"
#: One stored row: seq, id, topics (JSON), data, private, type, retry.
Row = tuple[Any, ...]


class Follower:
    """Reads the rows after ``cursor`` from ``path`` and calls ``hand(rows)`` on ``loop``
    with each batch, oldest first. Start it once; ``stop`` ends it."""

    def __init__(
        self,
        path: str,
        cursor: int,
        loop: asyncio.AbstractEventLoop,
        hand: Callable[[list[Row]], None],
        backlog: Backlog,
        wakeups: Wakeups,
    ) -> None:
        self.cursor = cursor  # the newest row read (the thread's)
        self._path = path
        self._loop = loop
        self._hand = hand
        self._backlog = backlog
        self._wakeups = wakeups
        self._slots = threading.Semaphore(_IN_FLIGHT)
        self._stopping = threading.Event()
        self._thread = threading.Thread(target=self._run, name="skipfilter-follow", daemon=True)
        self.failure: str | None = None  # why reading fails now (None: it does not)
        self.reads = 0

    def start(self) -> None:
        self._thread.start()

    def alive(self) -> bool:
        return self._thread.is_alive()

    def stop(self) -> None:
        """End the thread (blocks until it has)."""
        self._stopping.set()
        self._slots.release()  # a thread waiting for the loop goes on, and sees the stop
        self._wakeups.wake(self._wakeups.path)
        if self._thread.is_alive():
            self._thread.join()

    def _run(self) -> None:
        db = sqlite3.connect(self._path, isolation_level=None, check_same_thread=False)
        try:
            version = -1
            more = True  # read at once: rows may have come before this thread started
            while not self._stopping.is_set():
                if (
                    not more
                    and not self._wakeups.wait(POLL)
                    and db.execute("PRAGMA data_version").fetchone()[0] == version
                ):
                    continue  # not woken, and nobody committed since the last read
                version = db.execute("PRAGMA data_version").fetchone()[0]
                more = self._follow(db)
        except Exception:  # a bug must not stop delivery silently
            log.exception("sqlite follower: stopped after row %d", self.cursor)
            self.failure = f"the history follower stopped after row {self.cursor}"
        finally:
            db.close()

    def _follow(self, db: sqlite3.Connection) -> bool:
        """Read and hand over one batch; returns whether there may be more to read now."""
        while self._backlog() > BACKLOG and not self._stopping.is_set():
            self._stopping.wait(0.01)  # fan-out is behind: leave the rows in the file
        try:
            rows = db.execute(
                f"SELECT {COLUMNS} FROM updates WHERE seq > ? ORDER BY seq LIMIT ?",
                (self.cursor, BATCH),
            ).fetchall()
        except sqlite3.Error as exc:
            if self.failure is None:
                log.error("sqlite follower: cannot read the history: %s", exc)
            self.failure = f"the history cannot be read: {exc}"
            self._stopping.wait(POLL)
            return True
        self.failure = None
        self.reads += 1
        if not rows:
            return False
        self.cursor = rows[-1][0]
        self._slots.acquire()
        if self._stopping.is_set():
            return False
        with contextlib.suppress(RuntimeError):  # the loop closed: we are stopping
            self._loop.call_soon_threadsafe(self._take, rows)
        return len(rows) == BATCH

    def _take(self, rows: list[Row]) -> None:
        """On the loop: hand ``rows`` over, and free their slot."""
        self._slots.release()
        self._hand(rows)
