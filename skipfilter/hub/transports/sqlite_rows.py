"""Rows of a shared SQLite history as entries, decoded only where they are delivered.

Every worker follows every row of the shared history (``sqlite_follow``), most of them
for no subscriber of its own. A row becomes a ``LazyEntry``: its id, topics (JSON, read
once per distinct topics string) and private flag are what matching, the ring and replay
need; the update and its SSE chunk are built when a subscriber of this worker receives it
(issue 42: a worker pays for an update only where it delivers it).
"""

from __future__ import annotations

import json
import logging
from json.scanner import make_scanner
from typing import Any

from skipfilter.hub.transports.sqlite import _UINT64  # a retry past 2**63 is stored negative
from skipfilter.hub.update import Entry, LazyEntry, UnusableEntry, Update

__all__ = ["RowReader"]

log = logging.getLogger("skipfilter.hub")

#: Topics strings remembered with their parsed topics (then the memo is emptied).
_TOPICS_MAX = 1024  # measured: a larger memo costs unique topics more than it saves
#: What a ring entry's size adds to its data: the SSE fields and chunk framing, roughly.
_FRAMING = 32
#: One JSON value at an index of a string, and where it ends (``json.loads`` without its
#: Python wrappers).
_SCAN: Any = make_scanner(json.JSONDecoder())  # type: ignore[arg-type]  # typeshed: a class


class RowReader:
    """Turns followed rows (``seq, id, topics, data, private, type, retry``) into lazy
    entries, and is their ``Loader``. Event loop only."""

    def __init__(self) -> None:
        self._topics: dict[str, tuple[str, ...]] = {}

    def entry(self, row: tuple[Any, ...], seq: int) -> Entry:
        """The entry of ``row``, numbered ``seq`` on this process; ValueError or TypeError
        for a row no hub wrote. Runtime: O(1) for topics seen before, else O(their size)."""
        position, update_id, topics, data, private, _, _ = row
        names = self._topics.get(topics)
        if names is None:
            names = _topics_of(topics)
            if len(self._topics) >= _TOPICS_MAX:
                self._topics.clear()
            self._topics[topics] = names
        if not isinstance(update_id, str) or not isinstance(data, str):
            raise TypeError("its id and data are not text")
        size = len(data) + len(update_id) + _FRAMING
        return LazyEntry(seq, position, update_id, names, bool(private), size, row, self)

    def load(self, entry: LazyEntry) -> Update:
        """A lazy entry's update (``Loader``): the row's columns, as stored by a hub."""
        _, _, _, data, _, event_type, retry = entry.raw
        if retry is not None and retry < 0:
            retry += _UINT64
        return Update(entry.id, entry.topics, data, entry.private, event_type, retry)

    def unusable(self, entry: LazyEntry, exc: UnusableEntry) -> None:
        """Report a row found unusable (``Loader``); ``load`` raises nothing today."""
        log.warning("shared sqlite transport: row %s skipped: %s", entry.position, exc)


def _topics_of(stored: Any) -> tuple[str, ...]:
    """The topics column (a JSON list of strings) as a tuple; ValueError otherwise. Read
    by the json module's C scanner: ``json.loads`` spends most of its time around it."""
    if not isinstance(stored, str):
        raise TypeError("its topics are not text")
    try:
        names, end = _SCAN(stored, 0)
    except StopIteration as exc:  # the scanner's way of saying: no JSON value here
        raise ValueError("its topics are not JSON") from exc
    if end != len(stored) or type(names) is not list or not names:
        raise ValueError("its topics are not a JSON list of strings")
    if not all([type(name) is str for name in names]):
        raise ValueError("its topics are not a JSON list of strings")
    return tuple(names)
