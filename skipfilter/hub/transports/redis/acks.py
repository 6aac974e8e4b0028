"""Publishers waiting for their update to come back through this node's tail.

A publish is acknowledged once this node has read its entry back from the stream and
handed it to fan-out, so an acknowledged update is one this node delivers. Each waiting
publisher's entry carries a token (node id and a counter) known before Redis answers the
``XADD``: the tail may read the entry before the append's reply arrives. An entry the tail
went past without reading (deleted in between) fails its publisher instead.
"""

from __future__ import annotations

import asyncio
import itertools
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass

from skipfilter.hub.transports.base import TransportUnavailable
from skipfilter.hub.transports.redis.entries import stream_id
from skipfilter.hub.update import Entry, Update


@dataclass(slots=True)
class Waiter:
    """A publisher waiting for its entry, with the update it sent and its encoded event:
    read back with its token, the entry is this node's own, neither decoded nor checked
    again."""

    done: asyncio.Future[Entry]
    since: float
    update: Update
    chunk: bytes
    position: tuple[int, int] | None = None  # known once Redis answered


class Acknowledgements:
    """Tokens of the entries publishers wait for, and their futures. Event loop only."""

    def __init__(self) -> None:
        self._waiting: dict[bytes, Waiter] = {}
        self._tokens = itertools.count()
        self._node = uuid.uuid4().hex[:16]

    def wait(
        self, done: asyncio.Future[Entry] | None, update: Update, chunk: bytes
    ) -> bytes | None:
        """The token to store with a publisher's entry, that of ``update`` (None when
        nobody waits)."""
        if done is None:
            return None
        token = f"{self._node}-{next(self._tokens)}".encode()
        self._waiting[token] = Waiter(done, time.monotonic(), update, chunk)
        return token

    def stored(self, token: bytes | None, position: tuple[int, int]) -> None:
        """Redis stored the token's entry at ``position`` (the tail may be past it)."""
        if token is not None and token in self._waiting:
            self._waiting[token].position = position

    def forget(self, tokens: Sequence[bytes | None]) -> None:
        """The entries were not stored: their publishers learn it otherwise."""
        for token in tokens:
            if token is not None:
                self._waiting.pop(token, None)

    def read(self, token: bytes | None) -> Waiter | None:
        """The tail read the token's entry: its publisher, whose future is resolved once
        the entry is delivered."""
        return self._waiting.pop(token, None) if token is not None else None

    def passed(self, position: tuple[int, int]) -> None:
        """The tail read everything up to ``position``: a stored entry it did not see
        was deleted before this node could deliver it."""
        gone = [
            token
            for token, waiter in self._waiting.items()
            if waiter.position is not None and waiter.position <= position
        ]
        for token in gone:
            waiter = self._waiting.pop(token)
            if not waiter.done.done() and waiter.position is not None:
                waiter.done.set_exception(
                    TransportUnavailable(
                        f"the update was stored as {stream_id(waiter.position)} but removed "
                        "from the stream before this node could deliver it"
                    )
                )

    def stuck(self, after: float) -> str | None:
        """Why publishers wait too long, when the oldest has waited ``after`` seconds."""
        if not self._waiting:
            return None
        oldest = next(iter(self._waiting.values()))  # waiters are added oldest first
        waited = time.monotonic() - oldest.since
        if waited <= after:
            return None
        return f"{len(self._waiting)} stored updates wait {waited:.0f} s for this node's tail"

    def fail_all(self, reason: str) -> None:
        """Every waiting publisher gets a 503 (the transport is closing)."""
        for waiter in self._waiting.values():
            if not waiter.done.done():
                waiter.done.set_exception(TransportUnavailable(reason))
        self._waiting.clear()
