"""What a TopicIndex subscribe costs on mercure1, by how new its URL Patterns are.

Not an asv suite (the same methods run there, in ``Mercure1Subscribe``): one process, CPU
time, the four costs side by side at one size, so they compare as ratios. From the
repository root: ``.venv/bin/python benchmarks/urlpattern_subscribe.py 100000``.
Figures: docs/benchmarks.md.
"""

import sys
import time


def main(size: int, calls: int = 500) -> None:
    """Print microseconds per call of each Mercure1Subscribe method at ``size`` subscribers."""
    sys.path.insert(0, ".")  # the benchmarks package: run from the repository root
    from benchmarks.bench_workloads import Mercure1Subscribe

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
    for _ in range(calls):  # round-robin, so that a load change on the machine hits all four
        for i, method in enumerate(methods):
            start = clock()
            method(size)
            spent[i] += clock() - start
    costs = {name: total / calls * 1e6 for name, total in zip(names, spent, strict=True)}
    compile_us = costs["time_urlpattern_compile"]
    for name, us in costs.items():
        print(f"{name:40} {us:9.1f} us  ({us / compile_us:.2f}x the package's compile)")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 100_000)
