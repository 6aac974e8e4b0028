"""The hub itself, without HTTP: one TopicIndex, the transport, the ring, the open streams.

A publish is stored once (group commit), matched once (one bitmap), appended to the ring
once, and its one encoded chunk is offered to each recipient's stream: nothing is done per
non-recipient, nobody else is woken, nothing is copied per recipient. Matching, ring
append and fan-out run on the event loop, in commit order, which is what makes "register,
then note the ring head" atomic with respect to delivery.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Iterator, Sequence
from typing import Any, Protocol

from skipfilter.hub.core.fanout import FanOut
from skipfilter.hub.core.heap import HeapTrimmer
from skipfilter.hub.core.metrics import Metrics
from skipfilter.hub.core.ring import Ring
from skipfilter.hub.core.stream import Stream
from skipfilter.hub.settings import HubSettings
from skipfilter.hub.transports import Transport, TransportUnavailable, open_transport
from skipfilter.hub.update import EARLIEST, Entry, Update, http_chunk

log = logging.getLogger("skipfilter.hub")

#: Longest wait (seconds) between two attempts to reach the transport at start-up.
START_RETRY_MAX = 10.0

IndexFactory = Callable[[], Any]
#: Seconds a publisher waits for its update to be stored and delivered before a 503.
DELIVERY_TIMEOUT = 30.0
#: Seconds fan-out may hold entries without progress before the hub reports it stuck.
STUCK_AFTER = 10.0


def default_index_factory(settings: HubSettings) -> IndexFactory:
    """The hub's TopicIndex, sized from the settings: URL Patterns and exact topics
    (Mercure 1.0), plus 0.x's selectors in compatibility mode, all against one base URL."""
    from skipfilter.index import TopicIndex

    base, size = settings.pattern_base_url, settings.cache_size
    if not settings.compatibility:
        return lambda: TopicIndex("urlpattern", size, base_url=base)
    return lambda: TopicIndex("urlpattern", size, base_url=base, extra_syntaxes=("mercure",))


class SubscriptionEvents(Protocol):
    """What announces subscriptions (draft-08 §8) as the protocol shapes them: an event
    when a stream registers and when it leaves, and a recorded one (another node's) again."""

    presence: Any  # the transport's record of every node's subscriptions (None: none)

    def opened(self, stream: Stream) -> None: ...

    def closed(self, stream: Stream) -> None: ...

    def recorded_update(self, doc: dict[str, Any]) -> Update: ...


class Hub:
    """Matching, storage and fan-out for one hub; the HTTP layer lives in ``app``."""

    def __init__(self, settings: HubSettings, index_factory: IndexFactory | None = None) -> None:
        self.settings = settings
        factory = index_factory or default_index_factory(settings)
        self.index = factory()
        self.transport: Transport = open_transport(settings)
        self.ring = self._ring_at_start()
        self.last_id = self.transport.last_id_at_start
        self.metrics = Metrics()
        self.stopping = False
        #: Why the transport cannot be reached while ``start`` waits for it (None: not waiting).
        self.waiting: str | None = None
        #: Whether other processes serve this hub's port while this one drains (a worker
        #: replaced on SIGHUP): ``/healthz`` then speaks for the port, not this process.
        self.others_serve: Callable[[], bool] = lambda: False
        self.replays = asyncio.Semaphore(settings.max_replays)
        #: Open streams by subscriber id: fan-out reads it, only (un)register change it.
        self.open_streams: dict[int, Stream] = {}
        self._fanout: FanOut | None = None
        self.presence: Any = None  # subscriptions of every node, with a shared transport
        #: This node's subscriptions and their events, in the protocol's shape: the app
        #: sets it (``frontends/v1/subscription_events``) when subscription events are on.
        self.book: SubscriptionEvents | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._ticker: asyncio.Task[None] | None = None
        self._publishing: set[asyncio.Future[Entry]] = set()  # accepted, not yet answered
        self.heap: HeapTrimmer | None = None  # hands freed pattern memory back (heap.py)

    async def start(self) -> None:
        """Start the transport and the heartbeat ticker on the running loop."""
        self._loop = asyncio.get_running_loop()
        self._fanout = FanOut(self._loop, self.match, self.open_streams)
        self.heap = HeapTrimmer(self._loop)
        await self._start_transport()
        # only a started transport knows where this node starts (a shared one reads the
        # newest stored position then): replays and resumes are bounded by it
        self.ring = self._ring_at_start()
        self.last_id = self.transport.last_id_at_start
        if self.book is not None:
            self.presence = self.book.presence = self.transport.presence(
                self.publish_nowait, self.book.recorded_update, self.settings.node_ttl
            )
            if self.presence is not None:
                await self.presence.start()
        if self.settings.heartbeat:
            self._ticker = asyncio.create_task(self._heartbeats(), name="skipfilter-heartbeats")

    async def _start_transport(self) -> None:
        """Start the transport; while it is unreachable (Redis down), wait and retry with
        backoff, saying why, until it answers or the process is told to stop."""
        pause = 0.5
        while True:
            try:
                # a shared transport stops tailing while fan-out has a backlog
                await self.transport.start(self.loop, self._enqueue, self.fanout.__len__)
                self.waiting = None
                return
            except TransportUnavailable as exc:
                if self.stopping:
                    raise
                self.waiting = str(exc)
                log.warning("hub: cannot start yet (%s); retrying in %.1f s", exc, pause)
            waited = 0.0
            while waited < pause and not self.stopping:  # a stop is noticed within 0.1 s
                await asyncio.sleep(0.1)
                waited += 0.1
            if self.stopping:
                raise TransportUnavailable("stopped before the transport could be reached")
            pause = min(pause * 2, START_RETRY_MAX)

    def _ring_at_start(self) -> Ring:
        """An empty ring whose head is the newest update stored when the transport started."""
        return Ring(
            self.settings.ring_size,
            self.settings.ring_bytes,
            head=self.transport.start_seq,
            head_position=self.transport.start_position,
        )

    @property
    def loop(self) -> asyncio.AbstractEventLoop:
        """The event loop the hub runs on (set by ``start``)."""
        assert self._loop is not None, "Hub.start() has not run"
        return self._loop

    # -- publishing ---------------------------------------------------------------------

    async def publish(self, update: Update) -> Entry:
        """Store ``update`` and deliver it; returns once it is durable and handed to every
        connected recipient of this hub. Raises TransportUnavailable when it was not
        stored, or (saying so) when it was but this hub cannot confirm its delivery: a
        hub whose fan-out is stuck refuses publishes instead of acknowledging them.

        Runtime: one share of a group commit, one index match, O(recipients) offers.
        """
        problem = self.problem()
        if problem is not None:
            raise TransportUnavailable(
                f"this hub cannot deliver updates now ({problem}); the update was not stored"
            )
        loop = self.loop
        done: asyncio.Future[Entry] = loop.create_future()
        self.transport.append((update,), (http_chunk(update.encode()),), done)
        self._publishing.add(done)
        # the publisher waits on its own future, so its cancellation (a client gone) leaves
        # ``done`` to the transport and the fan-out; one timer instead of ``wait_for``'s
        # task and callbacks (a tenth of the hub's own time per publish)
        waiter: asyncio.Future[None] = loop.create_future()
        done.add_done_callback(lambda _: _wake(waiter))
        timer = loop.call_later(DELIVERY_TIMEOUT, _wake, waiter)
        try:
            await waiter
        finally:
            timer.cancel()
            self._publishing.discard(done)
        if not done.done():
            raise TransportUnavailable(
                f"no confirmation within {DELIVERY_TIMEOUT:g} s that the update was stored "
                f"and delivered ({self.problem() or 'the hub is overloaded'}); it may still "
                "be delivered"
            )
        return done.result()

    def publish_nowait(self, updates: Sequence[Update]) -> None:
        """Store and deliver the hub's subscription events together, without waiting
        (kept within their own budget, apart from the updates' history)."""
        chunks = [http_chunk(u.encode()) for u in updates]
        self.transport.append(updates, chunks, None, events=True)

    def problem(self) -> str | None:
        """Why this hub cannot deliver updates now (None: it can)."""
        return self._stalled() or self.transport.problem()

    async def health(self) -> str | None:
        """``problem()``, asking the transport again (what ``/healthz`` reports)."""
        transport = await self.transport.check()
        return self._stalled() or transport

    def _stalled(self) -> str | None:
        if self.fanout.failed is not None:
            return f"fan-out failed ({self.fanout.failed[:200]}): restart this hub"
        stalled = self.fanout.stalled()
        if stalled > STUCK_AFTER:
            return f"fan-out has made no progress for {stalled:.0f} s ({len(self.fanout)} waiting)"
        return None

    def _enqueue(self, entries: list[Entry], done: asyncio.Future[Entry] | None) -> None:
        assert self._fanout is not None
        self._fanout.enqueue(entries, done)

    @property
    def fanout(self) -> FanOut:
        """The queue of committed entries on their way out (for metrics and tests)."""
        assert self._fanout is not None, "Hub.start() has not run"
        return self._fanout

    def match(self, entry: Entry) -> Any:
        """Find an entry's recipients (a bitmap of subscriber ids) and append it to the
        ring: fan-out calls this once per entry, in commit order. Only an entry someone
        receives is decoded (``Entry.usable``): one found unusable then goes to nobody."""
        start = time.perf_counter()
        recipients = self.index.match(entry.topics, private=entry.private)
        if recipients and not entry.usable():
            recipients = type(recipients)()
        self.metrics.observe_match(time.perf_counter() - start, len(recipients))
        entry.recipients = recipients
        self.ring.append(entry)
        self.last_id = entry.id
        return recipients

    # -- streams ------------------------------------------------------------------------

    def register(self, stream: Stream) -> None:
        """Add ``stream`` to the index; it gets every update delivered from now on.

        Raises InvalidSelector (nothing changed) for a selector the index refuses.
        """
        grants = stream.grants
        allowed = grants.subscribe if grants is not None else None
        sid = self.index.subscribe(stream.selectors, allowed=allowed, payload=None)
        stream.sid = sid
        stream.cursor = self.ring.head
        stream.upto_position = self.ring.head_position
        self.open_streams[sid] = stream
        self.metrics.subscribes += 1
        self._announce(stream, active=True)

    def unregister(self, stream: Stream, reason: str) -> bool:
        """Remove ``stream`` (idempotent); True the first time. Announces it when
        subscription events are on."""
        if self.open_streams.get(stream.sid) is not stream:
            return False
        del self.open_streams[stream.sid]
        self.index.unsubscribe(stream.sid)
        self.metrics.disconnects[reason] += 1
        self._announce(stream, active=False)
        stream.forget()
        if self.heap is not None:
            self.heap.closed()
        return True

    def __len__(self) -> int:
        return len(self.open_streams)

    def streams(self) -> Iterator[Stream]:
        """Open streams, oldest first."""
        return iter(list(self.open_streams.values()))

    def resume_id(self, stream: Stream, requested: Entry | None) -> str:
        """The response's ``Last-Event-ID``: the newest update before the stream's start
        that this subscriber may see, looked for among the ring's newest entries."""
        from skipfilter.hub.sse import header_safe

        interest = stream.interest
        if requested is not None:
            if interest.may_see(requested) and header_safe(requested.id):
                return requested.id
            start = requested.seq - 1
        else:
            start = self.ring.head
        for entry in self.ring.backwards(start, self.settings.resume_scan):
            if interest.may_see(entry) and header_safe(entry.id):
                return entry.id
        return EARLIEST

    # -- subscription events and API ----------------------------------------------------

    def _announce(self, stream: Stream, active: bool) -> None:
        if self.book is not None:
            (self.book.opened if active else self.book.closed)(stream)

    # -- heartbeats, shutdown -----------------------------------------------------------

    async def _heartbeats(self) -> None:
        """Every half heartbeat, a comment to each stream that wrote nothing since the last
        tick: no stream stays silent longer than ``heartbeat`` seconds."""
        period = self.settings.heartbeat / 2
        while True:
            await asyncio.sleep(period)
            for stream in list(self.open_streams.values()):
                if stream.active:
                    stream.active = False
                else:
                    stream.heartbeat()

    def drain(self, give_up_in: float) -> None:
        """Stop serving subscribers (new ones are refused, open streams end so their clients
        resume with the last id they got); publishes already accepted still complete, and
        any unanswered ``give_up_in`` seconds from now fails with TransportUnavailable (it
        may or may not have been stored)."""
        self.stop_streams()
        self.loop.call_later(give_up_in, self._give_up_publishes)

    def _give_up_publishes(self) -> None:
        failure = TransportUnavailable(
            "the hub is shutting down and the update was not confirmed in time: "
            "it may or may not have been stored"
        )
        for done in list(self._publishing):
            if not done.done():
                done.set_exception(failure)

    def begin_stopping(self, others_serve: Callable[[], bool] | None = None) -> None:
        """The process is told to stop: a start still waiting for its transport gives up.
        ``others_serve`` says whether other workers serve the port meanwhile (a worker
        replaced on SIGHUP), which ``/healthz`` and ``/readyz`` then answer for."""
        self.stopping = True
        if others_serve is not None:
            self.others_serve = others_serve

    def stop_streams(self) -> None:
        """End every open stream (server shutdown); new subscribers are refused."""
        self.stopping = True
        for stream in list(self.open_streams.values()):
            stream.close("server shutdown", "disconnected: the hub is shutting down")

    async def close(self) -> None:
        """Stop the ticker, leave the cluster, stop the transport."""
        if self._ticker is not None:
            self._ticker.cancel()
        if self.presence is not None:
            await self.presence.stop()
        await self.transport.close()


def _wake(waiter: asyncio.Future[None]) -> None:
    if not waiter.done():
        waiter.set_result(None)
