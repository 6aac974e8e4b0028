"""What the hub needs from where its updates live: durable appends, one total order, reads.

A transport stores every published update and hands the hub, in one order, every update
to deliver: its own publishes, and (for a shared transport such as Redis) every other
node's. Each stored update has a *position* in that order (an ``int`` for SQLite, a
``(milliseconds, sequence)`` Redis stream id for Redis); positions compare with ``<``.
"""

from __future__ import annotations

import asyncio
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from typing import Any

from skipfilter.hub.refusal import HubRefusal
from skipfilter.hub.update import EARLIEST, Entry, Update

#: An update's place in the transport's total order (int or tuple; ordered by ``<``).
Position = Any
#: Which stored updates a reader wants, from their topics and private flag alone.
Keep = Callable[[tuple[str, ...], bool], bool]
#: Called on the event loop with entries to deliver, in order, and the publisher's future
#: to resolve once they are delivered (None when nobody waits).
Deliver = Callable[[list[Entry], "asyncio.Future[Entry] | None"], None]
#: How many delivered entries wait for this node's fan-out (a tailing transport stops
#: reading while it is high).
Backlog = Callable[[], int]


def no_backlog() -> int:
    """The backlog of a hub that never waits (a transport used on its own)."""
    return 0


class TransportUnavailable(HubRefusal):
    """Updates cannot be stored or read right now (disk full, Redis down...): a 503."""

    status = 503


class Transport(ABC):
    """Durable storage and total order of a hub's updates.

    ``start_position`` is the position of the newest update stored when this hub started
    (None when there was none); every update delivered since comes through ``deliver``.
    """

    start_position: Position | None = None
    #: The hub numbers delivered entries from ``start_seq + 1`` (SQLite: its row numbers).
    start_seq: int = 0
    last_id_at_start: str = EARLIEST
    commits: int = 0  # write round trips (each may store several publishes)
    #: What the transport is, as probes and 503s may show it (no secret in it).
    shown: str = "its storage"
    #: Entries waiting for fan-out on this node (given to ``start``).
    backlog: Backlog = staticmethod(no_backlog)

    def presence(
        self,
        publish: Callable[[Sequence[Update]], None],
        make_update: Callable[[dict[str, Any]], Update],
        ttl: float,
    ) -> Any:
        """What tracks subscriptions across nodes (None: this node is the only one)."""
        return None

    @abstractmethod
    async def start(
        self, loop: asyncio.AbstractEventLoop, deliver: Deliver, backlog: Backlog = no_backlog
    ) -> None:
        """Begin serving on ``loop``; delivered entries go to ``deliver``, and ``backlog``
        says how many of them still wait for the hub's fan-out."""

    @abstractmethod
    def append(
        self,
        updates: Sequence[Update],
        chunks: Sequence[bytes],
        done: asyncio.Future[Entry] | None,
        events: bool = False,
    ) -> None:
        """Store ``updates`` (their chunks pre-encoded); ``done`` gets the last entry once it
        is stored and handed to this hub's fan-out, or TransportUnavailable (never both,
        never neither). ``events``: they are subscription events, kept within a budget of
        their own so they never push updates out of the history."""

    @abstractmethod
    async def read(
        self,
        after: Position | None,
        before: Position | None,
        upto: Position | None,
        max_rows: int,
        max_bytes: int,
        keep: Keep | None = None,
    ) -> list[Entry]:
        """Stored entries after ``after`` (None: from the oldest), oldest first, stopping
        before ``before`` and at ``upto`` (inclusive) when given; at most ``max_rows``, and no
        more once ``max_bytes`` are read (at least one). Their ``seq`` is 0.

        With ``keep``, rows it refuses may come back without their data (an empty chunk,
        never to be sent) and do not count against ``max_bytes``: a replay then costs the
        bytes its subscriber wants, not every byte stored since its resume point."""

    @abstractmethod
    async def lookup(self, update_id: str) -> Entry | None:
        """The earliest stored update with this id (a reused id resumes after its first
        occurrence, draft-08 §7), or None."""

    @abstractmethod
    async def count(self) -> int:
        """Updates stored."""

    def problem(self) -> str | None:
        """Why this hub cannot deliver what it would store now (None: it can)."""
        return None

    async def check(self) -> str | None:
        """``problem()``, after asking the storage again when that can clear it."""
        return self.problem()

    @abstractmethod
    async def close(self) -> None:
        """Stop and release resources; pending appends are finished or failed first."""
