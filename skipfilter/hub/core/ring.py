"""The newest updates in memory, bounded in count and in bytes: one append per publish.

Readers keep their own cursor (a sequence number) and walk the ring from it; nobody gets a
copy of what they owe. A reader whose next entry has been evicted fell behind: it is told
so and resumes from the durable history with ``Last-Event-ID``.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from skipfilter.hub.update import Entry


class FellBehind(Exception):
    """The entry after a reader's cursor has left the ring."""


class Ring:
    """Entries ``first..head`` by sequence number; at most ``capacity`` entries and
    ``max_bytes`` bytes (the newest entry always stays, however large).

    Not thread-safe: the hub uses it from its event loop only.
    """

    def __init__(
        self, capacity: int, max_bytes: int, head: int = 0, head_position: Any = None
    ) -> None:
        if capacity < 1 or max_bytes < 1:
            raise ValueError("a ring needs room for at least one entry and one byte")
        self.capacity = capacity
        self.max_bytes = max_bytes
        self._entries: dict[int, Entry] = {}
        self._ids: dict[str, int] = {}
        self.head = head
        self.first = head + 1
        self.bytes = 0
        #: Transport position of the newest entry appended (or stored before this ring).
        self.head_position = head_position

    def append(self, entry: Entry) -> None:
        """Add the next entry (its seq must be ``head + 1``), evicting the oldest as needed.

        Runtime: O(1) amortized.
        """
        seq = entry.seq
        if seq != self.head + 1:
            raise ValueError(f"ring expects seq {self.head + 1}, got {seq}")
        entries = self._entries
        entries[seq] = entry
        self._ids.setdefault(entry.id, seq)  # a reused id: its earliest
        self.head = seq
        self.head_position = entry.position
        self.bytes += entry.size
        while self.first < seq and (len(entries) > self.capacity or self.bytes > self.max_bytes):
            self._evict()

    def _evict(self) -> None:
        old = self._entries.pop(self.first)
        self.bytes -= old.size
        if self._ids.get(old.id) == old.seq:
            del self._ids[old.id]
        self.first += 1

    def seq_after(self, position: Any) -> int:
        """The seq of the oldest held entry whose position is after ``position`` (None:
        the oldest held), or ``head + 1`` when there is none. O(log n)."""
        low, high = self.first, self.head + 1
        if position is None:
            return low
        entries = self._entries
        while low < high:
            middle = (low + high) // 2
            if entries[middle].position > position:
                high = middle
            else:
                low = middle + 1
        return low

    def get(self, seq: int) -> Entry | None:
        """The entry with this sequence number, or None when not held. O(1)."""
        return self._entries.get(seq)

    def seq_of(self, update_id: str) -> int | None:
        """Sequence number of the earliest held update with this id (draft-08 §7: a
        reused id resumes after its earliest occurrence), None when evicted. O(1)."""
        return self._ids.get(update_id)

    def owed(self, sid: int, cursor: int) -> Iterator[Entry]:
        """Entries after ``cursor`` whose recipients include ``sid``, oldest first.

        Raises FellBehind (before yielding anything) when the entry after ``cursor`` was
        evicted. Runtime: O(entries after cursor), one bitmap probe each.
        """
        if cursor + 1 < self.first:
            raise FellBehind(cursor)
        entries = self._entries
        for seq in range(cursor + 1, self.head + 1):
            entry = entries[seq]
            if sid in entry.recipients:
                yield entry

    def backwards(self, start: int, limit: int) -> Iterator[Entry]:
        """Held entries from ``start`` down, at most ``limit`` of them, newest first."""
        entries = self._entries
        top = min(start, self.head)
        for seq in range(top, max(self.first, top - limit + 1) - 1, -1):
            yield entries[seq]

    def between(self, after: int, upto: int) -> list[Entry]:
        """Held entries with ``after < seq <= upto``, oldest first."""
        entries = self._entries
        return [entries[s] for s in range(max(after + 1, self.first), min(upto, self.head) + 1)]

    def __len__(self) -> int:
        return len(self._entries)
