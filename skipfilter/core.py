"""SkipFilter: an inverted roaring-bitmap index of values by the keys they pass.

A port of the Go skipfilter (kevburnsjr/skipfilter). Every added value gets an
integer id. For every key looked up, a bitmap of the ids whose value passes
``test(value, key)`` is built once, kept in an LRU cache, and carries a cursor:
the first id not yet tested. A later lookup tests only the values added since.
Removed ids are dropped from cached bitmaps lazily, yet never returned.

Classes:

- :class:`SkipFilter` -- the index.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Hashable, Iterator
from typing import Generic, TypeVar

from cachetools import LRUCache
from pyroaring import BitMap64
from sortedcontainers import SortedDict

__all__ = ["Bitmap", "SkipFilter", "copy_of"]

V = TypeVar("V", bound=Hashable)
K = TypeVar("K", bound=Hashable)

#: The bitmap type of every id set: 64-bit ids, so a counter past 2**32 is safe.
Bitmap = BitMap64


def copy_of(bitmap: BitMap64) -> BitMap64:
    """A fresh, independent copy of ``bitmap``.

    An OR into an empty bitmap: pyroaring 1.x's ``BitMap64.copy()`` is slower for
    the same result (figures in docs/topic-index.md).
    """
    fresh = Bitmap()
    fresh |= bitmap
    return fresh


_WALK_CHUNK = 256


def _name_unhashable(items: tuple[object, ...], what: str) -> None:
    """Raise the TypeError naming the first of ``items`` that is not hashable, if one is
    (called on the error path only: the lookups themselves check nothing up front)."""
    for i, item in enumerate(items):
        try:
            hash(item)
        except TypeError:
            where = what if what == "value" else f"{what}[{i}]"
            shown = repr(item)[:60]
            raise TypeError(
                f"{where} must be hashable, got {type(item).__name__}: {shown}"
            ) from None


class _Filter:
    """The cached answer for one key: matching ids, and how far they were tested."""

    __slots__ = ("cursor", "ids", "pruned_at")

    def __init__(self, removals: int) -> None:
        self.ids = Bitmap()
        self.cursor = 0  # every id below this has been tested
        self.pruned_at = removals  # removals counter when ids were last pruned


class SkipFilter(Generic[V, K]):
    """A set of values, indexed lazily by the keys they pass.

    Methods for changing the set: :meth:`add`, :meth:`remove`.
    Methods for matching: :meth:`match_ids`, :meth:`match_any`.
    Methods for looking up: :meth:`get`, :meth:`walk`, ``len()``, ``in``, iteration.

    Every public method is thread-safe and linearizable: once :meth:`remove`
    returns, no later match contains the value; once :meth:`add` returns, every
    later match whose key the value passes contains it. One lock guards the
    whole structure (see docs/guarantees.md for why not a reader-writer lock).
    ``test`` runs under that lock and must not call back into the filter.

    Example (values pass the keys that divide them)::

        >>> sf = SkipFilter(lambda value, key: value % key == 0, size=100)
        >>> [sf.add(v) for v in (2, 3, 4, 6)]
        [0, 1, 2, 3]
        >>> sf.match_any(2)
        [2, 4, 6]
        >>> sf.remove(4)
        True
        >>> list(sf.match_ids(2, 3))
        [0, 1, 3]
    """

    def __init__(self, test: Callable[[V, K], bool], size: int = 100_000, *, first_id: int = 0):
        """Make an empty filter.

        ``test(value, key)`` says whether ``value`` passes ``key``; it must be
        pure (same answer for the same arguments). ``size`` bounds the LRU of
        per-key bitmaps: tune it to match or exceed the number of distinct keys
        in use, or hot keys get rebuilt (an O(n) scan each). ``first_id`` is the
        id the first added value gets (ids never go down and are never reused).
        """
        if not callable(test):
            raise TypeError(f"test must be callable, got {type(test).__name__}")
        if isinstance(size, bool) or not isinstance(size, int):
            raise TypeError(f"size must be an int, got {type(size).__name__}")
        if size <= 0:
            raise ValueError(f"size must be positive, got {size}")
        if isinstance(first_id, bool) or not isinstance(first_id, int):
            raise TypeError(f"first_id must be an int, got {type(first_id).__name__}")
        if not 0 <= first_id < 2**64:
            raise ValueError(f"first_id must be in [0, 2**64), got {first_id}")
        self._test = test
        self._size = size
        self._lock = threading.Lock()
        self._next_id = first_id
        self._values: SortedDict[int, V] = SortedDict()  # id -> value, ordered by id
        self._ids: dict[V, int] = {}  # value -> id
        self._live = Bitmap()  # ids currently in the set
        self._removals = 0  # bumped by every successful remove
        self._cache: LRUCache[K, _Filter] = LRUCache(maxsize=size)

    # -- changing the set -------------------------------------------------

    def add(self, value: V) -> int:
        """Add ``value`` and return its id; a value already present keeps its id.

        Runtime complexity: amortized O(log n). Raises TypeError if ``value`` is not
        hashable.
        """
        with self._lock:
            try:
                existing = self._ids.get(value)
            except TypeError:
                _name_unhashable((value,), "value")
                raise
            if existing is not None:
                return existing
            id_ = self._next_id
            if id_ >= 2**64:
                raise OverflowError("skipfilter id space (2**64) exhausted")
            self._next_id = id_ + 1
            self._values[id_] = value
            self._ids[value] = id_
            self._live.add(id_)
            return id_

    def remove(self, value: V) -> bool:
        """Remove ``value``; return whether it was present.

        Cached bitmaps drop its id lazily, on their next lookup.
        Runtime complexity: O(log n).
        """
        with self._lock:
            try:
                id_ = self._ids.pop(value, None)
            except TypeError:
                _name_unhashable((value,), "value")
                raise
            if id_ is None:
                return False
            del self._values[id_]
            self._live.discard(id_)
            self._removals += 1
            return True

    # -- matching ---------------------------------------------------------

    def match_ids(self, *keys: K) -> BitMap64:
        """Return the ids of the values that pass any of ``keys``.

        The result is a fresh bitmap the caller owns. A cached key costs one
        bitmap copy (O(1) in the number of values); a new key tests every value
        once (O(n)); otherwise only values added since the key's last lookup
        are tested. No keys: an empty bitmap (as Go's MatchAny, an OR of nothing). Raises
        TypeError naming the key that is not hashable.
        """
        try:
            with self._lock:
                if len(keys) == 1:
                    return copy_of(self._lookup(keys[0]))
                if not keys:
                    return Bitmap()
                return Bitmap.union(*[self._lookup(key) for key in keys])
        except TypeError:
            _name_unhashable(keys, "keys")
            raise

    def match_any(self, *keys: K) -> list[V]:
        """Return the values that pass any of ``keys``, in id order (Go's MatchAny).

        No keys: no values (``[]``), as Go's MatchAny. Raises TypeError naming the key
        that is not hashable. Runtime complexity: as :meth:`match_ids`, plus O(m) for m
        matches.
        """
        try:
            with self._lock:
                if len(keys) == 1:
                    ids = self._lookup(keys[0])
                elif not keys:
                    return []
                else:
                    ids = Bitmap.union(*[self._lookup(key) for key in keys])
                values = self._values
                return [values[id_] for id_ in ids]
        except TypeError:
            _name_unhashable(keys, "keys")
            raise

    def _lookup(self, key: K) -> BitMap64:
        """Bring ``key``'s cached bitmap up to date and return it (lock held)."""
        cache = self._cache
        try:
            entry = cache[key]
        except KeyError:
            entry = _Filter(self._removals)
            cache[key] = entry
        if entry.pruned_at != self._removals:
            entry.ids.intersection_update(self._live)
            entry.pruned_at = self._removals
        if entry.cursor < self._next_id:
            test = self._test
            values = self._values
            ids = entry.ids
            if entry.cursor == 0:  # a new filter: test everything, no bisect needed
                for id_, value in values.items():
                    if test(value, key):
                        ids.add(id_)
            else:
                for id_ in values.islice(values.bisect_left(entry.cursor)):
                    if test(values[id_], key):
                        ids.add(id_)
            entry.cursor = self._next_id
        return entry.ids

    # -- looking up -------------------------------------------------------

    def get(self, id_: int, default: V | None = None) -> V | None:
        """Return the value with id ``id_``, or ``default``. Runtime complexity: O(1)."""
        with self._lock:
            return self._values.get(id_, default)

    def walk(self, start: int, fn: Callable[[V], object]) -> int:
        """Call ``fn(value)`` for each value with id >= ``start``, in id order.

        ``fn`` returns ``False`` to stop. Returns the cursor to pass as ``start``
        to continue: one past the last id visited, or ``start`` if none was.
        The lock is taken per chunk of values, never while ``fn`` runs, so
        ``fn`` may add and remove; values added meanwhile with higher ids are
        visited, a value removed meanwhile may still be visited once.
        """
        cursor = start
        while True:
            with self._lock:
                values = self._values
                begin = values.bisect_left(cursor)
                chunk = [(id_, values[id_]) for id_ in values.islice(begin, begin + _WALK_CHUNK)]
            if not chunk:
                return cursor
            for id_, value in chunk:
                cursor = id_ + 1
                if fn(value) is False:
                    return cursor

    def __len__(self) -> int:
        """Number of values in the set. Runtime complexity: O(1)."""
        return len(self._ids)

    def __contains__(self, value: object) -> bool:
        """Whether ``value`` is in the set. Runtime complexity: O(1)."""
        with self._lock:
            return value in self._ids

    def __iter__(self) -> Iterator[V]:
        """Iterate over a snapshot of the values, in id order."""
        with self._lock:
            snapshot = list(self._values.values())
        return iter(snapshot)

    def __repr__(self) -> str:
        return f"SkipFilter(len={len(self)}, size={self._size}, next_id={self._next_id})"

    @property
    def next_id(self) -> int:
        """The id the next added value will get."""
        return self._next_id

    @property
    def size(self) -> int:
        """The bound of the per-key bitmap cache."""
        return self._size

    def cache_info(self) -> tuple[int, int]:
        """Return (cached keys, cache bound), for tuning ``size``."""
        with self._lock:
            return len(self._cache), self._size
