"""Fan-out, the ring, replay and native streams against an oracle: every stream gets
exactly the updates it selects from where it started (registration, or a Last-Event-ID
replayed from the ring and the SQLite history), once, in order, however publishes batch up,
the ring moves on during a replay, and sockets fill and drain; a stream that falls behind
the ring gets a prefix and is closed with the reason. The socket is an in-memory stand-in
whose fullness the test controls (real sockets are exercised by the other hub tests)."""

from __future__ import annotations

import asyncio
import re
import threading
from pathlib import Path
from typing import Any

from hypothesis import settings as hypothesis_settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from skipfilter.hub import HubSettings
from skipfilter.hub.core import fanout
from skipfilter.hub.core.hub import Hub
from skipfilter.hub.core.replay import replay
from skipfilter.hub.server.fast_paths import NativeStream
from skipfilter.hub.transports.sqlite import _Call
from skipfilter.hub.update import Entry, Update
from skipfilter.selectors import TypedSelector
from tests.mutants import mutant_search

TOPICS = [f"https://example.com/t/{i}" for i in range(4)]
_ID = re.compile(rb"id: (u\d+)\n")


class MemoryTransport(asyncio.Transport):
    """An in-memory socket of ``capacity`` unread bytes: past it, it pauses its stream as
    a real transport pauses its protocol; ``read()`` is the client catching up."""

    def __init__(self, capacity: int) -> None:
        super().__init__()
        self.data = bytearray()
        self.unread = 0
        self.capacity = capacity
        self.closing = False
        self.stream: NativeStream | None = None

    def write(self, data: Any) -> None:
        assert not self.closing, "write after close"
        stream = self.stream
        assert stream is None or stream.closed or not stream.paused, "write to a full socket"
        self.data += data
        self.unread += len(data)
        if stream is not None and self.unread > self.capacity and not stream.closed:
            stream.pause()

    def read(self) -> None:
        self.unread = 0
        if self.stream is not None and self.stream.paused and not self.stream.closed:
            self.stream.resume()

    def is_closing(self) -> bool:
        return self.closing

    def close(self) -> None:
        self.closing = True

    def abort(self) -> None:
        self.closing = True

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return default

    def ids(self) -> list[str]:
        return [m.decode() for m in _ID.findall(bytes(self.data))]


class FanOutMachine(RuleBasedStateMachine):
    """Random subscribes, unsubscribes, publishes (several queued at once form batches),
    clients reading, and loop turns."""

    slice_size = fanout.SLICE

    def __init__(self) -> None:
        super().__init__()
        fanout.SLICE = self.slice_size
        self.loop = asyncio.new_event_loop()
        path = Path(self.loop.run_until_complete(asyncio.to_thread(_tempdir)))
        self.settings = HubSettings(
            anonymous=True,
            history_path=str(path / "h.sqlite3"),
            ring_size=6,
            history_size=1000,
            heartbeat=0,
            dispatch_timeout=0,
            write_timeout=0,
        )
        self.hub = Hub(self.settings)
        self.loop.run_until_complete(self.hub.start())
        self.published: list[tuple[str, str]] = []  # (id, topic), in order
        self.streams: list[tuple[NativeStream, MemoryTransport, frozenset[str], int]] = []
        self.tasks: list[asyncio.Task[None]] = []

    def teardown(self) -> None:
        fanout.SLICE = FanOutMachine.slice_size
        for task in self.tasks:
            task.cancel()
        self.loop.run_until_complete(asyncio.sleep(0))
        self.loop.run_until_complete(self.hub.close())
        self.loop.close()

    def _open(self, topics: frozenset[str], capacity: int) -> NativeStream:
        transport = MemoryTransport(capacity)
        name = f"s{len(self.streams)}"
        stream = NativeStream(
            self.hub, name, tuple(map(TypedSelector, sorted(topics))), None, transport
        )
        transport.stream = stream
        self.hub.register(stream)
        return stream

    @rule(
        topics=st.frozensets(st.sampled_from(TOPICS), min_size=1, max_size=2),
        capacity=st.sampled_from([10, 30, 60, 10_000]),
    )
    def subscribe(self, topics: frozenset[str], capacity: int) -> None:
        stream = self._open(topics, capacity)
        stream.go_live()
        # it gets what is matched from now on: entries stored but not yet matched included
        self.streams.append((stream, stream.transport, topics, self.hub.ring.head))  # type: ignore[arg-type]

    @rule(
        topics=st.frozensets(st.sampled_from(TOPICS), min_size=1, max_size=2),
        capacity=st.sampled_from([30, 60, 10_000]),
        data=st.data(),
    )
    def reconnect(self, topics: frozenset[str], capacity: int, data: st.DataObject) -> None:
        """A client resuming after an update it got (or from the start): a replay task."""
        stored = self.hub.ring.head  # every update up to here is stored and matched
        after = min(stored, data.draw(st.integers(0, 200)))  # drawn apart from timing
        stream = self._open(topics, capacity)
        self.tasks.append(self.loop.create_task(replay(self.hub, stream, after or None)))
        self.streams.append((stream, stream.transport, topics, after))  # type: ignore[arg-type]

    @precondition(lambda self: self.streams)
    @rule(data=st.data())
    def unsubscribe(self, data: st.DataObject) -> None:
        stream, *_ = data.draw(st.sampled_from(self.streams))
        stream.close("client disconnected")

    @rule(
        topic=st.sampled_from(TOPICS),
        count=st.integers(1, 4),
        drain_after=st.sampled_from([None, None, 1, 2, 3]),
    )
    def publish(self, topic: str, count: int, drain_after: int | None) -> None:
        """Updates published together; with ``drain_after``, that many single turns of the
        loop, then every full socket drains (its writable event coming between two slices
        of the fan-out: a stream catches up from the ring in the middle of a batch)."""
        updates = []
        for _ in range(count):
            update = Update(f"u{len(self.published) + 1}", (topic,), "x")
            updates.append(update)
            self.published.append((update.id, topic))
        self.hub.transport.append(updates, [Entry.of(0, u).chunk for u in updates], None)
        self._committed()
        if drain_after is not None:
            for _ in range(drain_after):
                self.step()
            for stream, transport, *_ in self.streams:
                if stream.paused:
                    transport.read()

    def _committed(self) -> None:
        """Wait (off the loop) until the history thread has committed what was appended
        and handed it to the loop: the fan-out then starts only at the machine's next
        ``step`` or ``turn``, so the machine, not the thread's timing, chooses where a
        client reads in the middle of a batch."""
        reached = threading.Event()
        transport: Any = self.hub.transport
        transport._jobs.put(_Call(reached.set, self.loop.create_future()))  # after the commit
        assert reached.wait(10), "the history thread did not commit"

    @rule()
    def step(self) -> None:
        """One turn of the loop exactly: with one offer per turn (``SlicedFanOutMachine``),
        one stream gets the batch and the next not yet."""
        self.loop.call_soon(self.loop.stop)
        self.loop.run_forever()

    @precondition(lambda self: self.streams)
    @rule(data=st.data())
    def read(self, data: st.DataObject) -> None:
        _, transport, *_ = data.draw(st.sampled_from(self.streams))
        transport.read()

    @rule(wait=st.sampled_from([0, 0, 0.002]))
    def turn(self, wait: float) -> None:
        self.loop.run_until_complete(asyncio.sleep(wait))

    @invariant()
    def each_stream_gets_a_prefix_of_its_updates_in_order(self) -> None:
        for _stream, transport, topics, since in self.streams:
            expected = [i for i, topic in self.published[since:] if topic in topics]
            got = transport.ids()
            assert got == expected[: len(got)], (got, expected)

    def check_everything_arrives(self) -> None:
        """Drain every socket and the queue: then each open stream has all its updates."""
        for _ in range(500):
            for _stream, transport, *_ in self.streams:
                transport.read()
            self.loop.run_until_complete(asyncio.sleep(0.001))
            settled = self.hub.ring.head == len(self.published) and not len(self.hub.fanout)
            drained = all(s.closed or not s.paused for s, *_ in self.streams)
            if settled and drained and all(task.done() for task in self.tasks):
                break
        for task in self.tasks:
            if task.done():
                task.result()  # a replay that failed fails the test
        for stream, transport, topics, since in self.streams:
            expected = [i for i, topic in self.published[since:] if topic in topics]
            got = transport.ids()
            if stream.closed:
                assert got == expected[: len(got)]
            else:
                assert got == expected, (got, expected)
        fell = self.hub.metrics.disconnects["fell behind"]
        assert fell == sum(
            1 for s, t, *_ in self.streams if s.closed and b"fell behind" in bytes(t.data)
        )

    @rule()
    def settle(self) -> None:
        self.check_everything_arrives()


def _tempdir() -> str:
    import tempfile

    return tempfile.mkdtemp(prefix="fanout-")


class SlicedFanOutMachine(FanOutMachine):
    """One offer per loop turn: sockets drain (and catch up) in the middle of a batch."""

    slice_size = 1


_settings = hypothesis_settings(max_examples=100, stateful_step_count=40, deadline=None)
FanOutMachine.TestCase.settings = _settings
#: The sliced machine searches the same 200 examples on every run (``tests/mutants.py``):
#: random runs of 100 found a duplicate at a batch boundary (a stream offered a batch
#: whose first entry its catch-up had just written) only every other time.
SlicedFanOutMachine.TestCase.settings = hypothesis_settings(
    mutant_search(steps=40), max_examples=200
)
TestFanOut = FanOutMachine.TestCase
TestSlicedFanOut = SlicedFanOutMachine.TestCase


def test_a_stream_that_catches_up_mid_batch_is_not_offered_the_same_entry_again(
    tmp_path: Path,
) -> None:
    async def go() -> list[list[str]]:
        hub = Hub(HubSettings(anonymous=True, history_path=str(tmp_path / "h.db"), heartbeat=0))
        await hub.start()
        transports = []
        for name in ("first", "second"):
            transport = MemoryTransport(10)
            stream = NativeStream(hub, name, (TypedSelector(TOPICS[0]),), None, transport)
            transport.stream = stream
            hub.register(stream)
            stream.go_live()
            transports.append(transport)
        transports[1].write(b"x" * 20)  # the second socket is full before the update
        old, fanout.SLICE = fanout.SLICE, 1
        try:
            hub.fanout.enqueue([Entry.of(1, Update("u1", (TOPICS[0],)))], None)
            await asyncio.sleep(0)  # one offer: to the first stream
            transports[1].capacity = 1000
            transports[1].read()  # the second drains and catches up from the ring
            for _ in range(3):
                await asyncio.sleep(0)  # the fan-out then reaches the second stream
        finally:
            fanout.SLICE = old
            await hub.close()
        return [t.ids() for t in transports]

    assert asyncio.run(go()) == [["u1"], ["u1"]]
