"""Patterns filed by literal prefix, then by segment count: the Mercure candidate index.

A topic probes only the prefix groups it starts with (:class:`PrefixLengths` says which
lengths to probe), and in each only the bucket of its own segment count plus the
selectors without one. Small buckets are tested directly; a big bucket keeps a
:class:`~skipfilter.core.SkipFilter` keyed by topic, so a repeated topic costs one
cached bitmap and a selector added later is tested lazily (the cursor).
"""

from __future__ import annotations

from collections.abc import Callable

from skipfilter.core import SkipFilter
from skipfilter.index.pattern import Pattern, pattern_matches
from skipfilter.index.prefixes import PrefixLengths

__all__ = ["PrefixIndex"]

_Test = tuple[Callable[[str], object], Pattern]


class _Bucket:
    """Distinct selectors with one literal prefix and one segment count (or none).

    Small buckets are tested directly. A bucket of more than ``threshold``
    selectors keeps them in a SkipFilter keyed by topic: a repeated topic costs one
    cached bitmap, and a selector added later is tested lazily (the cursor).
    """

    __slots__ = ("by_pid", "cache_size", "filter", "patterns", "tests", "threshold")

    def __init__(self, cache_size: int, threshold: int) -> None:
        self.patterns: list[Pattern] = []
        self.cache_size = cache_size
        self.threshold = threshold
        self.filter: SkipFilter[Pattern, str] | None = None
        self.by_pid: dict[int, Pattern] = {}
        self.tests: tuple[_Test, ...] = ()  # (test, pattern) pairs while unfiltered

    def add(self, pattern: Pattern) -> None:
        self.patterns.append(pattern)
        if self.filter is not None:
            self._index(pattern)
        elif len(self.patterns) > self.threshold:
            self.filter = SkipFilter(pattern_matches, size=self.cache_size)
            for existing in self.patterns:
                self._index(existing)
        self._retest()

    def _index(self, pattern: Pattern) -> None:
        assert self.filter is not None
        pattern.pid = self.filter.add(pattern)
        self.by_pid[pattern.pid] = pattern

    def remove(self, pattern: Pattern) -> None:
        self.patterns.remove(pattern)
        if self.filter is not None:
            self.filter.remove(pattern)
            del self.by_pid[pattern.pid]
        self._retest()

    def _retest(self) -> None:
        if self.filter is None:
            self.tests = tuple((p.selector.test, p) for p in self.patterns if p.selector)

    def collect_filtered(self, topic: str, out: list[Pattern]) -> None:
        """Append the patterns that match ``topic``, from the SkipFilter's cache."""
        if self.filter is not None:
            by_pid = self.by_pid
            out.extend(by_pid[pid] for pid in self.filter.match_ids(topic))


class _Group:
    """The distinct selectors sharing one literal prefix, in buckets by segment count.

    A topic with k delimiters can only match selectors whose fixed count is k, or
    that have none, so it visits at most two buckets. The unfiltered buckets' tests
    are flattened per segment count (``tests``, ``default_tests``), so a lookup runs
    them in one loop without a method call per bucket.
    """

    __slots__ = (
        "by_segments",
        "cache_size",
        "default_tests",
        "filtered",
        "size",
        "tests",
        "threshold",
        "unbounded",
    )

    def __init__(self, cache_size: int, threshold: int) -> None:
        self.cache_size = cache_size
        self.threshold = threshold
        self.by_segments: dict[int, _Bucket] = {}  # fixed delimiter count -> bucket
        self.unbounded = _Bucket(cache_size, threshold)  # selectors without a fixed count
        self.size = 0
        self.tests: dict[int, tuple[_Test, ...]] = {}  # segment count -> tests to run
        self.default_tests: tuple[_Test, ...] = ()  # for other segment counts
        self.filtered = False  # some bucket has a SkipFilter

    def add(self, pattern: Pattern) -> None:
        assert pattern.selector is not None
        segments = pattern.selector.segments
        if segments is None:
            bucket = self.unbounded
        else:
            bucket = self.by_segments.get(segments) or self.by_segments.setdefault(
                segments, _Bucket(self.cache_size, self.threshold)
            )
        bucket.add(pattern)
        self.size += 1
        self._flatten(segments)

    def remove(self, pattern: Pattern) -> None:
        assert pattern.selector is not None
        segments = pattern.selector.segments
        bucket = self.unbounded if segments is None else self.by_segments[segments]
        bucket.remove(pattern)
        if segments is not None and not bucket.patterns:
            del self.by_segments[segments]
        self.size -= 1
        self._flatten(segments)

    def _flatten(self, changed: int | None) -> None:
        """Recompute the flattened tests after bucket ``changed`` (None: unbounded)."""
        self.default_tests = self.unbounded.tests
        self.filtered = self.unbounded.filter is not None or any(
            b.filter is not None for b in self.by_segments.values()
        )
        counts = self.by_segments if changed is None else (changed,)
        for segments in counts:
            bucket = self.by_segments.get(segments)
            if bucket is None:
                self.tests.pop(segments, None)
            else:
                self.tests[segments] = bucket.tests + self.default_tests

    def collect_filtered(self, topic: str, segments: int, out: list[Pattern]) -> None:
        """Append the patterns of this group's SkipFilter buckets that match ``topic``."""
        fitting = self.by_segments.get(segments)
        if fitting is not None:
            fitting.collect_filtered(topic, out)
        self.unbounded.collect_filtered(topic, out)

    def cached(self) -> int:
        """Buckets that keep a per-topic SkipFilter (for stats)."""
        buckets = [self.unbounded, *self.by_segments.values()]
        return sum(b.filter is not None for b in buckets)


class PrefixIndex:
    """Distinct patterns filed by literal prefix, then segment count.

    :meth:`collect` appends, for a topic, exactly the patterns that match it: one dict
    probe per candidate prefix length, then the tests of the buckets reached.
    """

    __slots__ = (
        "_cache_size",
        "_delimiter",
        "_groups",
        "_prefix_lengths",
        "_prefixes",
        "_threshold",
    )

    def __init__(self, delimiter: str, cache_size: int, threshold: int) -> None:
        """``delimiter`` counts segments ("" for none); a bucket of more than
        ``threshold`` selectors keeps a per-topic LRU of ``cache_size`` topics."""
        self._delimiter = delimiter
        self._cache_size = cache_size
        self._threshold = threshold
        self._groups: dict[str, _Group] = {}
        self._prefixes = PrefixLengths()  # of the groups: which lengths a topic probes
        self._prefix_lengths = self._prefixes.lengths

    def add(self, pattern: Pattern) -> None:
        """File a new distinct pattern."""
        assert pattern.selector is not None
        prefix = pattern.selector.prefix
        group = self._groups.get(prefix)
        if group is None:
            group = self._groups[prefix] = _Group(self._cache_size, self._threshold)
            self._prefixes.add(prefix)
        group.add(pattern)

    def remove(self, pattern: Pattern) -> None:
        """Unfile a pattern no subscriber holds any more."""
        assert pattern.selector is not None
        prefix = pattern.selector.prefix
        group = self._groups[prefix]
        group.remove(pattern)
        if not group.size:
            del self._groups[prefix]
            self._prefixes.remove(prefix)

    def collect(self, topic: str, out: list[Pattern], probe: str | None = None) -> None:
        """Append every filed pattern that matches ``topic``.

        ``probe`` (default: ``topic``) is the string the filed prefixes and segment
        counts are read from, when the tests take another form of the topic (the
        urlpattern syntax files by a canonical key and tests canonical URLs).
        """
        if probe is None:
            probe = topic
        lengths = self._prefix_lengths(probe)
        if not lengths:
            return
        groups = self._groups
        size = len(probe)
        segments = probe.count(self._delimiter) if self._delimiter else -1
        for length in lengths:
            if length > size:
                break
            group = groups.get(probe[:length])
            if group is None:
                continue
            for test, pattern in group.tests.get(segments, group.default_tests):
                if test(topic):
                    out.append(pattern)
            if group.filtered:
                group.collect_filtered(topic, segments, out)

    def stats(self) -> dict[str, int]:
        """Group counts, for metrics and tuning."""
        return {
            "prefix_groups": len(self._groups),
            "cached_groups": sum(g.cached() for g in self._groups.values()),
        }
