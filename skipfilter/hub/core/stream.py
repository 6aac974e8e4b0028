"""One subscriber's delivery state, and the little of the hub it relies on (``StreamHost``).

A stream is "live" once its replay (``replay.py``) is done: from then on the hub's fan-out
offers it each entry it is a recipient of. A stream that cannot take an offer at once (its socket is
full) just keeps its cursor; when it can write again it walks the ring from the cursor, so
a slow subscriber costs one sequence number, not a queue of what it owes.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from typing import Any, Final, Protocol

from skipfilter.hub.core.grants import Grants, TopicTest, topic_test
from skipfilter.hub.core.ring import Ring
from skipfilter.hub.settings import HubSettings
from skipfilter.hub.update import Batch, Entry
from skipfilter.selectors import TypedSelector


class StreamHost(Protocol):
    """What a stream needs from the hub that holds it, and nothing more: the settings
    (timeouts), the loop (timers), the ring (catching up) and a way to leave."""

    @property
    def settings(self) -> HubSettings: ...

    @property
    def loop(self) -> asyncio.AbstractEventLoop: ...

    @property
    def ring(self) -> Ring: ...

    def unregister(self, stream: Stream, reason: str) -> bool:
        """Remove ``stream`` from the hub (idempotent); True the first time."""
        ...


class Addressed(Protocol):
    """What an interest tests: an update, or an entry (whose payload it need not read)."""

    @property
    def topics(self) -> tuple[str, ...]: ...

    @property
    def private(self) -> bool: ...


class Interest:
    """What one subscriber selected and may see, compiled to test single updates (replay,
    the ``Last-Event-ID`` header) without touching the hub's index."""

    __slots__ = ("_allowed", "_everything", "_selectors")

    def __init__(
        self,
        selectors: Sequence[TypedSelector],
        allowed: Sequence[TypedSelector] | None,
        base_url: str | None = None,
    ) -> None:
        self._selectors: list[TopicTest] = [topic_test(s, base_url) for s in selectors]
        allowed = allowed or ()
        self._everything = any(a.text == "*" for a in allowed)
        self._allowed: list[TopicTest] = [topic_test(a, base_url) for a in allowed]

    def may_see(self, update: Addressed) -> bool:
        """Public, or private with a topic the token's ``mercure.subscribe`` covers."""
        return self._may_see(update.topics, update.private)

    def _may_see(self, topics: tuple[str, ...], private: bool) -> bool:
        if not private or self._everything:
            return True
        return any(a(t) for t in topics for a in self._allowed)

    def wants(self, update: Addressed) -> bool:
        """Whether the hub delivers ``update`` to this subscriber (selected and allowed)."""
        return self.selects(update.topics, update.private)

    def selects(self, topics: tuple[str, ...], private: bool) -> bool:
        """``wants`` from an update's topics and private flag alone (before its data)."""
        selected = any(s(t) for t in topics for s in self._selectors)
        return selected and self._may_see(topics, private)


_NOTHING: Final = Interest((), ())  # what a stream unregistered selects and may see


class Stream:
    """The part of an open subscription the hub drives; subclasses own the connection.

    ``cursor`` is the sequence number of the last entry written (or skipped as not owed);
    ``live`` turns on when the replay is done; ``active`` says something was written
    since the last heartbeat tick.
    """

    __slots__ = (
        "active",
        "closed",
        "cursor",
        "deadline",
        "grants",
        "host",
        "id",
        "interest",
        "live",
        "selectors",
        "sid",
        "upto_position",
    )

    def __init__(
        self,
        host: StreamHost,
        subscriber_id: str,
        selectors: tuple[TypedSelector, ...],
        grants: Grants | None,
    ) -> None:
        self.host = host
        self.id = subscriber_id
        self.selectors = selectors
        self.grants = grants
        self.interest = Interest(
            selectors,
            grants.subscribe if grants is not None else None,
            host.settings.pattern_base_url,
        )
        self.sid = -1
        self.cursor = 0
        self.upto_position: Any = None
        self.live = False
        self.active = True
        self.closed = False
        self.deadline: asyncio.TimerHandle | None = None

    def forget(self) -> None:
        """Drop the compiled tests of what it selected, once it is unregistered: it selects
        nothing more, and compiled URL Patterns no other stream holds are freed now, not at
        the next collection of reference cycles (a connection's objects refer to each other)."""
        self.interest = _NOTHING

    def offer(self, entry: Entry) -> None:
        """Deliver ``entry`` (this stream is among its recipients). Must not block."""
        raise NotImplementedError

    def offer_batch(self, batch: Batch) -> None:
        """Deliver every entry of ``batch`` (this stream is among the recipients of all)."""
        for entry in batch.entries:
            self.offer(entry)

    def heartbeat(self) -> None:
        """Send a comment line so proxies keep an idle stream open."""
        raise NotImplementedError

    def close(self, reason: str, detail: str = "") -> None:
        """End the stream, telling the client why when it still reads (idempotent)."""
        raise NotImplementedError

    def go_live(self) -> None:
        """The replay is done: from now on offers are written, starting with what the
        ring holds after the cursor."""
        self.live = True

    async def write_replayed(self, entries: Sequence[Entry]) -> int:
        """Write replayed entries; returns how many were written before the socket filled
        up (a stream that cannot tell writes them all, waiting when it must)."""
        raise NotImplementedError

    async def writable(self) -> None:
        """Wait until the client has read enough to take more (or the stream ended)."""

    def arm_deadline(self) -> None:
        """Schedule the end of the stream: the token's expiry or the connection lifetime."""
        settings = self.host.settings
        now = time.time()
        ends: list[tuple[float, str, str]] = []
        if settings.write_timeout:
            ends.append(
                (
                    now + settings.write_timeout,
                    "connection lifetime",
                    f"disconnected: streams last at most {settings.write_timeout:g} s; "
                    "reconnect with Last-Event-ID to resume",
                )
            )
        expires = self.grants.expires_at if self.grants is not None else None
        if expires is not None:
            ends.append((expires, "token expired", "disconnected: the token expired"))
        if not ends:
            return
        at, reason, detail = min(ends)
        loop = self.host.loop
        self.deadline = loop.call_at(loop.time() + max(0.0, at - now), self.close, reason, detail)

    def disarm(self) -> None:
        """Cancel the deadline (the stream is over)."""
        if self.deadline is not None:
            self.deadline.cancel()
            self.deadline = None
