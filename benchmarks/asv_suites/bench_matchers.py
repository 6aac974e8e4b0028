"""asv suite: every Matcher implementation side by side on the amqp and threads workloads.

- ``AmqpLookup`` / ``AmqpChurn``: the NATS-sublist-style ``amqp`` workload (one pattern per
  subscriber, 5 tokens, up to 5 levels, ``*``/``#``) at 1k / 10k / 100k subscribers:
  one lookup, one subscribe+unsubscribe.
- ``AmqpMemory``: bytes of RSS per subscription and the peak memory of a build.
- ``IotLookup``: one never-seen IoT-shaped MQTT topic (``iot`` workload) at 10k / 100k,
  for the MQTT-capable implementations.
- ``DeviceLookup``: the same on the ``iot-fleet`` and ``industrial`` workloads at 100k (a
  fleet's device readings, ~100 recipients; a plant's, six levels deep, ~1,000).
- ``Threads``: matchbox's concurrency benchmark, 1-8 threads x 1000 ops, 1:1 and 1:3
  insert:lookup, from an empty matcher.

paho (MQTT only) runs the same workload translated to MQTT syntax ('.'->'/', '*'->'+').

This asv_runner re-runs ``setup`` between every timed call when ``number`` > 1, so
built matchers are memoized per process: setup is a dict probe after the first build,
and lookups or subscribe+unsubscribe pairs leave the matcher as it was.
"""

from __future__ import annotations

import functools
import gc
import itertools
import threading
from collections.abc import Callable, Iterator
from typing import ClassVar

from skipfilter.bench import workloads
from skipfilter.bench.registry import IMPLEMENTATIONS, make_matcher
from skipfilter.matcher import Matcher
from skipfilter.selectors import TypedSelector

NAMES = list(IMPLEMENTATIONS)
SIZES = [1_000, 10_000, 100_000]
MESSAGES = 2_000
#: Combinations too slow to build or to look up in reasonable time (seconds per call).
SLOW = {("cachedscan", 100_000)}


def syntax_of(name: str) -> str:
    return "amqp" if "amqp" in IMPLEMENTATIONS[name].syntaxes else "mqtt"


def _to_mqtt(text: str) -> str:
    return workloads.respell(text, "amqp", "mqtt")


def converter(name: str) -> Callable[[str], str]:
    return _to_mqtt if syntax_of(name) == "mqtt" else str


def _text(selector: str | TypedSelector) -> str:
    """A workload selector as text: the amqp workload spells every selector as one."""
    assert isinstance(selector, str), selector
    return selector


@functools.cache
def workload(name: str, n: int) -> tuple[list[list[str]], list[list[str]]]:
    """Selectors per subscriber and topics per message, in the syntax of ``name``."""
    work = workloads.amqp(n, MESSAGES, seed=0)
    conv = converter(name)
    subscribers = [[conv(_text(s)) for s in sub.selectors] for sub in work.subscribers]
    messages = [[conv(t) for t in msg.topics] for msg in work.messages]
    return subscribers, messages


def build(name: str, n: int) -> Matcher:
    matcher = make_matcher(name, syntax_of(name))
    for selectors in workload(name, n)[0]:
        matcher.subscribe(selectors)
    return matcher


#: Implementations whose per-topic caches can hold the workload's 3905 topics (or most):
#: warmed before timing, so lookups measure their steady state. The others have no
#: per-topic cache (CachedScan's (selector, topic) LRU cannot hold n x 3905 pairs).
WARMED = {"topicindex", "lockedtrie"}


@functools.cache
def built(name: str, n: int) -> Matcher:
    """A matcher holding the n subscribers; per-topic caches warmed by a pass of the messages."""
    matcher = build(name, n)
    if name in WARMED:
        for topics in workload(name, n)[1]:
            matcher.match(topics)
    return matcher


@functools.cache
def _cursor(suite: str, name: str, n: int, period: int) -> Iterator[int]:
    """Positions 0, 1, ... (mod period) for one suite, kept across setup reruns.

    asv-runner >= 0.3 re-runs setup before every timed call (asv#966): a cursor kept
    on ``self`` would restart at 0 each call and time one item over and over.
    """
    return itertools.cycle(range(period))


def skip_slow(name: str, n: int) -> None:
    if (name, n) in SLOW:
        raise NotImplementedError(f"{name} at {n} subscribers is too slow")


class AmqpLookup:
    """One match of a message on the amqp workload, caches warm (a steady state)."""

    params = (NAMES, SIZES)
    param_names: ClassVar[list[str]] = ["implementation", "subscribers"]
    number = 5  # linearscan at 100k takes a good part of a second a call
    repeat = (3, 10, 5.0)
    rounds = 1
    timeout = 600

    def setup(self, name: str, n: int) -> None:
        skip_slow(name, n)
        self.matcher = built(name, n)
        self.messages = workload(name, n)[1]
        self.positions = _cursor("lookup", name, n, len(self.messages))

    def time_match(self, name: str, n: int) -> None:
        self.matcher.match(self.messages[next(self.positions)])


MQTT_NAMES = [name for name in NAMES if "mqtt" in IMPLEMENTATIONS[name].syntaxes]
IOT_MESSAGES = 50_000  # more than a run's calls: each topic is looked up once


#: The MQTT workloads of never-published device readings, by name.
DEVICE_WORKLOADS = {
    "iot": workloads.iot,
    "iot-fleet": workloads.iot_fleet,
    "industrial": workloads.industrial,
}


@functools.cache
def device_built(workload: str, name: str, n: int) -> tuple[Matcher, list[list[str]]]:
    """A matcher holding ``workload``'s n MQTT subscribers, and its never-seen topics."""
    work = DEVICE_WORKLOADS[workload](n, IOT_MESSAGES, seed=0)
    matcher = make_matcher(name, "mqtt")
    for sub in work.subscribers:
        matcher.subscribe(list(sub.selectors))
    return matcher, [list(msg.topics) for msg in work.messages]


class IotLookup:
    """One match of a never-seen IoT-shaped MQTT topic (the ``iot`` workload)."""

    params = (MQTT_NAMES, [10_000, 100_000])
    param_names: ClassVar[list[str]] = ["implementation", "subscribers"]
    number = 20
    repeat = (3, 10, 5.0)
    rounds = 1
    timeout = 600

    def setup(self, name: str, n: int) -> None:
        skip_slow(name, n)
        self.matcher, self.messages = device_built("iot", name, n)
        self.positions = _cursor("iot", name, n, len(self.messages))

    def time_match(self, name: str, n: int) -> None:
        self.matcher.match(self.messages[next(self.positions)])


class DeviceLookup:
    """One match of a never-seen device reading (``iot-fleet``, ``industrial`` workloads)."""

    params = (["iot-fleet", "industrial"], MQTT_NAMES, [100_000])
    param_names: ClassVar[list[str]] = ["workload", "implementation", "subscribers"]
    number = 20
    repeat = (3, 10, 5.0)
    rounds = 1
    timeout = 600

    def setup(self, workload: str, name: str, n: int) -> None:
        skip_slow(name, n)
        self.matcher, self.messages = device_built(workload, name, n)
        self.positions = _cursor(workload, name, n, len(self.messages))

    def time_match(self, workload: str, name: str, n: int) -> None:
        self.matcher.match(self.messages[next(self.positions)])


class AmqpChurn:
    """One subscribe and one unsubscribe of a new pattern on the amqp workload."""

    params = (NAMES, SIZES)
    param_names: ClassVar[list[str]] = ["implementation", "subscribers"]
    number = 50
    repeat = (3, 10, 10.0)
    rounds = 1
    timeout = 600

    def setup(self, name: str, n: int) -> None:
        skip_slow(name, n)
        self.matcher = built(name, n)
        self.selectors = workload(name, n)[0]
        self.positions = _cursor("churn", name, n, len(self.selectors))

    def time_subscribe_unsubscribe(self, name: str, n: int) -> None:
        self.matcher.unsubscribe(self.matcher.subscribe(self.selectors[next(self.positions)]))


def _rss() -> int:
    """Resident set size of this process, in bytes (Linux)."""
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * 4096


class AmqpMemory:
    """Memory held per subscription (RSS growth of one build) and the peak of a build."""

    params = (NAMES, SIZES)
    param_names: ClassVar[list[str]] = ["implementation", "subscribers"]
    timeout = 600
    unit = "bytes"

    def setup(self, name: str, n: int) -> None:
        skip_slow(name, n)
        workload(name, n)

    def track_bytes_per_subscription(self, name: str, n: int) -> float:
        gc.collect()
        before = _rss()
        matcher = build(name, n)
        gc.collect()
        held = _rss() - before
        assert len(matcher) == n
        return held / n

    track_bytes_per_subscription.unit = "bytes"  # type: ignore[attr-defined]

    def peakmem_build(self, name: str, n: int) -> None:
        build(name, n)


Step = tuple[list[str] | None, list[str] | None]  # (selectors to subscribe, topics to match)


def _step(op: workloads.Op, conv: Callable[[str], str]) -> Step:
    if op.subscriber is not None:
        return [conv(_text(s)) for s in op.subscriber.selectors], None
    assert op.message is not None
    return None, [conv(t) for t in op.message.topics]


class Threads:
    """matchbox's benchmark: each thread 1000 ops, insert:lookup 1:1 or 1:3, from empty."""

    params = (NAMES, [1, 2, 4, 8], [1, 3])
    param_names: ClassVar[list[str]] = ["implementation", "threads", "lookups_per_insert"]
    number = 1
    repeat = (1, 3, 5.0)
    rounds = 1
    timeout = 600

    def setup(self, name: str, threads: int, lookups: int) -> None:
        conv = converter(name)
        self.matcher = make_matcher(name, syntax_of(name))
        self.plans = [
            [_step(op, conv) for op in ops] for ops in workloads.threads(threads, 1000, lookups)
        ]

    def time_threads(self, name: str, threads: int, lookups: int) -> None:
        matcher = self.matcher

        def run(plan: list[Step]) -> None:
            for selectors, topics in plan:
                if selectors is not None:
                    matcher.subscribe(selectors)
                elif topics is not None:
                    matcher.match(topics)

        workers = [threading.Thread(target=run, args=(plan,)) for plan in self.plans]
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join()
