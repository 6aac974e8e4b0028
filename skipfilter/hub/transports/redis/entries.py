"""Redis Stream entries <-> updates, trusting nothing read back.

Whatever is in the stream is input: another program's ``XADD``, an entry of an older or
newer hub, bytes that are not UTF-8, an id holding a line break. An entry is turned back
into an update only if a publish could have carried it (``valid_update``, the publish
checks); anything else is an ``UnusableEntry``, skipped by every reader with a warning
logged once per entry, so one bad entry never stops delivery, replay or a node's start.
"""

from __future__ import annotations

import json
import logging
from collections import OrderedDict
from typing import Any

from skipfilter.hub.update import Entry, Update, http_chunk, valid_update

log = logging.getLogger("skipfilter.hub")

#: Field names of an entry: the encoded update, its id (for the id index), its kind, and
#: the token of the node and publisher waiting for it.
UPDATE_FIELD, ID_FIELD, KIND_FIELD, TOKEN_FIELD = b"u", b"i", b"k", b"n"
#: ``KIND_FIELD`` of subscription events (updates have none).
EVENT_KIND = b"e"
#: The stream id after which Redis can add no entry (an entry there ends the order).
MAX_STREAM_ID = f"{2**64 - 1}-{2**64 - 1}"
MAX_SID = MAX_STREAM_ID.encode()
#: Stream ids whose warning was logged (a replay reading them again stays quiet).
_WARNED_MAX = 4096


class UnusableEntry(ValueError):
    """A stream entry no hub could have written; the message says what is wrong."""


def stream_position(stream_id: str | bytes) -> tuple[int, int]:
    """``"1700000000000-3"`` as ``(1700000000000, 3)``: positions compare as tuples."""
    text = stream_id.decode() if isinstance(stream_id, bytes) else stream_id
    milliseconds, _, sequence = text.partition("-")
    return int(milliseconds), int(sequence or 0)


def stream_id(position: tuple[int, int]) -> str:
    """The inverse of ``stream_position``."""
    return f"{position[0]}-{position[1]}"


def encode(update: Update) -> str:
    """The ``u`` field of an update's entry."""
    return json.dumps(
        [update.id, update.topics, update.data, update.private, update.type, update.retry]
    )


def decode(fields: Any) -> Update:
    """The update an entry's fields (bytes to bytes, as Redis returns them) hold.

    Raises UnusableEntry naming what is wrong. Runtime: O(size of the entry).
    """
    if not isinstance(fields, dict):
        raise UnusableEntry("not a field list")
    raw = fields.get(UPDATE_FIELD)
    if raw is None:
        raise UnusableEntry("no 'u' field")
    try:
        values = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise UnusableEntry(f"the 'u' field is not UTF-8 JSON ({exc})") from exc
    if not isinstance(values, list) or len(values) != 6:
        raise UnusableEntry("the 'u' field is not a JSON array of 6 values")
    try:
        return valid_update(*values)
    except ValueError as exc:  # InvalidField names the field and what is wrong with it
        raise UnusableEntry(str(exc)) from exc


class EntryReader:
    """Turns entries into Entries, skipping (and reporting once) those it cannot use."""

    def __init__(self, stream: str) -> None:
        self._stream = stream
        self._warned: OrderedDict[bytes, None] = OrderedDict()
        self.skipped = 0  # unusable entries met (each counted once)

    def update(self, sid: bytes, fields: Any) -> Update | None:
        """The entry's update, or None (logged once per entry) when it is unusable."""
        try:
            if sid == MAX_SID:
                raise UnusableEntry("it has the largest possible stream id: nothing can follow")
            return decode(fields)
        except UnusableEntry as exc:
            self._report(sid, exc)
            return None

    def entry(self, sid: bytes, fields: Any, seq: int = 0) -> Entry | None:
        """The entry ready to hand out (its SSE bytes encoded once), or None."""
        update = self.update(sid, fields)
        if update is None:
            return None
        return Entry(seq, update, http_chunk(update.encode()), position=stream_position(sid))

    def _report(self, sid: bytes, exc: UnusableEntry) -> None:
        if sid in self._warned:
            return
        self._warned[sid] = None
        if len(self._warned) > _WARNED_MAX:
            self._warned.popitem(last=False)
        self.skipped += 1
        log.warning(
            "redis transport: entry %s of %s is not a hub update (%s); skipped",
            sid.decode(errors="replace"),
            self._stream,
            str(exc)[:200],
        )
