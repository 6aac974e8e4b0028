"""What a TopicIndex subscribe costs on mercure1, by how new its URL Patterns are.

Not an asv suite (the same methods run there, in ``Mercure1Subscribe``): one process, CPU
time, the four costs side by side at one size, so they compare as ratios. Each method is
timed in runs of ``BATCH`` calls, the four in turn: a call timed alone, right after a
compile, measured 2-2.5x more on a known-pattern subscribe (caches left cold by the
compile, and the clock's own ~2 us). From the repository root, under ``flock
/tmp/skipfilter-bench.lock`` on a shared machine:
``.venv/bin/python benchmarks/index/urlpattern_subscribe.py 100000``.
Figures: docs/benchmarks.md#mercure-10-url-patterns-mercure1.
"""

import sys
import time

BATCH = 50  # calls per timed run of one method


def main(size: int, calls: int = 500) -> None:
    """Print microseconds per call of each Mercure1Subscribe method at ``size`` subscribers."""
    calls = max(BATCH, calls - calls % BATCH)
    sys.path.insert(0, ".")  # the benchmarks package: run from the repository root
    from benchmarks.asv_suites.bench_workloads import Mercure1Subscribe

    suite = Mercure1Subscribe()
    suite.number, suite.repeat = calls, 1
    suite.setup(size)
    names = (
        "time_subscribe_known_patterns",
        "time_subscribe_new_literal_pattern",
        "time_subscribe_new_template",
        "time_urlpattern_compile",
    )
    methods = [getattr(suite, name) for name in names]
    spent = [0.0] * len(names)
    clock = time.process_time
    for _ in range(calls // BATCH):  # round-robin, so that a load change hits all four
        for i, method in enumerate(methods):
            start = clock()
            for _ in range(BATCH):
                method(size)
            spent[i] += clock() - start
    costs = {name: total / calls * 1e6 for name, total in zip(names, spent, strict=True)}
    compile_us = costs["time_urlpattern_compile"]
    for name, us in costs.items():
        print(f"{name:40} {us:9.1f} us  ({us / compile_us:.2f}x the package's compile)")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 100_000)
