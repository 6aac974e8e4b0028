"""asv suites: the mercure, hot and churn workloads for every mercure-syntax implementation,
and mercure1 (Mercure 1.0: exact and URL Pattern matchers) for the urlpattern ones.

Parametrised over implementation and subscriber count (1k to 1M). Combinations that
would take minutes are skipped by raising NotImplementedError in setup: the scans
(LinearScan, CachedScan) cost O(N) per new topic, so their lookups stop at 100k
(LinearScan: a good part of a second a message there) or 10k (CachedScan, several
times slower on unique topics; docs/benchmarks.md), and nothing but TopicIndex loads
1M subscribers.

``number`` and ``repeat`` are explicit everywhere: left to itself asv picks
``number=1`` after a slow setup, and ``warmup_time`` would burn unique messages.
asv-runner >= 0.3 also re-runs ``setup`` before *every* timed call (asv#966), so the
loaded matchers and the iterators over messages and ops live in per-process memoized
state: a setup rerun is a lookup, and each call still takes the next message.
Every timed call consumes a fresh message, so each sample is a cache miss where the
workload says so. The same comparison in one process, with verified recipients, is
``skipfilter bench`` (docs/benchmarks.md).
"""

from __future__ import annotations

import functools
import itertools
from collections.abc import Iterator
from dataclasses import dataclass

from skipfilter.bench.measure import heap_per_subscriber, implementations, rss_per_subscriber
from skipfilter.bench.scenarios import Scenario, scenario
from skipfilter.bench.workloads import Message, Op, Subscriber
from skipfilter.matcher import Matcher

SIZES = [1_000, 10_000, 100_000, 1_000_000]
SEED = 0


#: Implementations that accept mercure selectors, by display name; the scans apart.
MERCURE = [name for name, impl in implementations().items() if "mercure" in impl.syntaxes]
FAST = [name for name in MERCURE if not implementations()[name].scan]
SLOW = [name for name in MERCURE if implementations()[name].scan]
#: Largest N per implementation for loading subscribers at all.
LOAD_MAX = {"TopicIndex": 1_000_000}
#: Largest N per scan for timing lookups (seconds per call beyond).
LOOKUP_MAX = {"LinearScan": 100_000, "CachedScan": 10_000}


def _check(impl: str, n: int, lookup: bool = False) -> None:
    """Raise NotImplementedError (asv: skipped) for combinations too slow to run."""
    if n > LOAD_MAX.get(impl, 100_000):
        raise NotImplementedError(f"{impl} is not loaded with {n:,} subscribers")
    if lookup and n > LOOKUP_MAX.get(impl, n):
        raise NotImplementedError(f"{impl} lookups at {n:,} take seconds each")


@functools.cache
def _scenario(workload: str, n: int, ops: int) -> Scenario:
    return scenario(workload, n, ops, SEED)


def _loaded(impl: str, scen: Scenario) -> tuple[Matcher, list[int]]:
    matcher = implementations()[impl].make(scen.syntax)
    sids = [matcher.subscribe(s.selectors, s.allowed) for s in scen.subscribers]
    return matcher, sids


@functools.cache
def _lookup_run(workload: str, impl: str, n: int, calls: int) -> tuple[Matcher, Iterator[Message]]:
    """A loaded matcher and the messages it has yet to see, shared by setup reruns."""
    scen = _scenario(workload, n, max(calls, 1_000))
    matcher, _ = _loaded(impl, scen)
    return matcher, itertools.cycle([op.message for op in scen.ops if op.message])


@dataclass
class _ChurnRun:
    """A churn run in progress: the matcher, sids by op index, and the ops left."""

    matcher: Matcher
    sid_at: dict[int, int]
    first: int
    ops: Iterator[tuple[int, Op]]


@functools.cache
def _churn_run(impl: str, n: int, calls: int) -> _ChurnRun:
    scen = _scenario("churn", n, max(2_000, calls))
    matcher, sids = _loaded(impl, scen)
    return _ChurnRun(matcher, dict(enumerate(sids)), len(sids), enumerate(scen.ops))


@functools.cache
def _subscription_run(
    impl: str, n: int, calls: int
) -> tuple[Matcher, Iterator[Subscriber], Iterator[int]]:
    """A loaded matcher, subscribers still to add, and extra sids still to remove."""
    matcher, _ = _loaded(impl, _scenario("mercure", n, 0))
    fresh = scenario("mercure", 2 * calls, 0, SEED + 1).subscribers
    leaving = [matcher.subscribe(s.selectors, s.allowed) for s in fresh[:calls]]
    return matcher, iter(fresh[calls:]), iter(leaving)


class _Lookups:
    """time_match: one message per call, each message used once."""

    workload = "mercure"
    param_names = ("impl", "subscribers")
    warmup_time = 0.0
    processes = 1
    timeout = 900
    number = 100
    repeat = 10

    def setup(self, impl: str, n: int) -> None:
        _check(impl, n, lookup=True)
        calls = self.number * self.repeat + 10
        self.matcher, self.messages = _lookup_run(self.workload, impl, n, calls)

    def time_match(self, impl: str, n: int) -> None:
        message = next(self.messages)
        assert message is not None
        self.matcher.match(message.topics, message.private)


class MercureMatch(_Lookups):
    """Unique topics (cache misses): the path issue 3 is about."""

    params = (FAST, SIZES)


class MercureMatchScan(_Lookups):
    """The scans on unique topics: O(N) per message, so few samples."""

    params = (SLOW, SIZES)
    number = 1
    repeat = 5


class HotMatch(_Lookups):
    """Zipf over 200 hot topics: the cache-hit path."""

    workload = "hot"
    params = (FAST, SIZES)
    number = 500


class HotMatchScan(_Lookups):
    """The scans on hot topics."""

    workload = "hot"
    params = (SLOW, SIZES)
    number = 1
    repeat = 5


class _Churn:
    """time_churn_op: the next op of the churn workload (publish, subscribe or unsubscribe)."""

    param_names = ("impl", "subscribers")
    warmup_time = 0.0
    processes = 1
    timeout = 900
    number = 100
    repeat = 10

    def setup(self, impl: str, n: int) -> None:
        _check(impl, n, lookup=True)
        self.run = _churn_run(impl, n, self.number * self.repeat + 10)

    def time_churn_op(self, impl: str, n: int) -> None:
        run = self.run
        i, op = next(run.ops)
        if op.message is not None:
            run.matcher.match(op.message.topics, op.message.private)
        elif op.subscriber is not None:
            run.sid_at[run.first + i] = run.matcher.subscribe(
                op.subscriber.selectors, op.subscriber.allowed
            )
        else:
            run.matcher.unsubscribe(run.sid_at[op.target])


class Churn(_Churn):
    """Half publishes, half subscribes/unsubscribes, interleaved."""

    params = (FAST, SIZES)


class ChurnScan(_Churn):
    """The scans under churn."""

    params = (SLOW, SIZES)
    number = 2
    repeat = 5


class Subscriptions:
    """time_subscribe / time_unsubscribe: one subscriber more or less at N (target < 20 us)."""

    params = (MERCURE, SIZES)
    param_names = ("impl", "subscribers")
    warmup_time = 0.0
    processes = 1
    timeout = 900
    number = 200
    repeat = 10

    def setup(self, impl: str, n: int) -> None:
        _check(impl, n)
        calls = self.number * self.repeat + 10
        # Extra subscribers for time_unsubscribe to remove, one per call.
        self.matcher, self.fresh, self.leaving = _subscription_run(impl, n, calls)

    def time_subscribe(self, impl: str, n: int) -> None:
        s = next(self.fresh)
        self.matcher.subscribe(s.selectors, s.allowed)

    def time_unsubscribe(self, impl: str, n: int) -> None:
        self.matcher.unsubscribe(next(self.leaving))


class Memory:
    """Memory of N loaded mercure subscribers: peak RSS, and bytes per subscriber."""

    params = (MERCURE, SIZES)
    param_names = ("impl", "subscribers")
    processes = 1
    timeout = 900

    def setup(self, impl: str, n: int) -> None:
        _check(impl, n)
        self.scen = _scenario("mercure", n, 0)
        self.factory = implementations()[impl].make

    def peakmem_load(self, impl: str, n: int) -> None:
        _loaded(impl, self.scen)

    def track_bytes_per_subscriber(self, impl: str, n: int) -> float | None:
        """Resident bytes per subscriber, CRoaring bitmaps included."""
        return rss_per_subscriber(self.factory, self.scen)

    track_bytes_per_subscriber.unit = "bytes"  # type: ignore[attr-defined]

    def track_heap_bytes_per_subscriber(self, impl: str, n: int) -> float:
        """Python-heap bytes per subscriber (tracemalloc; misses CRoaring's malloc)."""
        return heap_per_subscriber(self.factory, self.scen)

    track_heap_bytes_per_subscriber.unit = "bytes"  # type: ignore[attr-defined]


# -- mercure1: Mercure 1.0 subscriptions (exact and URL Pattern matchers) --------------------

#: Implementations of the urlpattern syntax, by display name; the scans apart.
URLPATTERN = [name for name, impl in implementations().items() if "urlpattern" in impl.syntaxes]
URLPATTERN_FAST = [name for name in URLPATTERN if not implementations()[name].scan]
URLPATTERN_SLOW = [name for name in URLPATTERN if implementations()[name].scan]


class Mercure1Match(_Lookups):
    """mercure1, unique topics: canonical URLs, patterns filed by origin and path."""

    workload = "mercure1"
    params = (URLPATTERN_FAST, SIZES)


class Mercure1MatchScan(_Lookups):
    """The scans on mercure1: one URLPattern.test per pattern selector per topic."""

    workload = "mercure1"
    params = (URLPATTERN_SLOW, SIZES)
    number = 1
    repeat = 5


@functools.cache
def _mercure1_subscription_run(n: int, calls: int) -> tuple[Matcher, Iterator[Subscriber]]:
    """TopicIndex loaded with mercure1 at ``n``, and fresh mercure1 subscribers to add."""
    matcher, _ = _loaded("TopicIndex", _scenario("mercure1", n, 0))
    return matcher, iter(scenario("mercure1", calls, 0, SEED + 1).subscribers)


class Mercure1Subscribe:
    """TopicIndex subscribe on mercure1 at N: with known patterns (target < 20 us), with a
    never-seen literal pattern (no compile) and a never-seen template (one compile by the
    urlpattern package, also timed alone)."""

    params = (SIZES,)
    param_names = ("subscribers",)
    warmup_time = 0.0
    processes = 1
    timeout = 900
    number = 100
    repeat = 10

    def setup(self, n: int) -> None:
        calls = self.number * self.repeat + 10
        self.matcher, self.fresh = _mercure1_subscription_run(n, calls)
        self.counter = itertools.count(n * 10)

    def time_subscribe_known_patterns(self, n: int) -> None:
        s = next(self.fresh)
        self.matcher.subscribe(s.selectors, s.allowed)

    def time_subscribe_new_literal_pattern(self, n: int) -> None:
        self.matcher.subscribe([f"https://example.com/pages/{next(self.counter)}"])

    def time_subscribe_new_template(self, n: int) -> None:
        self.matcher.subscribe([f"https://example.com/p{next(self.counter)}/:id"])

    def time_urlpattern_compile(self, n: int) -> None:
        from urlpattern import URLPattern

        URLPattern(f"https://example.com/p{next(self.counter)}/:id")


class Mercure1Memory(Memory):
    """Memory of N loaded mercure1 subscribers, beside Memory's mercure ones."""

    params = (URLPATTERN, SIZES)

    def setup(self, impl: str, n: int) -> None:
        _check(impl, n)
        self.scen = _scenario("mercure1", n, 0)
        self.factory = implementations()[impl].make
