"""The replay that brings a reconnecting subscriber up to date, from the ring and the
transport's history, before its stream goes live.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any, Protocol

from skipfilter.hub.core.metrics import Metrics
from skipfilter.hub.core.ring import Ring
from skipfilter.hub.core.stream import Stream
from skipfilter.hub.transports import Transport
from skipfilter.hub.update import Entry

#: Rows and bytes read from the history per replay step (then the loop serves others).
REPLAY_ROWS = 256
REPLAY_BYTES = 1 << 20


class History(Protocol):
    """Where a replay reads from: the ring, the transport behind it, the semaphore that
    bounds concurrent replays, and the metrics that count what was replayed."""

    @property
    def ring(self) -> Ring: ...

    @property
    def transport(self) -> Transport: ...

    @property
    def replays(self) -> asyncio.Semaphore: ...

    @property
    def metrics(self) -> Metrics: ...


async def replay(history: History, stream: Stream, after: Any) -> None:
    """Send ``stream`` the stored updates after position ``after`` (None: all of them) that
    it wants, up to what the hub had delivered when it registered, then make it live.

    Updates still in the ring come from there; older ones from the transport, in bounded
    steps. Each is tested against the subscriber's own selectors, never against the whole
    index. At most ``max_replays`` replays read and write at once; the rest wait their
    turn. A replay whose client stops reading (its socket is full) gives up its turn and
    what it read but could not write, waits for the socket to drain (at most the dispatch
    timeout), then reads on from the last update written.
    """
    upto = (stream.cursor, stream.upto_position)
    position = after
    while not stream.closed:
        async with history.replays:
            done, position = await _replay_step(history, stream, position, *upto)
        if done:
            break
        await stream.writable()
    if after is not None and (upto[1] is None or after > upto[1]):
        await _overtake(history.ring, stream, after)
    if not stream.closed:
        stream.go_live()


async def _overtake(ring: Ring, stream: Stream, after: Any) -> None:
    """The client resumes from an update this node had not delivered when it registered
    (nodes tail the shared stream each at its own pace): wait until the node has, and
    start the stream after it, so that nothing the client has is sent again."""
    while not stream.closed and (ring.head_position is None or ring.head_position < after):
        await asyncio.sleep(0.02)
    # no await since the check: entries up to ``after`` are held, or were evicted
    stream.cursor = max(stream.cursor, ring.seq_after(after) - 1)


async def _replay_step(
    history: History, stream: Stream, position: Any, upto_seq: int, upto_position: Any
) -> tuple[bool, Any]:
    """Replay from ``position`` until done (True) or the socket is full (False); returns
    that and the position of the last update written or skipped."""
    ring, transport = history.ring, history.transport
    while not stream.closed:  # from the transport, up to what the ring still holds
        first = ring.get(ring.first) if ring.first <= upto_seq else None
        if first is not None:
            if position is not None and position >= first.position:
                break
            batch = await transport.read(
                position, first.position, None, REPLAY_ROWS, REPLAY_BYTES, stream.interest.selects
            )
            if not batch:
                if ring.first <= first.seq:
                    break  # the ring still holds what follows: it takes over from here
                continue  # the ring moved on while we read: read what it dropped
        else:
            if upto_position is None or (position is not None and position >= upto_position):
                break
            batch = await transport.read(
                position, None, upto_position, REPLAY_ROWS, REPLAY_BYTES, stream.interest.selects
            )
            if not batch:
                break
        position, full = await _send_wanted(history.metrics, stream, batch, position)
        if full:
            return False, position
    # no await between the last check above and this: the ring cannot move meanwhile
    held = ring.between(ring.seq_after(position) - 1, upto_seq)
    for start in range(0, len(held), REPLAY_ROWS):
        if stream.closed:
            break
        position, full = await _send_wanted(
            history.metrics, stream, held[start : start + REPLAY_ROWS], position
        )
        if full:
            return False, position
    return True, position


async def _send_wanted(
    metrics: Metrics, stream: Stream, batch: Sequence[Entry], position: Any
) -> tuple[Any, bool]:
    """Write the entries of ``batch`` the stream wants; returns the position replay goes on
    from and whether the socket filled up before all were written."""
    wanted = [e for e in batch if stream.interest.wants(e) and e.usable()]
    written = await stream.write_replayed(wanted) if wanted else 0
    metrics.replayed += written
    if written == len(wanted):
        if not wanted:
            await asyncio.sleep(0)  # a long run of unwanted rows still lets others in
        return batch[-1].position, False
    unwritten = wanted[written]
    for i, entry in enumerate(batch):  # go on right before the first update not written
        if entry is unwritten:
            return (batch[i - 1].position if i else position), True
    raise AssertionError("a wanted entry is not in its batch")
