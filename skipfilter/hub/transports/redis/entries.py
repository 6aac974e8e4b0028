"""Redis Stream entries <-> updates, trusting nothing read back.

Whatever is in the stream is input: another program's ``XADD``, an entry of an older or
newer hub, bytes that are not UTF-8, an id holding a line break. An entry is turned back
into an update only if a publish could have carried it (``valid_update``, the publish
checks); anything else is an ``UnusableEntry``, skipped by every reader with a warning
logged once per entry, so one bad entry never stops delivery, replay or a node's start.

Entries carry their topics and private flag a second time, apart from the payload (the
``t`` field), so a node's tail matches an update without decoding it and pays for the
payload only where it delivers it (issue 42: ``EntryReader.lazy``). ``t`` is a claim the
payload must confirm: an entry whose ``t`` is malformed, or disagrees with ``u`` or with
the ``i`` field, is unusable (decided where it is decoded: a node that matched nobody by
``t`` skips it without looking). Entries without ``t`` (an older hub's, another
program's) are decoded as before, and an older hub reading a new entry ignores ``t``.
"""

from __future__ import annotations

import json
import logging
import re
from collections import OrderedDict
from json.scanner import make_scanner
from typing import Any, cast

from skipfilter.hub.sse import EARLIEST, check_id
from skipfilter.hub.update import (
    Entry,
    LazyEntry,
    UnusableEntry,
    Update,
    http_chunk,
    valid_update,
)

__all__ = [
    "EntryReader",
    "UnusableEntry",
    "decode",
    "decode_payload",
    "encode",
    "read_topics",
    "stream_id",
    "stream_position",
    "topics_field",
]

log = logging.getLogger("skipfilter.hub")

#: Field names of an entry: the encoded update, its id (for the id index), its kind, and
#: the token of the node and publisher waiting for it.
UPDATE_FIELD, ID_FIELD, KIND_FIELD, TOKEN_FIELD = b"u", b"i", b"k", b"n"
#: The update's private flag and topics, read without its payload (``topics_field``).
TOPICS_FIELD = b"t"
#: ``KIND_FIELD`` of subscription events (updates have none).
EVENT_KIND = b"e"
#: The stream id after which Redis can add no entry (an entry there ends the order).
MAX_STREAM_ID = f"{2**64 - 1}-{2**64 - 1}"
MAX_SID = MAX_STREAM_ID.encode()
#: Stream ids whose warning was logged (a replay reading them again stays quiet).
_WARNED_MAX = 4096
#: ``t`` fields remembered with their topics (the same topics recur; then it is emptied).
_TOPICS_MAX = 1024  # measured: a larger memo costs unique topics more than it saves
#: One JSON value at an index of a string, and where it ends (``json.loads`` without its
#: Python wrappers).
_SCAN: Any = make_scanner(json.JSONDecoder())  # type: ignore[arg-type]  # typeshed: a class
#: The control characters a topic may not hold (``check_topic``) but the line break that
#: separates topics in a ``t`` field.
_CONTROL_BUT_LF = re.compile(r"[\x00-\x09\x0b-\x1f\x7f]")


def stream_position(stream_id: str | bytes) -> tuple[int, int]:
    """``"1700000000000-3"`` as ``(1700000000000, 3)``: positions compare as tuples."""
    if isinstance(stream_id, bytes):  # int() reads ASCII digits in bytes: no decode
        milliseconds, _, sequence = stream_id.partition(b"-")
        return int(milliseconds), int(sequence or 0)
    text_ms, _, text_seq = stream_id.partition("-")
    return int(text_ms), int(text_seq or 0)


def stream_id(position: tuple[int, int]) -> str:
    """The inverse of ``stream_position``."""
    return f"{position[0]}-{position[1]}"


def encode(update: Update) -> str:
    """The ``u`` field of an update's entry."""
    return json.dumps(
        [update.id, update.topics, update.data, update.private, update.type, update.retry]
    )


def topics_field(update: Update) -> str:
    """The ``t`` field of an update's entry: ``1`` (private) or ``0``, then each topic, one
    a line (a topic holds no control character, so no line break)."""
    return ("1\n" if update.private else "0\n") + "\n".join(update.topics)


def read_topics(raw: Any) -> tuple[tuple[str, ...], bool]:
    """The topics and private flag a ``t`` field holds, checked as a publish's are, or
    UnusableEntry. Runtime: O(size of the field)."""
    if not isinstance(raw, bytes):
        raise UnusableEntry("the 't' field is not a string")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise UnusableEntry(f"the 't' field is not UTF-8 ({exc})") from exc
    flag, line_break, topics = text.partition("\n")
    if flag not in ("0", "1") or not line_break:
        raise UnusableEntry("the 't' field is not a private flag (0 or 1) and topics")
    # what check_topic refuses, for every topic at once (printable text holds none of it)
    if not topics.replace("\n", "").isprintable() and (found := _CONTROL_BUT_LF.search(topics)):
        raise UnusableEntry(f"the 't' field holds control character {found.group()!r}")
    return tuple(topics.split("\n")), flag == "1"


def decode(fields: Any) -> Update:
    """The update an entry's fields (bytes to bytes, as Redis returns them) hold; with a
    ``t`` field, one that agrees with it and with ``i``.

    Raises UnusableEntry naming what is wrong. Runtime: O(size of the entry).
    """
    if not isinstance(fields, dict):
        raise UnusableEntry("not a field list")
    raw = fields.get(UPDATE_FIELD)
    if raw is None:
        raise UnusableEntry("no 'u' field")
    addressed = fields.get(TOPICS_FIELD)
    if addressed is None:  # an older hub's entry, or another program's
        return decode_payload(raw)
    topics, private = read_topics(addressed)
    update_id = _id_of(fields.get(ID_FIELD))
    if update_id is None:
        raise UnusableEntry("it has a 't' field but its 'i' field is no id a publish may carry")
    return decode_payload(raw, (update_id, topics, private))


def decode_payload(raw: Any, claimed: tuple[str, tuple[str, ...], bool] | None = None) -> Update:
    """The update a ``u`` field holds, checked as a publish is; ``claimed``, the id and
    topics (both checked already) and privacy the entry's ``i`` and ``t`` fields hold,
    which it must agree with. Raises UnusableEntry. Runtime: O(size of the field)."""
    try:
        values = _json(raw.decode("utf-8"))
    except (AttributeError, UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise UnusableEntry(f"the 'u' field is not UTF-8 JSON ({exc})") from exc
    if not isinstance(values, list) or len(values) != 6:
        raise UnusableEntry("the 'u' field is not a JSON array of 6 values")
    try:
        update = valid_update(*values, checked=claimed[:2] if claimed else None)
    except ValueError as exc:  # InvalidField names the field and what is wrong with it
        raise UnusableEntry(str(exc)) from exc
    if claimed is not None and (update.id, update.topics, update.private) != claimed:
        raise UnusableEntry("its 'i' or 't' field disagrees with the update in 'u'")
    return update


class EntryReader:
    """Turns entries into Entries, skipping (and reporting once) those it cannot use.

    Also the ``Loader`` of the lazy entries it makes (``lazy``)."""

    def __init__(self, stream: str) -> None:
        self._stream = stream
        self._warned: OrderedDict[bytes, None] = OrderedDict()
        self._topics: dict[bytes, tuple[tuple[str, ...], bool]] = {}
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

    def lazy(self, sid: bytes, flat: Any, seq: int, position: tuple[int, int]) -> Entry | None:
        """The tail's entry: a ``LazyEntry`` (its payload decoded only when someone
        receives it) when the fields are those this hub writes (``u``, ``i``, ``t`` first,
        ``t`` well-formed, a printable id); else the entry decoded now, or None (reported
        once) when it is unusable. Runtime: O(1) for topics read before, else O(size of
        ``t``)."""
        if not (
            isinstance(flat, list)
            and len(flat) >= 6
            and flat[0] == UPDATE_FIELD
            and flat[2] == ID_FIELD
            and flat[4] == TOPICS_FIELD
        ):
            return self.entry(sid, _field_dict(flat), seq)
        raw = flat[5]
        found = self._topics.get(raw)
        if found is None:
            try:
                found = read_topics(raw)
            except UnusableEntry as exc:
                self._report(sid, exc)
                return None
            if len(self._topics) >= _TOPICS_MAX:
                self._topics.clear()
            self._topics[raw] = found
        update_id = _id_of(flat[3])
        if update_id is None:
            return self.entry(sid, _field_dict(flat), seq)  # decoded now: it says what is wrong
        topics, private = found
        payload = flat[1]  # all a lazy entry keeps of the fields (bytes: no GC to track)
        return LazyEntry(seq, position, update_id, topics, private, len(payload), payload, self)

    def load(self, entry: LazyEntry) -> Update:
        """A lazy entry's update (``Loader``): decoded, checked, its id, topics and
        privacy confirmed."""
        return decode_payload(entry.raw, (entry.id, entry.topics, entry.private))

    def unusable(self, entry: LazyEntry, exc: UnusableEntry) -> None:
        """Report a lazy entry found unusable (``Loader``), once."""
        self._report(stream_id(cast(tuple[int, int], entry.position)).encode(), exc)

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


def _json(text: str) -> Any:
    """``json.loads(text)``, through the json module's C scanner alone when ``text`` is
    one JSON value and nothing else (as hubs write it): a third of the wrappers' cost."""
    try:
        value, end = _SCAN(text, 0)
    except StopIteration:
        return json.loads(text)  # says what is wrong, or reads what surrounds the value
    if end != len(text):
        return json.loads(text)
    return value


def _id_of(raw: Any) -> str | None:
    """The ``i`` field as an id a publish may carry (``check_id``), or None. Runtime: O(size),
    with one call to ``check_id`` only for ids that are not plainly printable."""
    try:
        text: str = raw.decode("utf-8")
    except (AttributeError, UnicodeDecodeError):
        return None
    if text.isprintable() and text[:1] not in ("", "#", " ") and text[-1] != " ":
        if text != EARLIEST:
            return text  # what check_id accepts: no control character, nor edge space
        return None
    try:
        return check_id(text)
    except ValueError:
        return None


def _field_dict(flat: Any) -> Any:
    """An entry's field list as a dict, as ``decode`` takes it (anything else as is:
    ``decode`` says what is wrong with it)."""
    if isinstance(flat, list) and len(flat) % 2 == 0:
        return dict(zip(flat[::2], flat[1::2], strict=True))
    return flat
