"""TopicIndex: Mercure delivery semantics at bitmap speed, even when every topic is new.

A hub's topics are usually new (``/users/613193cee6...``), so a cache keyed by topic
misses on every message. TopicIndex therefore indexes the *selectors*, not the
subscribers:

- exact selectors go through a hash map from topic to a bitmap of subscriber ids;
- selectors that match everything go in one bitmap;
- every other distinct selector is stored once, with the bitmap of subscribers that hold
  it, and grouped by its literal prefix. A topic probes only the groups whose prefix it
  starts with (one dict probe per distinct prefix length), so it tests only the
  selectors that can match it. A group of many selectors keeps them in a
  :class:`~skipfilter.core.SkipFilter` keyed by topic: a cached topic tests only the
  selectors added since (the cursor), never all of them again.

A private update goes to subscribers that match it AND are authorized for one of its
topics: the same structure built over the ``allowed`` selectors, and one bitmap AND.

Classes:

- :class:`TopicIndex` -- the index.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from itertools import count
from typing import Any, Final

from skipfilter._prefixes import PrefixLengths
from skipfilter.core import Bitmap, SkipFilter, copy_of
from skipfilter.matcher import check_selector_list, check_topics
from skipfilter.selectors import DELIMITERS, SYNTAXES, Selector, compile_selector

__all__ = ["Subscription", "TopicIndex"]

#: A prefix group with more distinct selectors than this gets a per-topic SkipFilter
#: cache. Below it, testing each selector (~0.2-1 us) is cheaper than a cache miss
#: (an LRU insert, ~2-5 us) and about as cheap as a hit (~1.3 us).
GROUP_CACHE_THRESHOLD = 8

#: A topic seen twice (within the last ``cache_size`` distinct topics) whose answer is
#: the union of at least this many bitmaps is memoized, as one bitmap, until the next
#: subscribe or unsubscribe: a hot topic then costs one dict probe. Unique topics, the
#: usual case in a hub, are not memoized: they cost a dict insert, not a union.
MEMO_MIN_BITMAPS = 3

#: A topic whose answer is the union of at least this many bitmaps is memoized on its
#: first lookup: many selectors match it (wildcard-heavy AMQP subscriptions), so even
#: one repeat repays the union.
MEMO_EAGER_BITMAPS = 8


@dataclass(eq=False, slots=True)
class _Pattern:
    """One distinct non-exact selector and the subscribers that hold it.

    Identity is the object (``eq=False``): a tuple of patterns is a memo key.
    """

    selector: Selector | None  # None: the table's match-all pattern, in no group
    sids: Bitmap = field(default_factory=Bitmap)
    pid: int = -1  # id in the group's SkipFilter, when it has one


def _pattern_matches(pattern: _Pattern, topic: str) -> bool:
    assert pattern.selector is not None
    return bool(pattern.selector.test(topic))


_Test = tuple[Callable[[str], object], _Pattern]
_UNSEEN: Final[Any] = object()  # a topic the memo has not recorded

#: A set of subscriber ids: one id, or a bitmap (of two or more, in the exact map).
Sids = Bitmap | int


class _Bucket:
    """Distinct selectors with one literal prefix and one segment count (or none).

    Small buckets are tested directly. A bucket of more than GROUP_CACHE_THRESHOLD
    selectors keeps them in a SkipFilter keyed by topic: a repeated topic costs one
    cached bitmap, and a selector added later is tested lazily (the cursor).
    """

    __slots__ = ("by_pid", "cache_size", "filter", "patterns", "tests")

    def __init__(self, cache_size: int) -> None:
        self.patterns: list[_Pattern] = []
        self.cache_size = cache_size
        self.filter: SkipFilter[_Pattern, str] | None = None
        self.by_pid: dict[int, _Pattern] = {}
        self.tests: tuple[_Test, ...] = ()  # (test, pattern) pairs while unfiltered

    def add(self, pattern: _Pattern) -> None:
        self.patterns.append(pattern)
        if self.filter is not None:
            self._index(pattern)
        elif len(self.patterns) > GROUP_CACHE_THRESHOLD:
            self.filter = SkipFilter(_pattern_matches, size=self.cache_size)
            for existing in self.patterns:
                self._index(existing)
        self._retest()

    def _index(self, pattern: _Pattern) -> None:
        assert self.filter is not None
        pattern.pid = self.filter.add(pattern)
        self.by_pid[pattern.pid] = pattern

    def remove(self, pattern: _Pattern) -> None:
        self.patterns.remove(pattern)
        if self.filter is not None:
            self.filter.remove(pattern)
            del self.by_pid[pattern.pid]
        self._retest()

    def _retest(self) -> None:
        if self.filter is None:
            self.tests = tuple((p.selector.test, p) for p in self.patterns if p.selector)

    def collect_filtered(self, topic: str, out: list[_Pattern]) -> None:
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

    __slots__ = ("by_segments", "cache_size", "default_tests", "filtered", "size", "tests",
                 "unbounded")

    def __init__(self, cache_size: int) -> None:
        self.cache_size = cache_size
        self.by_segments: dict[int, _Bucket] = {}  # fixed delimiter count -> bucket
        self.unbounded = _Bucket(cache_size)  # selectors without a fixed count
        self.size = 0
        self.tests: dict[int, tuple[_Test, ...]] = {}  # segment count -> tests to run
        self.default_tests: tuple[_Test, ...] = ()  # for other segment counts
        self.filtered = False  # some bucket has a SkipFilter

    def add(self, pattern: _Pattern) -> None:
        assert pattern.selector is not None
        segments = pattern.selector.segments
        if segments is None:
            bucket = self.unbounded
        else:
            bucket = self.by_segments.get(segments) or self.by_segments.setdefault(
                segments, _Bucket(self.cache_size)
            )
        bucket.add(pattern)
        self.size += 1
        self._flatten(segments)

    def remove(self, pattern: _Pattern) -> None:
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

    def collect_filtered(self, topic: str, segments: int, out: list[_Pattern]) -> None:
        """Append the patterns of this group's SkipFilter buckets that match ``topic``."""
        fitting = self.by_segments.get(segments)
        if fitting is not None:
            fitting.collect_filtered(topic, out)
        self.unbounded.collect_filtered(topic, out)

    def cached(self) -> int:
        """Buckets that keep a per-topic SkipFilter (for stats)."""
        buckets = [self.unbounded, *self.by_segments.values()]
        return sum(b.filter is not None for b in buckets)


class _SelectorTable:
    """For a topic, the subscribers holding a selector that matches it.

    A lookup yields two kinds of parts: sets of ids (an exact topic's subscribers, a
    memoized topic's answer) and patterns. :meth:`combine` ORs them into one bitmap,
    and the union of the patterns' bitmaps is memoized by *which* patterns matched:
    topics of one shape (``/books/1``, ``/books/2``, ...) match the same templates, so
    a never-seen topic reuses the union built for its shape and adds only its own
    exact subscribers.

    An exact topic with one subscriber, the usual case, maps to that id, not to a
    bitmap: a BitMap64 per topic cost ~1 us to OR in (cold memory) and most of the
    index's memory.
    """

    def __init__(self, syntax: str, cache_size: int) -> None:
        self._cache_size = cache_size
        self._delimiter = DELIMITERS.get(syntax, "")
        self._exact: dict[str, Sids] = {}  # one id, or a bitmap of two or more
        self._everything = _Pattern(None)  # subscribers of a match-all selector
        self._patterns: dict[Selector, _Pattern] = {}
        self._known: dict[str, Selector] = {}  # text -> compiled, for the patterns above
        self._groups: dict[str, _Group] = {}
        self._prefixes = PrefixLengths()  # of the groups: which lengths a topic probes
        self._prefix_lengths = self._prefixes.lengths
        # Bumped by every change (_version) or by a change to some pattern's
        # subscribers (_pattern_version); each memo is emptied on its first use after.
        self._version = 0
        self._pattern_version = 0
        # topic -> its whole answer. Bitmaps are not tracked by the cycle collector;
        # (version, bitmap) tuples would be, so validity is one version per memo.
        self._memo: dict[str, Bitmap | None] = {}  # None: looked up once so far
        self._memo_version = 0
        # tuple of matched patterns -> union of their subscribers (None: seen once)
        self._unions: dict[tuple[_Pattern, ...], Bitmap | None] = {}
        self._unions_version = 0

    def register(self, exact: tuple[str, ...], patterns: tuple[Selector, ...], sid: int) -> None:
        """Add ``sid`` under its exact topics and its other selectors."""
        self._version += 1
        table = self._exact
        for topic in exact:
            sids = table.get(topic)
            if sids is None:
                table[topic] = sid
            elif isinstance(sids, int):
                table[topic] = Bitmap((sids, sid))
            else:
                sids.add(sid)
        for selector in patterns:
            self._add_pattern(selector, sid)

    def unregister(self, exact: tuple[str, ...], patterns: tuple[Selector, ...], sid: int) -> None:
        """Remove ``sid`` from what :meth:`register` added it to."""
        self._version += 1
        table = self._exact
        for topic in exact:
            sids = table[topic]
            if isinstance(sids, int):
                del table[topic]
                continue
            sids.discard(sid)
            if len(sids) == 1:
                table[topic] = sids.min()
        for selector in patterns:
            self._discard_pattern(selector, sid)

    def _add_pattern(self, selector: Selector, sid: int) -> None:
        """Add a non-exact selector (a pattern, or one matching everything)."""
        self._pattern_version += 1
        if selector.match_all:
            self._everything.sids.add(sid)
            return
        pattern = self._patterns.get(selector)
        if pattern is None:
            pattern = self._patterns[selector] = _Pattern(selector)
            self._known[selector.text] = selector
            self._group(selector.prefix).add(pattern)
        pattern.sids.add(sid)

    def _discard_pattern(self, selector: Selector, sid: int) -> None:
        self._pattern_version += 1
        if selector.match_all:
            self._everything.sids.discard(sid)
            return
        pattern = self._patterns[selector]
        pattern.sids.discard(sid)
        if not pattern.sids:
            del self._patterns[selector]
            del self._known[selector.text]
            group = self._groups[selector.prefix]
            group.remove(pattern)
            if not group.size:
                self._drop_group(selector.prefix)

    def _group(self, prefix: str) -> _Group:
        group = self._groups.get(prefix)
        if group is None:
            group = self._groups[prefix] = _Group(self._cache_size)
            self._prefixes.add(prefix)
        return group

    def _drop_group(self, prefix: str) -> None:
        del self._groups[prefix]
        self._prefixes.remove(prefix)

    def collect(self, topic: str, found: list[Sids], patterns: list[_Pattern]) -> None:
        """Append what ``topic`` matches: its exact subscribers to ``found``, and its
        patterns to ``patterns``."""
        exact = self._exact.get(topic)
        if exact is not None:
            found.append(exact)
        if self._everything.sids:
            patterns.append(self._everything)
        lengths = self._prefix_lengths(topic)
        if not lengths:
            return
        groups = self._groups
        size = len(topic)
        segments = topic.count(self._delimiter) if self._delimiter else -1
        for length in lengths:
            if length > size:
                break
            group = groups.get(topic[:length])
            if group is None:
                continue
            for test, pattern in group.tests.get(segments, group.default_tests):
                if test(topic):
                    patterns.append(pattern)
            if group.filtered:
                group.collect_filtered(topic, segments, patterns)

    def answer(self, topics: Sequence[str]) -> Bitmap:
        """A fresh bitmap of the subscribers with a selector matching any of ``topics``.

        A topic's answer (its exact subscribers and patterns' subscribers, as one
        bitmap) is memoized until the table next changes: at once if it has
        MEMO_EAGER_BITMAPS parts or more, else on the topic's second lookup if it has
        MEMO_MIN_BITMAPS or more. The memo records a first lookup as None, so a
        unique topic of a cheap answer costs one dict insert, never a union. It is
        emptied by the first lookup after a change or when it holds ``cache_size``
        topics: amortized O(1) per topic.
        """
        memo = self._memo
        if self._memo_version != self._version:
            memo.clear()
            self._memo_version = self._version
        found: list[Sids] = []
        patterns: list[_Pattern] = []
        for topic in topics:
            hit = memo.get(topic, _UNSEEN)
            if hit is not None and hit is not _UNSEEN:
                found.append(hit)
                continue
            first_found, first_pattern = len(found), len(patterns)
            self.collect(topic, found, patterns)
            parts = len(found) - first_found + len(patterns) - first_pattern
            answer = None
            if parts >= MEMO_EAGER_BITMAPS or (hit is None and parts >= MEMO_MIN_BITMAPS):
                own = [*found[first_found:], *(p.sids for p in patterns[first_pattern:])]
                answer = _union(own)
                del found[first_found:], patterns[first_pattern:]
                found.append(answer)
            if hit is _UNSEEN and len(memo) >= self._cache_size:
                memo.clear()
            memo[topic] = answer
        return self.combine(found, patterns)

    def combine(self, found: list[Sids], patterns: list[_Pattern]) -> Bitmap:
        """A fresh bitmap: the union of ``found`` and of the patterns' subscribers.

        The patterns' union is memoized by the tuple of patterns, from the second time
        that tuple is seen until a pattern's subscribers change: topics of one shape
        then cost one copy plus their own exact subscribers.
        """
        if len(patterns) < 2:
            return _union([*found, *(p.sids for p in patterns)])
        unions = self._unions
        if self._unions_version != self._pattern_version:
            unions.clear()
            self._unions_version = self._pattern_version
        key = tuple(patterns)
        shared = unions.get(key, _UNSEEN)
        if shared is None or shared is _UNSEEN:
            union = _union([pattern.sids for pattern in patterns])
            if shared is None:  # seen before: keep it, shared from now on
                unions[key] = shared = union
            else:
                if len(unions) >= self._cache_size:
                    unions.clear()
                unions[key] = None
                return _add(union, found)
        return _add(copy_of(shared), found)

    def known(self, text: str) -> Selector | None:
        """The compiled selector for ``text`` if a subscriber already holds it."""
        return self._known.get(text)

    def stats(self) -> dict[str, int]:
        return {
            "exact_topics": len(self._exact),
            "patterns": len(self._patterns),
            "prefix_groups": len(self._groups),
            "cached_groups": sum(g.cached() for g in self._groups.values()),
        }


@dataclass(frozen=True, slots=True)
class Subscription:
    """What one subscriber registered: its selectors, its authorization, its payload."""

    selectors: tuple[str, ...]
    allowed: tuple[str, ...]
    payload: object


class _Entry:
    """One subscriber, stored compactly: exact selectors as plain strings.

    Strings and tuples of strings are not tracked by the garbage collector, which
    keeps a full collection's walk (and so subscribe's amortized cost) small.
    """

    __slots__ = ("allowed_exact", "allowed_patterns", "exact", "patterns", "payload")

    def __init__(
        self,
        split: tuple[tuple[str, ...], tuple[Selector, ...]],
        allowed: tuple[tuple[str, ...], tuple[Selector, ...]],
        payload: object,
    ) -> None:
        self.exact, self.patterns = split
        self.allowed_exact, self.allowed_patterns = allowed
        self.payload = payload


def _mercure_exact(text: str) -> bool:
    return "{" not in text and text != "*"


def _amqp_exact(text: str) -> bool:
    return "*" not in text and "#" not in text


#: Per syntax, a check that a selector is an exact topic, cheaper than compiling it
#: (only for syntaxes where no selector is invalid). Must agree with compile_selector.
_PLAINLY_EXACT = {"mercure": _mercure_exact, "amqp": _amqp_exact}


def _add(result: Bitmap, found: Iterable[Sids]) -> Bitmap:
    """Add every id of ``found`` (ids and bitmaps) to ``result``; return it."""
    for sids in found:
        if isinstance(sids, int):
            result.add(sids)
        else:
            result |= sids
    return result


def _union(found: Iterable[Sids]) -> Bitmap:
    """A fresh bitmap holding every id of ``found``.

    ORing into an empty bitmap measured as fast as a chain of ``|`` for the few
    small bitmaps a topic usually has, and 1.3-8x faster than BitMap64.copy() for
    one (BitMap64.union(*many) is up to 5x slower on them).
    """
    return _add(Bitmap(), found)


class TopicIndex:
    """Subscribers by topic selectors, with Mercure's public and private delivery rules.

    Methods for changing subscribers: :meth:`subscribe`, :meth:`unsubscribe`.
    Methods for matching: :meth:`match`, :meth:`payloads`.
    Methods for looking up: :meth:`get`, ``len()``, ``in``.

    Thread-safe and linearizable, like :class:`~skipfilter.core.SkipFilter`: once
    :meth:`unsubscribe` returns, no later match contains the subscriber; once
    :meth:`subscribe` returns, every later match that should contain it does.

    Example::

        >>> idx = TopicIndex("mercure")
        >>> books = idx.subscribe(["https://example.com/books/{id}"], payload="books")
        >>> alice = idx.subscribe(["/users/alice"], allowed=["/users/alice"], payload="alice")
        >>> sorted(idx.payloads(idx.match(["https://example.com/books/1", "/users/alice"])))
        ['alice', 'books']
        >>> list(idx.payloads(idx.match(["/users/alice"], private=True)))
        ['alice']
    """

    def __init__(
        self, syntax: str = "mercure", cache_size: int = 100_000, *, first_id: int = 0
    ) -> None:
        """Make an empty index for selectors in ``syntax`` (one of :data:`SYNTAXES`).

        ``cache_size`` bounds, per group of selectors sharing a prefix, the LRU of
        per-topic results (only groups with many distinct selectors keep one).
        ``first_id`` is the first subscriber id; ids are 64-bit and never reused.
        """
        if syntax not in SYNTAXES:
            raise ValueError(f"unknown syntax {syntax!r}; expected one of {', '.join(SYNTAXES)}")
        if isinstance(cache_size, bool) or not isinstance(cache_size, int):
            raise TypeError(f"cache_size must be an int, got {type(cache_size).__name__}")
        if cache_size <= 0:
            raise ValueError(f"cache_size must be positive, got {cache_size}")
        self._syntax = syntax
        self._lock = threading.Lock()
        if not 0 <= first_id < 2**64:
            raise ValueError(f"first_id must be in [0, 2**64), got {first_id}")
        self._ids = count(first_id)
        self._entries: dict[int, _Entry] = {}
        self._plainly_exact = _PLAINLY_EXACT.get(syntax)
        self._subscribed = _SelectorTable(syntax, cache_size)
        self._authorized = _SelectorTable(syntax, cache_size)

    @property
    def syntax(self) -> str:
        """The selector syntax of this index."""
        return self._syntax

    def _split(
        self, selectors: Iterable[str], what: str
    ) -> tuple[tuple[str, ...], tuple[Selector, ...]]:
        """Validate and compile ``selectors``: (exact topics, other selectors), deduplicated."""
        check_selector_list(selectors, what)
        exact: dict[str, None] = {}
        patterns: dict[Selector, None] = {}
        plain = self._plainly_exact
        for text in selectors:
            if not isinstance(text, str):
                raise TypeError(f"{what} must be strings, got {type(text).__name__}: {text!r}")
            if plain is not None and plain(text):
                exact[text] = None
                continue
            selector = self._subscribed.known(text) or self._authorized.known(text)
            if selector is None:
                selector = compile_selector(text, self._syntax)
            if selector.exact is not None:
                exact[selector.exact] = None
            else:
                patterns[selector] = None
        return tuple(exact), tuple(patterns)

    def subscribe(
        self,
        selectors: Iterable[str],
        allowed: Iterable[str] | None = None,
        payload: object = None,
    ) -> int:
        """Add a subscriber; return its id (never reused).

        ``selectors`` are the topics it subscribes to; ``allowed`` the selectors it is
        authorized for (the JWT ``mercure.subscribe`` claim; None: no private
        updates). Raises :class:`~skipfilter.errors.InvalidSelector` before changing
        anything if a selector does not compile. Runtime: O(number of selectors).
        """
        split = self._split(selectors, "selectors")
        if not split[0] and not split[1]:
            raise ValueError("a subscriber needs at least one selector")
        authorized = self._split(allowed, "allowed") if allowed is not None else ((), ())
        entry = _Entry(split, authorized, payload)
        with self._lock:
            sid = next(self._ids)
            self._entries[sid] = entry
            self._subscribed.register(entry.exact, entry.patterns, sid)
            self._authorized.register(entry.allowed_exact, entry.allowed_patterns, sid)
        return sid

    def unsubscribe(self, sid: int) -> bool:
        """Remove a subscriber; return whether it was subscribed. O(its selectors)."""
        with self._lock:
            entry = self._entries.pop(sid, None)
            if entry is None:
                return False
            self._subscribed.unregister(entry.exact, entry.patterns, sid)
            self._authorized.unregister(entry.allowed_exact, entry.allowed_patterns, sid)
            return True

    def match(self, topics: Sequence[str], private: bool = False) -> Bitmap:
        """Return the ids of the subscribers an update on ``topics`` goes to.

        Public: those with a selector matching any topic. Private: those, AND with
        an allowed selector matching any topic (possibly another one). The result
        is a fresh bitmap. Runtime: per topic, one dict probe per distinct prefix
        length plus a test of each selector whose prefix the topic starts with.
        """
        check_topics(topics)
        with self._lock:
            result = self._subscribed.answer(topics)
            if private and result:
                result &= self._authorized.answer(topics)
            return result

    def payloads(self, sids: Iterable[int]) -> Iterator[object]:
        """Yield the payload of each id in ``sids`` still subscribed, in id order."""
        entries = self._entries
        for sid in sids:
            entry = entries.get(sid)
            if entry is not None:
                yield entry.payload

    def get(self, sid: int) -> Subscription | None:
        """Return what subscriber ``sid`` registered, or None. O(1)."""
        entry = self._entries.get(sid)
        if entry is None:
            return None
        texts = (*entry.exact, *(p.text for p in entry.patterns))
        allowed = (*entry.allowed_exact, *(p.text for p in entry.allowed_patterns))
        return Subscription(texts, allowed, entry.payload)

    def __len__(self) -> int:
        """Number of subscribers."""
        return len(self._entries)

    def __contains__(self, sid: object) -> bool:
        return sid in self._entries

    def stats(self) -> dict[str, int]:
        """Sizes of the internal tables, for metrics and tuning."""
        with self._lock:
            stats = {"subscribers": len(self._entries)}
            stats.update({f"subscribed_{k}": v for k, v in self._subscribed.stats().items()})
            stats.update({f"allowed_{k}": v for k, v in self._authorized.stats().items()})
            return stats

    def __repr__(self) -> str:
        return f"TopicIndex(syntax={self._syntax!r}, subscribers={len(self)})"
