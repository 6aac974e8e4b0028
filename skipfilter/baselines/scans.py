r"""The scans: what a Mercure hub did up to 0.13, as :class:`~skipfilter.matcher.Matcher`\ s.

- :class:`LinearScan` -- test every subscriber's compiled selectors per message.
- :class:`CachedScan` -- the same scan behind a bounded LRU of (selector, topic) -> bool,
  as the Mercure hub 0.13 did.

Both are thread-safe: every method takes the instance's one lock (LinearScan only to
copy the subscriber list), so each operation is linearizable.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Sequence
from itertools import count

from cachetools import LRUCache
from pyroaring import BitMap64

from skipfilter.baselines.base import compiled
from skipfilter.matcher import SelectorInput, registration
from skipfilter.selectors import SYNTAXES, Selector, topic_checker

__all__ = ["CachedScan", "LinearScan"]


class LinearScan:
    """Every subscriber's precompiled selectors tested against every topic, per message.

    Short-circuits on the first matching selector. Runtime of :meth:`match`:
    O(subscribers x selectors x topics); subscribe and unsubscribe O(1).
    """

    def __init__(self, syntax: str = "mercure") -> None:
        if syntax not in SYNTAXES:
            raise ValueError(f"unknown syntax {syntax!r}; expected one of {', '.join(SYNTAXES)}")
        self._syntax = syntax
        self._check_topics = topic_checker(syntax)  # as TopicIndex checks them
        self._ids = count()
        self._lock = threading.Lock()
        self._subscribers: dict[int, tuple[tuple[Selector, ...], tuple[Selector, ...]]] = {}

    @property
    def syntax(self) -> str:
        """The selector syntax."""
        return self._syntax

    def _prepare(self, selectors: Iterable[SelectorInput], what: str) -> tuple[Selector, ...]:
        return compiled(selectors, self._syntax, what)

    def subscribe(
        self,
        selectors: Iterable[SelectorInput],
        allowed: Iterable[SelectorInput] | None = None,
        payload: object = None,
    ) -> int:
        """Add a subscriber with its compiled selectors; return its id."""
        compiled, authorized = registration(selectors, allowed, self._prepare)
        with self._lock:
            sid = next(self._ids)
            self._subscribers[sid] = (compiled, authorized)
        return sid

    def unsubscribe(self, sid: int) -> bool:
        """Remove a subscriber."""
        with self._lock:
            return self._subscribers.pop(sid, None) is not None

    def match(self, topics: Sequence[str], private: bool = False) -> BitMap64:
        """Test every subscriber; Mercure rules for private updates."""
        self._check_topics(topics)
        result = BitMap64()
        with self._lock:
            items = list(self._subscribers.items())
        for sid, (selectors, authorized) in items:
            if any(s.matches(t) for s in selectors for t in topics) and (
                not private or any(a.matches(t) for a in authorized for t in topics)
            ):
                result.add(sid)
        return result

    def __len__(self) -> int:
        return len(self._subscribers)


class CachedScan(LinearScan):
    """LinearScan with a bounded LRU of (selector, topic) -> matched, as Mercure 0.13 had.

    Pays off when the same topics come back (a cache hit replaces a regex run by a
    dict probe); when topics are new it only adds the cost of a miss. ``cache_size``
    bounds the number of (selector, topic) pairs kept.
    Runtime of :meth:`match`: O(subscribers x selectors x topics) cache probes.
    """

    def __init__(self, syntax: str = "mercure", cache_size: int = 100_000) -> None:
        super().__init__(syntax)
        if cache_size <= 0:
            raise ValueError(f"cache_size must be positive, got {cache_size}")
        self._cache: LRUCache[tuple[str, str], bool] = LRUCache(maxsize=cache_size)

    def match(self, topics: Sequence[str], private: bool = False) -> BitMap64:
        """Scan every subscriber, memoizing each (selector, topic) test; holds the lock.

        The LRU is not thread-safe, so the scan runs under the instance lock.
        """
        self._check_topics(topics)
        result = BitMap64()
        with self._lock:
            cache = self._cache

            def test(selectors: tuple[Selector, ...]) -> bool:
                for selector in selectors:
                    for topic in topics:
                        key = (selector.text, topic)
                        hit = cache.get(key)
                        if hit is None:
                            hit = cache[key] = bool(selector.test(topic))
                        if hit:
                            return True
                return False

            for sid, (selectors, authorized) in self._subscribers.items():
                if test(selectors) and (not private or test(authorized)):
                    result.add(sid)
        return result
