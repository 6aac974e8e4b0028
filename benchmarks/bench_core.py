"""asv suite for SkipFilter.match_ids: a cache hit, a cache miss, and a hit after churn.

Values are ints, keys are divisors chosen so a key matches ~42 values whatever n is
(the Go skipfilter's published MatchAny figure uses 42 matches).
"""

from __future__ import annotations

import itertools

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


class MatchIds:
    """match_ids on one key, at n values.

    ``number`` is explicit: left to itself asv picks 1 here (setup is slow), and
    one cold call per sample measures cache misses, not the hit path.
    """

    params = SIZES
    param_names = ["values"]
    number = 2000
    repeat = 10

    def setup(self, n: int) -> None:
        self.sf = _filled(n)
        self.key = n // MATCHES
        self.sf.match_ids(self.key)  # warm: the hit path
        self.fresh_keys = itertools.count(n + 1)  # never seen: the miss path

    def time_hit(self, n: int) -> None:
        self.sf.match_ids(self.key)

    def time_hit_match_any(self, n: int) -> None:
        self.sf.match_any(self.key)

    def peakmem_filled(self, n: int) -> None:
        sf = _filled(n)
        sf.match_ids(self.key)


class MatchIdsMiss:
    """match_ids on a key never seen before: tests every value once (O(n))."""

    params = SIZES
    param_names = ["values"]
    number = 5
    repeat = 10

    def setup(self, n: int) -> None:
        self.sf = _filled(n)
        self.fresh_keys = itertools.count(n + 1)

    def time_miss(self, n: int) -> None:
        self.sf.match_ids(next(self.fresh_keys))


class AfterChurn:
    """A cached key after 1% of values were removed and as many added: prune + cursor catch-up."""

    params = SIZES
    param_names = ["values"]
    number = 1
    repeat = 20

    def setup(self, n: int) -> None:
        self.sf = _filled(n)
        self.key = n // MATCHES
        self.sf.match_ids(self.key)
        for v in range(0, n, 100):
            self.sf.remove(v)
            self.sf.add(n + v)

    def time_first_hit_after_churn(self, n: int) -> None:
        self.sf.match_ids(self.key)


class AddRemove:
    """add and remove at n values (O(log n))."""

    params = SIZES
    param_names = ["values"]
    number = 2000
    repeat = 10

    def setup(self, n: int) -> None:
        self.sf = _filled(n)
        self.next = itertools.count(n)

    def time_add_remove(self, n: int) -> None:
        v = next(self.next)
        self.sf.add(v)
        self.sf.remove(v)
