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
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from itertools import count

from skipfilter.core import Bitmap, SkipFilter
from skipfilter.matcher import check_selector_list, check_topics
from skipfilter.selectors import DELIMITERS, SYNTAXES, Selector, compile_selector

__all__ = ["Subscription", "TopicIndex"]

#: A prefix group with more distinct selectors than this gets a per-topic SkipFilter
#: cache. Below it, testing each selector (~0.2-1 us) is cheaper than a cache miss
#: (an LRU insert, ~2-5 us) and about as cheap as a hit (~1.3 us).
GROUP_CACHE_THRESHOLD = 8

#: A topic whose answer is the union of at least this many bitmaps is memoized (as one
#: bitmap) until the next subscribe or unsubscribe: repeated topics then cost one copy.
MEMO_MIN_BITMAPS = 3


@dataclass(eq=False, slots=True)
class _Pattern:
    """One distinct non-exact selector and the subscribers that hold it."""

    selector: Selector
    sids: Bitmap = field(default_factory=Bitmap)
    pid: int = -1  # id in the group's SkipFilter, when it has one


def _pattern_matches(pattern: _Pattern, topic: str) -> bool:
    return bool(pattern.selector.test(topic))


class _Bucket:
    """Distinct selectors with one literal prefix and one segment count (or none).

    Small buckets are tested directly. A bucket of more than GROUP_CACHE_THRESHOLD
    selectors keeps them in a SkipFilter keyed by topic: a repeated topic costs one
    cached bitmap, and a selector added later is tested lazily (the cursor).
    """

    __slots__ = ("by_pid", "cache_size", "filter", "patterns")

    def __init__(self, cache_size: int) -> None:
        self.patterns: list[_Pattern] = []
        self.cache_size = cache_size
        self.filter: SkipFilter[_Pattern, str] | None = None
        self.by_pid: dict[int, _Pattern] = {}

    def add(self, pattern: _Pattern) -> None:
        self.patterns.append(pattern)
        if self.filter is not None:
            self._index(pattern)
        elif len(self.patterns) > GROUP_CACHE_THRESHOLD:
            self.filter = SkipFilter(_pattern_matches, size=self.cache_size)
            for existing in self.patterns:
                self._index(existing)

    def _index(self, pattern: _Pattern) -> None:
        assert self.filter is not None
        pattern.pid = self.filter.add(pattern)
        self.by_pid[pattern.pid] = pattern

    def remove(self, pattern: _Pattern) -> None:
        self.patterns.remove(pattern)
        if self.filter is not None:
            self.filter.remove(pattern)
            del self.by_pid[pattern.pid]

    def collect(self, topic: str, out: list[Bitmap]) -> None:
        if self.filter is None:
            for pattern in self.patterns:
                if pattern.selector.test(topic):
                    out.append(pattern.sids)
        else:
            by_pid = self.by_pid
            for pid in self.filter.match_ids(topic):
                out.append(by_pid[pid].sids)


class _Group:
    """The distinct selectors sharing one literal prefix, in buckets by segment count.

    A topic with k delimiters can only match selectors whose fixed count is k, or
    that have none, so it visits at most two buckets.
    """

    __slots__ = ("by_segments", "cache_size", "size", "unbounded")

    def __init__(self, cache_size: int) -> None:
        self.cache_size = cache_size
        self.by_segments: dict[int, _Bucket] = {}  # fixed delimiter count -> bucket
        self.unbounded = _Bucket(cache_size)  # selectors without a fixed count
        self.size = 0

    def add(self, pattern: _Pattern) -> None:
        segments = pattern.selector.segments
        if segments is None:
            bucket = self.unbounded
        else:
            bucket = self.by_segments.get(segments) or self.by_segments.setdefault(
                segments, _Bucket(self.cache_size)
            )
        bucket.add(pattern)
        self.size += 1

    def remove(self, pattern: _Pattern) -> None:
        segments = pattern.selector.segments
        bucket = self.unbounded if segments is None else self.by_segments[segments]
        bucket.remove(pattern)
        if segments is not None and not bucket.patterns:
            del self.by_segments[segments]
        self.size -= 1

    def collect(self, topic: str, segments: int, out: list[Bitmap]) -> None:
        """Append the sids bitmaps of this group's selectors that match ``topic``.

        ``segments`` is the topic's delimiter count.
        """
        fitting = self.by_segments.get(segments)
        if fitting is not None:
            fitting.collect(topic, out)
        if self.unbounded.patterns:
            self.unbounded.collect(topic, out)

    def cached(self) -> int:
        """Buckets that keep a per-topic SkipFilter (for stats)."""
        buckets = [self.unbounded, *self.by_segments.values()]
        return sum(b.filter is not None for b in buckets)


class _SelectorTable:
    """For a topic, the bitmaps of subscribers holding a selector that matches it."""

    def __init__(self, syntax: str, cache_size: int) -> None:
        self._cache_size = cache_size
        self._delimiter = DELIMITERS.get(syntax, "")
        self._exact: dict[str, Bitmap] = {}
        self._match_all = Bitmap()
        self._patterns: dict[Selector, _Pattern] = {}
        self._known: dict[str, Selector] = {}  # text -> compiled, for the patterns above
        self._groups: dict[str, _Group] = {}
        self._length_counts: Counter[int] = Counter()
        self._lengths: tuple[int, ...] = ()  # distinct prefix lengths, ascending
        # topic -> its recipients, valid for the table at version _memo_version. Bitmaps
        # are not tracked by the cycle collector; (version, bitmap) tuples would be.
        self._version = 0
        self._memo: dict[str, Bitmap] = {}
        self._memo_version = 0

    def register(self, exact: tuple[str, ...], patterns: tuple[Selector, ...], sid: int) -> None:
        """Add ``sid`` under its exact topics and its other selectors."""
        self._version += 1
        for topic in exact:
            sids = self._exact.get(topic)
            if sids is None:
                sids = self._exact[topic] = Bitmap()
            sids.add(sid)
        for selector in patterns:
            self._add_pattern(selector, sid)

    def unregister(self, exact: tuple[str, ...], patterns: tuple[Selector, ...], sid: int) -> None:
        """Remove ``sid`` from what :meth:`register` added it to."""
        self._version += 1
        for topic in exact:
            sids = self._exact[topic]
            sids.discard(sid)
            if not sids:
                del self._exact[topic]
        for selector in patterns:
            self._discard_pattern(selector, sid)

    def _add_pattern(self, selector: Selector, sid: int) -> None:
        """Add a non-exact selector (a pattern, or one matching everything)."""
        if selector.match_all:
            self._match_all.add(sid)
            return
        pattern = self._patterns.get(selector)
        if pattern is None:
            pattern = self._patterns[selector] = _Pattern(selector)
            self._known[selector.text] = selector
            self._group(selector.prefix).add(pattern)
        pattern.sids.add(sid)

    def _discard_pattern(self, selector: Selector, sid: int) -> None:
        if selector.match_all:
            self._match_all.discard(sid)
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
            self._length_counts[len(prefix)] += 1
            self._lengths = tuple(sorted(self._length_counts))
        return group

    def _drop_group(self, prefix: str) -> None:
        del self._groups[prefix]
        self._length_counts[len(prefix)] -= 1
        if not self._length_counts[len(prefix)]:
            del self._length_counts[len(prefix)]
        self._lengths = tuple(sorted(self._length_counts))

    def collect(self, topic: str, out: list[Bitmap]) -> None:
        """Append every bitmap of subscribers with a selector matching ``topic``."""
        exact = self._exact.get(topic)
        if exact is not None:
            out.append(exact)
        if self._match_all:
            out.append(self._match_all)
        groups = self._groups
        size = len(topic)
        segments = topic.count(self._delimiter) if self._delimiter else -1
        for length in self._lengths:
            if length > size:
                break
            group = groups.get(topic[:length])
            if group is not None:
                group.collect(topic, segments, out)

    def collect_memoized(self, topic: str, out: list[Bitmap]) -> None:
        """As :meth:`collect`, but a topic whose answer needed a union of many bitmaps
        is memoized, as one bitmap, until the table next changes.

        Only costly answers are kept (MEMO_MIN_BITMAPS or more): a unique topic with an
        answer of one or two bitmaps costs less to recompute than to cache. The memo is
        emptied by the first lookup after a change or when it holds ``cache_size``
        topics: amortized O(1) per memoized topic. Memoized bitmaps are shared: never
        mutate what lands in ``out``.
        """
        memo = self._memo
        if self._memo_version != self._version:
            if memo:
                memo.clear()
            self._memo_version = self._version
        else:
            hit = memo.get(topic)
            if hit is not None:
                out.append(hit)
                return
        start = len(out)
        self.collect(topic, out)
        if len(out) - start >= MEMO_MIN_BITMAPS:
            merged = _union(out[start:])
            del out[start:]
            out.append(merged)
            if len(memo) >= self._cache_size:
                memo.clear()
            memo[topic] = merged

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


def _union(bitmaps: list[Bitmap]) -> Bitmap:
    """A fresh bitmap holding the union of ``bitmaps``.

    A chain of ``|`` measured fastest for the few small bitmaps a topic usually has
    (BitMap64.union(*many) is up to 5x slower on them, update() slower on tiny ones).
    """
    if len(bitmaps) < 2:
        return bitmaps[0].copy() if bitmaps else Bitmap()
    result = bitmaps[0] | bitmaps[1]
    for bitmap in bitmaps[2:]:
        result |= bitmap
    return result


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
            found: list[Bitmap] = []
            for topic in topics:
                self._subscribed.collect_memoized(topic, found)
            result = _union(found)
            if private and result:
                authorized: list[Bitmap] = []
                for topic in topics:
                    self._authorized.collect_memoized(topic, authorized)
                result &= _union(authorized)
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
