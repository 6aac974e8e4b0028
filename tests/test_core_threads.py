"""SkipFilter under real threads: the add/remove guarantees hold on every result."""

from __future__ import annotations

import random
import sys
import threading
import time

from skipfilter import SkipFilter

KEYS = (2, 3, 5, 7)
RUN_SECONDS = 1.5


def divides(value: int, key: int) -> bool:
    return value % key == 0


def test_results_respect_completed_adds_and_removes() -> None:
    """Writers publish what is settled; readers check every match against it.

    A value is *settled present* once add() returned and remove() has not started;
    *settled absent* once remove() returned. Each reader snapshots both sets
    around match_ids: every value settled present throughout that passes must be
    in the result, no value settled absent before the call may be.
    """
    old_interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-5)  # force frequent thread switches, to provoke races
    try:
        sf: SkipFilter[int, int] = SkipFilter(divides, size=2)  # tiny: evictions and rebuilds
        lock = threading.Lock()
        present: dict[int, int] = {}  # value -> id, add() returned, remove() not started
        absent: dict[int, int] = {}  # value -> id, remove() returned
        errors: list[str] = []
        stop = time.monotonic() + RUN_SECONDS
        checks = [0]

        def writer(seed: int) -> None:
            rng = random.Random(seed)
            mine: list[int] = []
            next_value = seed * 1_000_000
            while time.monotonic() < stop and not errors:
                if mine and rng.random() < 0.45:
                    value = mine.pop(rng.randrange(len(mine)))
                    with lock:
                        id_ = present.pop(value)
                    assert sf.remove(value)
                    with lock:
                        absent[value] = id_
                else:
                    next_value += 1
                    id_ = sf.add(next_value)
                    mine.append(next_value)
                    with lock:
                        present[next_value] = id_

        def reader(seed: int) -> None:
            rng = random.Random(seed)
            while time.monotonic() < stop and not errors:
                keys = tuple(rng.sample(KEYS, rng.randint(1, 2)))
                with lock:
                    must = {i for v, i in present.items() if any(divides(v, k) for k in keys)}
                    must_not = set(absent.values())
                got = set(sf.match_ids(*keys))
                with lock:  # a value whose removal began meanwhile is not settled: drop it
                    must &= {i for v, i in present.items() if any(divides(v, k) for k in keys)}
                if not must <= got:
                    errors.append(f"missing settled ids {sorted(must - got)[:5]} for {keys}")
                if got & must_not:
                    errors.append(f"returned removed ids {sorted(got & must_not)[:5]}")
                checks[0] += 1

        threads = [threading.Thread(target=writer, args=(s,)) for s in (1, 2, 3)]
        threads += [threading.Thread(target=reader, args=(s,)) for s in (10, 11, 12)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=30)
        assert not any(t.is_alive() for t in threads), "a thread hung"
    finally:
        sys.setswitchinterval(old_interval)
    assert not errors, errors[:3]
    assert checks[0] > 50, f"readers only ran {checks[0]} checks"
    for key in KEYS:
        expected = sorted(i for v, i in present.items() if divides(v, key))
        assert list(sf.match_ids(key)) == expected
    assert len(sf) == len(present)


def test_concurrent_misses_on_one_key_test_each_value_once() -> None:
    """Two threads missing the same key must not both build it (a Go skipfilter race)."""
    calls = [0]
    gate = threading.Barrier(8)

    def counting(value: int, key: int) -> bool:
        calls[0] += 1
        return divides(value, key)

    sf: SkipFilter[int, int] = SkipFilter(counting, size=10)
    for v in range(2000):
        sf.add(v)
    results: list[list[int]] = []

    def look() -> None:
        gate.wait()
        results.append(list(sf.match_ids(3)))

    threads = [threading.Thread(target=look) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=30)
    assert calls[0] == 2000
    assert all(r == list(range(0, 2000, 3)) for r in results) and len(results) == 8
