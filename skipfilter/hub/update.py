"""An update as published, and an update as delivered: encoded once, shared by every reader.

A publish is encoded to SSE bytes once and framed once as an HTTP/1.1 chunk; every
recipient's socket gets that same ``bytes`` object, so fan-out copies nothing per recipient.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from skipfilter.hub.sse import (
    EARLIEST,
    InvalidField,
    check_id,
    check_retry_value,
    check_topic,
    check_type,
    format_event,
)

__all__ = [
    "EARLIEST",
    "Batch",
    "Entry",
    "LazyEntry",
    "Loader",
    "UnusableEntry",
    "Update",
    "http_chunk",
    "valid_update",
]


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


def valid_update(
    update_id: object,
    topics: object,
    data: object,
    private: object,
    event_type: object,
    retry: object,
    *,
    checked: tuple[str, tuple[str, ...]] | None = None,
) -> Update:
    """An Update from untrusted values (a publish form, an entry read back from Redis), or
    InvalidField naming the first one a publish could not have carried: every check a
    publish passes, in one place, so whatever the hub reads back it could have accepted.
    An id and topics equal to ``checked`` (an id and topics that passed these checks
    already) are not checked again."""
    if not isinstance(update_id, str):
        raise InvalidField("id", f"must be a string, got {_kind(update_id)}")
    if checked is None or update_id != checked[0]:
        check_id(update_id)
    if not isinstance(topics, list | tuple) or not topics:
        raise InvalidField("topic", "an update needs a list of at least one topic")
    if checked is None or tuple(topics) != checked[1]:
        for topic in topics:
            if not isinstance(topic, str):
                raise InvalidField("topic", f"must be a string, got {_kind(topic)}")
            check_topic(topic)
    if not isinstance(data, str):
        raise InvalidField("data", f"must be a string, got {_kind(data)}")
    if not isinstance(private, bool):
        raise InvalidField("private", f"must be a boolean, got {_kind(private)}")
    if event_type is not None:
        if not isinstance(event_type, str):
            raise InvalidField("type", f"must be a string, got {_kind(event_type)}")
        check_type(event_type)
    if retry is not None:
        if not isinstance(retry, int) or isinstance(retry, bool):
            raise InvalidField("retry", f"must be an integer, got {_kind(retry)}")
        check_retry_value(retry)
    return Update(update_id, tuple(topics), data, private, event_type or None, retry)


def _kind(value: object) -> str:
    return "null" if value is None else type(value).__name__


def http_chunk(payload: bytes) -> bytes:
    """``payload`` framed as one HTTP/1.1 chunk (what a chunked response body carries)."""
    return b"%x\r\n%s\r\n" % (len(payload), payload)


class Entry:
    """An update with its place in this hub's order and its bytes, ready to hand out.

    ``seq`` orders every update this hub delivers (0 for one read back for a replay);
    ``position`` is its place in the transport's total order (the same on every node).
    ``recipients`` is the bitmap of subscriber ids matched when the update was delivered
    live. ``chunk`` is the SSE event framed as an HTTP chunk, written as is to native
    streams; ``event`` is a zero-copy view of the SSE bytes inside it, for ASGI streams.
    """

    __slots__ = ("chunk", "position", "recipients", "seq", "update")

    def __init__(
        self,
        seq: int,
        update: Update,
        chunk: bytes,
        recipients: Any = None,
        position: Any = None,
    ) -> None:
        self.seq = seq
        self.update = update
        self.chunk = chunk
        self.recipients = recipients
        self.position = seq if position is None else position

    @classmethod
    def of(cls, seq: int, update: Update, recipients: Any = None) -> Entry:
        """Encode ``update`` and frame it."""
        return cls(seq, update, http_chunk(update.encode()), recipients)

    @property
    def id(self) -> str:
        """The update's id (what the ring indexes for ``Last-Event-ID``)."""
        return self.update.id

    @property
    def topics(self) -> tuple[str, ...]:
        """The update's topics (what the index matches)."""
        return self.update.topics

    @property
    def private(self) -> bool:
        """Whether the update is private."""
        return self.update.private

    def usable(self) -> bool:
        """Whether ``update`` and ``chunk`` can be read (always, but for a ``LazyEntry``)."""
        return True

    @property
    def event(self) -> memoryview:
        """The SSE bytes, without the chunk framing (no copy)."""
        start = self.chunk.index(b"\r\n") + 2
        return memoryview(self.chunk)[start:-2]

    @property
    def size(self) -> int:
        """Bytes this entry holds (what the ring's byte bound counts)."""
        return len(self.chunk)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(seq={self.seq}, id={self.id!r}, topics={self.topics!r})"


class UnusableEntry(ValueError):
    """A stored entry no hub could have written; the message says what is wrong."""


class Loader(Protocol):
    """Decodes what a ``LazyEntry`` holds (``raw``) into its update, checked as a publish
    is, or raises UnusableEntry; ``unusable`` reports one (once per entry)."""

    def load(self, entry: LazyEntry) -> Update: ...

    def unusable(self, entry: LazyEntry, exc: UnusableEntry) -> None: ...


class LazyEntry(Entry):
    """An entry read back from a shared history with its id, topics and privacy read
    apart from its payload: what matching, the ring and replay's filter need. The update
    and its chunk are decoded on first use, so a node that delivers an update to nobody
    never pays for its payload (issue 42).

    Those cheap fields are a claim the payload must confirm: the ``Loader`` refuses an
    entry whose update disagrees with them. An entry found unusable then selects nothing
    (no topics) and ``usable()`` is False; reading its ``update`` or ``chunk`` raises
    UnusableEntry, so the hub asks ``usable()`` before it hands an entry to anyone.
    ``size`` is an estimate from the stored bytes, fixed when made (the ring's byte
    bound adds and subtracts it).
    """

    __slots__ = ("_chunk", "_loader", "_update", "id", "private", "raw", "size", "topics")

    id: str  # read-only properties in Entry, plain slots here
    topics: tuple[str, ...]
    private: bool
    size: int

    def __init__(
        self,
        seq: int,
        position: Any,
        update_id: str,
        topics: tuple[str, ...],
        private: bool,
        size: int,
        raw: Any,
        loader: Loader,
    ) -> None:
        self.seq = seq
        self.position = position
        self.recipients = None
        self.id = update_id
        self.topics = topics
        self.private = private
        self.size = size
        self.raw = raw
        self._loader = loader
        self._update: Update | None = None
        self._chunk = b""

    def usable(self) -> bool:
        """Decode the update (once); False, reported once, when it is unusable."""
        if self._update is not None:
            return True
        if self.raw is None:
            return False  # found unusable before
        try:
            update = self._loader.load(self)
        except UnusableEntry as exc:
            self.raw = None
            self.topics = ()  # selects nothing from now on
            self._loader.unusable(self, exc)
            return False
        self._update = update
        self._chunk = http_chunk(update.encode())
        self.raw = None
        return True

    @property
    def update(self) -> Update:
        if self._update is None and not self.usable():
            raise UnusableEntry(f"entry {self.position} is not a hub update")
        assert self._update is not None
        return self._update

    @update.setter
    def update(self, value: Update) -> None:
        self._update = value

    @property
    def chunk(self) -> bytes:
        if self._update is None and not self.usable():
            raise UnusableEntry(f"entry {self.position} is not a hub update")
        return self._chunk

    @chunk.setter
    def chunk(self, value: bytes) -> None:
        self._chunk = value


class Batch:
    """Entries matched together. ``chunk`` is their chunks joined (built once, when first
    asked: a batch nobody receives whole never reads its entries' payloads); ``steps`` are
    (entry, sids): first (None, sids of subscribers in every entry), then for each entry
    the other subscribers it goes to."""

    __slots__ = ("_chunk", "at", "dones", "entries", "first", "last", "step", "steps")

    def __init__(
        self, entries: list[Entry], dones: list[tuple[asyncio.Future[Entry], Entry]]
    ) -> None:
        self.entries = entries
        self.dones = dones
        self.first = entries[0].seq
        self.last = entries[-1].seq
        self._chunk: bytes | None = None
        self.steps: list[tuple[Entry | None, Sequence[int]]] = []
        self.step = 0
        self.at = 0

    @property
    def chunk(self) -> bytes:
        """Every entry's chunk, in order, as one ``bytes``."""
        if self._chunk is None:
            entries = self.entries
            self._chunk = (
                entries[0].chunk if len(entries) == 1 else b"".join(e.chunk for e in entries)
            )
        return self._chunk
