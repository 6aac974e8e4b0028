"""Fan-out: committed entries to their recipients, in commit order, batched under load.

Entries are matched and appended to the ring when they reach the front of the queue. When
several are waiting (publishes arrived while a fan-out was running), they go out together:
the subscribers who receive all of them get one write of their chunks joined once, shared
by every such subscriber; the others get each entry they receive on its own, in order. So
a burst costs one socket write per subscriber instead of one per update, which is where a
broadcast's time goes (the kernel's send path, not Python). Work is cut into slices of
``SLICE`` offers, so one broadcast to 20,000 never holds the event loop for long.
"""

from __future__ import annotations

import asyncio
import time
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from skipfilter.hub.update import Batch, Entry

if TYPE_CHECKING:
    from skipfilter.hub.core.stream import Stream

#: Offers made per turn of the event loop before fan-out yields to other work.
SLICE = 4096
#: Most entries, and most bytes of chunks, sent together in one batch (``update.Batch``).
MAX_BATCH = 32
MAX_BATCH_BYTES = 1 << 20


class FanOut:
    """The queue of committed entries and the loop callback that delivers them.

    ``match(entry)`` computes an entry's recipients bitmap (and appends it to the ring);
    ``streams`` maps subscriber ids to open streams (the hub's ``match`` and
    ``open_streams``). Runs on the event loop only.
    """

    def __init__(
        self,
        loop: asyncio.AbstractEventLoop,
        match: Callable[[Entry], Any],
        streams: Mapping[int, Stream],
    ) -> None:
        self._loop = loop
        self._match = match
        self._streams = streams
        self._queue: deque[tuple[Entry, asyncio.Future[Entry] | None]] = deque()
        self._batch: Batch | None = None
        self._scheduled = False
        self.batches = 0  # batches of several entries sent (each entry is in one batch)
        self.seconds = 0.0  # time spent delivering
        self._progress_at = time.monotonic()  # last slice delivered (or queue found empty)
        self.failed: str | None = None  # why delivery stopped for good, if it did

    def enqueue(self, entries: Sequence[Entry], done: asyncio.Future[Entry] | None) -> None:
        """Queue ``entries`` (in commit order); ``done`` gets the last one once delivered."""
        if not self:
            self._progress_at = time.monotonic()
        queue = self._queue
        if done is None:
            queue.extend([(entry, None) for entry in entries])
        elif entries:
            queue.extend([(entry, None) for entry in entries[:-1]])
            queue.append((entries[-1], done))
        if not self._scheduled:
            self._scheduled = True
            self._loop.call_soon(self._run)

    def __len__(self) -> int:
        return len(self._queue) + (len(self._batch.entries) if self._batch else 0)

    def stalled(self) -> float:
        """Seconds entries have waited without fan-out making progress (0 when none wait)."""
        return time.monotonic() - self._progress_at if self else 0.0

    def _take(self) -> Batch:
        """Match the next entries (at least one) and plan their delivery."""
        queue = self._queue
        entries: list[Entry] = []
        dones: list[tuple[asyncio.Future[Entry], Entry]] = []  # each publisher, its own
        size = 0
        while queue and len(entries) < MAX_BATCH and (not entries or size < MAX_BATCH_BYTES):
            entry, done = queue.popleft()
            entries.append(entry)
            size += entry.size
            if done is not None:
                dones.append((done, entry))
        match = self._match
        bitmaps = [match(entry) for entry in entries]
        batch = Batch(entries, dones)
        if len(bitmaps) == 1:
            batch.steps.append((None, bitmaps[0].to_array()))
            return batch
        self.batches += 1
        if not any(bitmaps):  # delivered to nobody here (a shared history's usual case)
            return batch
        common = bitmaps[0].intersection(*bitmaps[1:])
        batch.steps.append((None, common.to_array()))
        for entry, bitmap in zip(entries, bitmaps, strict=True):
            rest = bitmap.difference(common)
            if rest:
                batch.steps.append((entry, rest.to_array()))
        return batch

    def _run(self) -> None:
        started = time.perf_counter()
        try:
            self._deliver()
        except Exception as exc:  # a bug: nothing is delivered from now on; say so
            self.failed = f"{type(exc).__name__}: {exc}"
            raise
        finally:
            self.seconds += time.perf_counter() - started
            self._progress_at = time.monotonic()

    def _deliver(self) -> None:
        budget = SLICE
        streams = self._streams
        while True:
            batch = self._batch
            if batch is None:
                if not self._queue:
                    self._scheduled = False
                    return
                batch = self._batch = self._take()
            while batch.step < len(batch.steps):
                entry, sids = batch.steps[batch.step]
                start = batch.at
                end = min(len(sids), start + budget)
                if entry is None:
                    for sid in sids[start:end]:
                        stream = streams.get(sid)
                        if stream is not None:
                            stream.offer_batch(batch)
                else:
                    for sid in sids[start:end]:
                        stream = streams.get(sid)
                        if stream is not None:
                            stream.offer(entry)
                budget -= end - start
                if end < len(sids):
                    batch.at = end
                    self._loop.call_soon(self._run)
                    return
                batch.step += 1
                batch.at = 0
            self._batch = None
            for done, entry in batch.dones:
                if not done.done():
                    done.set_result(entry)
            if budget <= 0 and self._queue:
                self._loop.call_soon(self._run)
                return
