"""asv suite for SkipFilter.match_ids: a cache hit, a cache miss, and a hit after churn.

Values are ints, keys are divisors chosen so a key matches ~42 values whatever n is
(the Go skipfilter's published MatchAny figure uses 42 matches).

No class here defines ``setup``: asv-runner >= 0.3 re-runs ``setup`` between *every*
timed call when one exists (asv#966), so a 0.3 s build would be repeated 2000 times per
sample. State is built once per process by a memoized builder instead, during asv's
warmup, and the timed calls are batched by ``number``.
"""

from __future__ import annotations

import functools
import itertools
from collections import deque
from collections.abc import Iterator

from skipfilter import SkipFilter

SIZES = [1_000, 10_000, 100_000]
MATCHES = 42


def divides(value: int, key: int) -> bool:
    return value % key == 0


def _filled(n: int) -> SkipFilter[int, int]:
    sf: SkipFilter[int, int] = SkipFilter(divides, size=100_000)
    for v in range(n):
        sf.add(v)
    return sf


@functools.cache
def _warm(n: int) -> SkipFilter[int, int]:
    """n values with the 42-match key already cached: the hit path."""
    sf = _filled(n)
    sf.match_ids(n // MATCHES)
    return sf


@functools.cache
def _fresh_keys(n: int) -> Iterator[int]:
    """Keys never looked up before, for the miss path."""
    return itertools.count(n + 1)


class MatchIds:
    """match_ids on one cached key, at n values."""

    params = SIZES
    param_names = ["values"]
    number = 2000
    repeat = 10

    def time_hit(self, n: int) -> None:
        _warm(n).match_ids(n // MATCHES)

    def time_hit_match_any(self, n: int) -> None:
        _warm(n).match_any(n // MATCHES)

    def peakmem_filled(self, n: int) -> None:
        _filled(n).match_ids(n // MATCHES)


class MatchIdsMiss:
    """match_ids on a key never seen before: tests every value once (O(n))."""

    params = SIZES
    param_names = ["values"]
    number = 5
    repeat = 10

    def time_miss(self, n: int) -> None:
        _warm(n).match_ids(next(_fresh_keys(n)))


@functools.cache
def _churning(n: int) -> tuple[SkipFilter[int, int], deque[int], Iterator[int]]:
    """A warm filter, its live values oldest first, and a source of new values."""
    return _warm(n), deque(range(n)), itertools.count(10**12)


class AfterChurn:
    """1% of values replaced (remove the oldest, add new), then a cached key's lookup.

    The lookup prunes the removed ids and tests the added values (the cursor); the
    replacement's own cost is included (see AddRemove for it alone).
    """

    params = SIZES
    param_names = ["values"]
    number = 20
    repeat = 10

    def time_churn_then_hit(self, n: int) -> None:
        sf, live, fresh = _churning(n)
        for _ in range(n // 100):
            sf.remove(live.popleft())
            value = next(fresh)
            sf.add(value)
            live.append(value)
        sf.match_ids(n // MATCHES)


class AddRemove:
    """add and remove at n values (O(log n))."""

    params = SIZES
    param_names = ["values"]
    number = 2000
    repeat = 10

    def time_add_remove(self, n: int) -> None:
        sf = _warm(n)
        v = sf.next_id + 10**12
        sf.add(v)
        sf.remove(v)
