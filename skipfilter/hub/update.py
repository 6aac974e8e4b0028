"""An update as published, and an update as delivered: encoded once, shared by every reader.

A publish is encoded to SSE bytes once and framed once as an HTTP/1.1 chunk; every
recipient's socket gets that same ``bytes`` object, so fan-out copies nothing per recipient.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from skipfilter.hub.sse import format_event

#: The ``Last-Event-ID`` value meaning "everything the hub still has".
EARLIEST = "earliest"


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
    def event(self) -> memoryview:
        """The SSE bytes, without the chunk framing (no copy)."""
        start = self.chunk.index(b"\r\n") + 2
        return memoryview(self.chunk)[start:-2]

    @property
    def size(self) -> int:
        """Bytes this entry holds (what the ring's byte bound counts)."""
        return len(self.chunk)

    def __repr__(self) -> str:
        return f"Entry(seq={self.seq}, id={self.update.id!r}, topics={self.update.topics!r})"
