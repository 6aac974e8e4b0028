"""A follower of a shared SQLite history: every row after a cursor, in row order, handed
over in batches on the event loop.

It reads ``seq > cursor ORDER BY seq LIMIT n`` with a connection of its own, on the loop:
right after this process commits, when another process's writer wakes it (its wake-up
socket is one of the loop's readers, ``wakeups``), and every ``POLL`` seconds in case a
wake-up was lost (a lost one only delays). A read from the write-ahead log takes a few
microseconds and never waits for a writer; handing rows over from a thread instead cost a
wake-up and a GIL hand-over per batch (``benchmarks/hub/hub_publish.py``, ``sqlite w2``).
While this process's fan-out is behind (``backlog``) it stops reading, as the Redis tail
does, and tries again a little later: the rows wait in the file.
"""

from __future__ import annotations

import asyncio
import logging
import sqlite3
from collections.abc import Callable
from typing import Any

from skipfilter.hub.transports.base import Backlog
from skipfilter.hub.transports.wakeups import Wakeups

log = logging.getLogger("skipfilter.hub")

#: Seconds between reads when no wake-up comes.
POLL = 0.2
#: Most rows per read (then the loop runs something else before the next).
BATCH = 512
#: The follower stops reading while this many entries wait for this process's fan-out,
#: and looks again after ``_BEHIND_PAUSE`` seconds.
BACKLOG = 4096
_BEHIND_PAUSE = 0.01

#: The columns a follower reads, in the order ``Row`` holds them.
COLUMNS = "seq, id, topics, data, private, type, retry"
#: One stored row: seq, id, topics (JSON), data, private, type, retry.
Row = tuple[Any, ...]


class Follower:
    """Reads the rows after ``cursor`` from ``path`` and calls ``hand(rows)`` with each
    batch, oldest first. Event loop only: ``start`` on it, ``follow`` to read now."""

    def __init__(
        self,
        path: str,
        cursor: int,
        loop: asyncio.AbstractEventLoop,
        hand: Callable[[list[Row]], None],
        backlog: Backlog,
        wakeups: Wakeups,
    ) -> None:
        self.cursor = cursor  # the newest row read
        self._loop = loop
        self._hand = hand
        self._backlog = backlog
        self._wakeups = wakeups
        self._db = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
        self._poll_at: asyncio.TimerHandle | None = None  # the next poll
        self._retry_at: asyncio.TimerHandle | None = None  # the next look at the backlog
        self._soon = False  # a read is scheduled for the next turn of the loop
        self.stopped = False
        self.failure: str | None = None  # why reading fails now (None: it does not)
        self.reads = 0

    def start(self) -> None:
        self._loop.add_reader(self._wakeups.fileno(), self._woken)
        self._loop.call_soon(self._poll)  # after the hub has set up its ring

    def stop(self) -> None:
        """Stop reading and close the connection."""
        if self.stopped:
            return
        self.stopped = True
        self._loop.remove_reader(self._wakeups.fileno())
        for timer in (self._poll_at, self._retry_at):
            if timer is not None:
                timer.cancel()
        self._db.close()

    def _woken(self) -> None:
        self._wakeups.drain()
        self.follow()

    def _poll(self) -> None:
        self._poll_at = self._loop.call_later(POLL, self._poll)
        self.follow()

    def _retry(self) -> None:
        self._retry_at = None
        self.follow()

    def _again(self) -> None:
        self._soon = False
        self.follow()

    def follow(self) -> None:
        """Read what is new and hand it over, one batch now, the next in the next turn of
        the loop. O(rows read)."""
        if self.stopped:
            return
        if self._backlog() > BACKLOG:  # fan-out is behind: leave the rows in the file
            if self._retry_at is None:
                self._retry_at = self._loop.call_later(_BEHIND_PAUSE, self._retry)
            return
        try:
            rows = self._db.execute(
                f"SELECT {COLUMNS} FROM updates WHERE seq > ? ORDER BY seq LIMIT ?",
                (self.cursor, BATCH),
            ).fetchall()
        except sqlite3.Error as exc:  # the poll tries again
            if self.failure is None:
                log.error("sqlite follower: cannot read the history: %s", exc)
            self.failure = f"the history cannot be read: {exc}"
            return
        self.failure = None
        self.reads += 1
        if not rows:
            return
        self.cursor = rows[-1][0]
        if len(rows) == BATCH and not self._soon:
            self._soon = True
            self._loop.call_soon(self._again)
        self._hand(rows)
