"""Update history: a shared in-memory ring for live delivery, SQLite underneath for replay.

Every update gets the next sequence number. A publish appends once: the row is committed to
SQLite (so the publisher's 200 means "stored"), then the entry — with its recipients bitmap
and its pre-encoded SSE bytes — goes into a fixed ring. Subscribers keep their own cursor
(a sequence number) into the ring; one that falls more than the ring's capacity behind is
told so and disconnected, and resumes from SQLite with Last-Event-ID.
"""

from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass
from typing import Any

from skipfilter.hub.sse import format_event

#: The ``Last-Event-ID`` value meaning "everything the hub still has".
EARLIEST = "earliest"

_SCHEMA = """
CREATE TABLE IF NOT EXISTS updates (
    seq     INTEGER PRIMARY KEY,
    id      TEXT NOT NULL,
    topics  TEXT NOT NULL,
    data    TEXT NOT NULL,
    private INTEGER NOT NULL,
    type    TEXT,
    retry   INTEGER
);
CREATE INDEX IF NOT EXISTS updates_id ON updates (id);
"""


@dataclass(frozen=True, slots=True)
class Update:
    """One message as published: several topics, one payload, optional SSE fields."""

    id: str
    topics: tuple[str, ...]
    data: str = ""
    private: bool = False
    type: str | None = None
    retry: int | None = None

    def encode(self) -> bytes:
        """The SSE bytes every recipient gets."""
        return format_event(self.data, id=self.id, type=self.type, retry=self.retry)


@dataclass(frozen=True, slots=True)
class Entry:
    """A stored update: ``recipients`` is the bitmap computed at publish (None when read
    back from disk, where the reader matches it again)."""

    seq: int
    update: Update
    event: bytes
    recipients: Any = None


class History:
    """Ring of the last ``ring_size`` entries over a SQLite table of the last ``history_size``.

    Not thread-safe: the hub calls it from its event loop only, which is also what makes
    "append, then wake recipients" atomic with respect to new subscriptions.
    """

    def __init__(self, path: str, ring_size: int = 4096, history_size: int = 100_000) -> None:
        self._db = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=NORMAL")  # WAL: survives a crash of this process
        self._db.executescript(_SCHEMA)
        self._ring: list[Entry | None] = [None] * ring_size
        self._ring_ids: dict[str, int] = {}
        self._size = ring_size
        self._keep = history_size
        row = self._db.execute("SELECT max(seq) FROM updates").fetchone()
        self._head: int = row[0] or 0
        self._first = self._head + 1  # oldest sequence number held by the ring
        last = self._db.execute("SELECT id FROM updates WHERE seq = ?", (self._head,)).fetchone()
        self._last_id: str = last[0] if last else EARLIEST

    @property
    def head(self) -> int:
        """Sequence number of the newest update (0 when there is none). O(1)."""
        return self._head

    @property
    def last_id(self) -> str:
        """Id of the newest update, or ``earliest`` when history is empty. O(1)."""
        return self._last_id

    def append(self, update: Update, recipients: Any) -> Entry:
        """Store ``update`` durably, then put it in the ring; returns its entry.

        Runtime: one SQLite insert + commit (WAL), O(1) in memory.
        """
        seq = self._head + 1
        self._db.execute(
            "INSERT INTO updates (seq, id, topics, data, private, type, retry)"
            " VALUES (?, ?, ?, ?, ?, ?, ?)",
            (
                seq,
                update.id,
                json.dumps(update.topics),
                update.data,
                int(update.private),
                update.type,
                update.retry,
            ),
        )
        entry = Entry(seq, update, update.encode(), recipients)
        slot = seq % self._size
        old = self._ring[slot]
        if old is not None:
            if self._ring_ids.get(old.update.id) == old.seq:
                del self._ring_ids[old.update.id]
            self._first = old.seq + 1
        self._ring[slot] = entry
        self._ring_ids[update.id] = seq
        self._head = seq
        self._last_id = update.id
        if seq % 256 == 0 and seq > self._keep:
            self._db.execute("DELETE FROM updates WHERE seq <= ?", (seq - self._keep,))
        return entry

    def since(self, cursor: int) -> list[Entry] | None:
        """Ring entries after ``cursor``, oldest first; None if some were already evicted.

        Runtime: O(entries returned).
        """
        if cursor + 1 < self._first:
            return None
        ring, size = self._ring, self._size
        return [ring[seq % size] for seq in range(cursor + 1, self._head + 1)]  # type: ignore[misc]

    def lookup(self, event_id: str) -> int | None:
        """Sequence number of the update with id ``event_id`` (``earliest`` is 0), or None
        when the hub no longer (or never) had it. O(1) in the ring, an index probe on disk."""
        if event_id == EARLIEST:
            return 0
        seq = self._ring_ids.get(event_id)
        if seq is not None:
            return seq
        row = self._db.execute("SELECT max(seq) FROM updates WHERE id = ?", (event_id,)).fetchone()
        return row[0] if row and row[0] is not None else None

    def read(self, after: int, upto: int, limit: int = 500) -> list[Entry]:
        """Entries with ``after < seq <= upto`` from SQLite, oldest first, at most ``limit``."""
        rows = self._db.execute(
            "SELECT seq, id, topics, data, private, type, retry FROM updates"
            " WHERE seq > ? AND seq <= ? ORDER BY seq LIMIT ?",
            (after, upto, limit),
        ).fetchall()
        entries = []
        for seq, id_, topics, data, private, type_, retry in rows:
            update = Update(id_, tuple(json.loads(topics)), data, bool(private), type_, retry)
            entries.append(Entry(seq, update, update.encode()))
        return entries

    def count(self) -> int:
        """Updates held on disk (for metrics and tests)."""
        row = self._db.execute("SELECT count(*) FROM updates").fetchone()
        return int(row[0])

    def close(self) -> None:
        """Close the database; the history must not be used afterwards."""
        self._db.close()
