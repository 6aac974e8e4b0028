"""One subscriber's delivery state, and the replay that brings a reconnecting one up to date.

A stream is "live" once its replay is done: from then on the hub's fan-out offers it each
entry it is a recipient of. A stream that cannot take an offer at once (its socket is
full) just keeps its cursor; when it can write again it walks the ring from the cursor, so
a slow subscriber costs one sequence number, not a queue of what it owes.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from skipfilter.hub.auth import Claims
from skipfilter.hub.update import Entry, Update
from skipfilter.selectors import Selector, compile_selector

if TYPE_CHECKING:
    from skipfilter.hub.fanout import Batch
    from skipfilter.hub.hub import Hub

log = logging.getLogger("skipfilter.hub")

#: Rows and bytes read from the history per replay step (then the loop serves others).
REPLAY_ROWS = 256
REPLAY_BYTES = 1 << 20


class Interest:
    """What one subscriber selected and may see, compiled to test single updates (replay,
    the ``Last-Event-ID`` header) without touching the hub's index."""

    __slots__ = ("_allowed", "_everything", "_selectors")

    def __init__(self, topics: Sequence[str], allowed: Sequence[str] | None) -> None:
        self._selectors: list[Selector] = [compile_selector(t) for t in topics]
        allowed = allowed or ()
        self._everything = "*" in allowed
        self._allowed: list[Selector] = [compile_selector(a) for a in allowed]

    def may_see(self, update: Update) -> bool:
        """Public, or private with a topic the token's ``mercure.subscribe`` covers."""
        return self._may_see(update.topics, update.private)

    def _may_see(self, topics: tuple[str, ...], private: bool) -> bool:
        if not private or self._everything:
            return True
        return any(a.matches(t) for t in topics for a in self._allowed)

    def wants(self, update: Update) -> bool:
        """Whether the hub delivers ``update`` to this subscriber (selected and allowed)."""
        return self.selects(update.topics, update.private)

    def selects(self, topics: tuple[str, ...], private: bool) -> bool:
        """``wants`` from an update's topics and private flag alone (before its data)."""
        selected = any(s.matches(t) for t in topics for s in self._selectors)
        return selected and self._may_see(topics, private)


class Stream:
    """The part of an open subscription the hub drives; subclasses own the connection.

    ``cursor`` is the sequence number of the last entry written (or skipped as not owed);
    ``live`` turns on when the replay is done; ``active`` says something was written
    since the last heartbeat tick.
    """

    __slots__ = (
        "active",
        "claims",
        "closed",
        "cursor",
        "deadline",
        "hub",
        "id",
        "interest",
        "live",
        "sid",
        "topics",
        "upto_position",
    )

    def __init__(
        self, hub: Hub, subscriber_id: str, topics: tuple[str, ...], claims: Claims | None
    ) -> None:
        self.hub = hub
        self.id = subscriber_id
        self.topics = topics
        self.claims = claims
        self.interest = Interest(topics, claims.subscribe if claims is not None else None)
        self.sid = -1
        self.cursor = 0
        self.upto_position: Any = None
        self.live = False
        self.active = True
        self.closed = False
        self.deadline: asyncio.TimerHandle | None = None

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
        settings = self.hub.settings
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
        expires = self.claims.expires_at if self.claims is not None else None
        if expires is not None:
            ends.append((expires, "token expired", "disconnected: the token expired"))
        if not ends:
            return
        at, reason, detail = min(ends)
        loop = self.hub.loop
        self.deadline = loop.call_at(loop.time() + max(0.0, at - now), self.close, reason, detail)

    def disarm(self) -> None:
        """Cancel the deadline (the stream is over)."""
        if self.deadline is not None:
            self.deadline.cancel()
            self.deadline = None


async def replay(stream: Stream, after: Any) -> None:
    """Send ``stream`` the stored updates after position ``after`` (None: all of them) that
    it wants, up to what the hub had delivered when it registered, then make it live.

    Updates still in the ring come from there; older ones from the transport, in bounded
    steps. Each is tested against the subscriber's own selectors, never against the whole
    index. At most ``max_replays`` replays read and write at once; the rest wait their
    turn. A replay whose client stops reading (its socket is full) gives up its turn and
    what it read but could not write, waits for the socket to drain (at most the dispatch
    timeout), then reads on from the last update written.
    """
    hub = stream.hub
    upto = (stream.cursor, stream.upto_position)
    position = after
    while not stream.closed:
        async with hub.replays:
            done, position = await _replay_step(stream, position, *upto)
        if done:
            break
        await stream.writable()
    if after is not None and (upto[1] is None or after > upto[1]):
        await _overtake(stream, after)
    if not stream.closed:
        stream.go_live()


async def _overtake(stream: Stream, after: Any) -> None:
    """The client resumes from an update this node had not delivered when it registered
    (nodes tail the shared stream each at its own pace): wait until the node has, and
    start the stream after it, so that nothing the client has is sent again."""
    ring = stream.hub.ring
    while not stream.closed and (ring.head_position is None or ring.head_position < after):
        await asyncio.sleep(0.02)
    # no await since the check: entries up to ``after`` are held, or were evicted
    stream.cursor = max(stream.cursor, ring.seq_after(after) - 1)


async def _replay_step(
    stream: Stream, position: Any, upto_seq: int, upto_position: Any
) -> tuple[bool, Any]:
    """Replay from ``position`` until done (True) or the socket is full (False); returns
    that and the position of the last update written or skipped."""
    hub, ring = stream.hub, stream.hub.ring
    while not stream.closed:  # from the transport, up to what the ring still holds
        first = ring.get(ring.first) if ring.first <= upto_seq else None
        if first is not None:
            if position is not None and position >= first.position:
                break
            batch = await hub.transport.read(
                position, first.position, None, REPLAY_ROWS, REPLAY_BYTES, stream.interest.selects
            )
            if not batch:
                if ring.first <= first.seq:
                    break  # the ring still holds what follows: it takes over from here
                continue  # the ring moved on while we read: read what it dropped
        else:
            if upto_position is None or (position is not None and position >= upto_position):
                break
            batch = await hub.transport.read(
                position, None, upto_position, REPLAY_ROWS, REPLAY_BYTES, stream.interest.selects
            )
            if not batch:
                break
        position, full = await _send_wanted(stream, batch, position)
        if full:
            return False, position
    # no await between the last check above and this: the ring cannot move meanwhile
    held = ring.between(ring.seq_after(position) - 1, upto_seq)
    for start in range(0, len(held), REPLAY_ROWS):
        if stream.closed:
            break
        position, full = await _send_wanted(stream, held[start : start + REPLAY_ROWS], position)
        if full:
            return False, position
    return True, position


async def _send_wanted(stream: Stream, batch: Sequence[Entry], position: Any) -> tuple[Any, bool]:
    """Write the entries of ``batch`` the stream wants; returns the position replay goes on
    from and whether the socket filled up before all were written."""
    wanted = [e for e in batch if stream.interest.wants(e.update)]
    written = await stream.write_replayed(wanted) if wanted else 0
    stream.hub.metrics.replayed += written
    if written == len(wanted):
        if not wanted:
            await asyncio.sleep(0)  # a long run of unwanted rows still lets others in
        return batch[-1].position, False
    unwritten = wanted[written]
    for i, entry in enumerate(batch):  # go on right before the first update not written
        if entry is unwritten:
            return (batch[i - 1].position if i else position), True
    raise AssertionError("a wanted entry is not in its batch")
