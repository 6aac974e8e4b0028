"""The ``skipfilter`` command: a live demonstration now; hub, bench and route as they land."""

from __future__ import annotations

import argparse
import random
import sys
import time
from collections.abc import Sequence

from skipfilter.core import SkipFilter


def _demo(subscribers: int, messages: int, seed: int) -> int:
    """Index generated subscribers, match messages, and compare with a linear scan."""
    rng = random.Random(seed)
    sections = [f"https://example.com/{s}/" for s in ("books", "users", "orders", "news")]
    selectors = [f"{rng.choice(sections)}{rng.randrange(subscribers)}" for _ in range(subscribers)]
    selectors += sections  # a few broad subscriptions
    selectors = list(dict.fromkeys(selectors))  # add() is idempotent: compare like with like

    def passes(selector: str, topic: str) -> bool:
        return topic.startswith(selector)

    sf: SkipFilter[str, str] = SkipFilter(passes, size=10_000)
    start = time.perf_counter()
    for selector in selectors:
        sf.add(selector)
    added = time.perf_counter() - start
    print(f"added {len(sf):,} subscribers in {added * 1e3:.1f} ms")

    hot = [f"{rng.choice(sections)}{rng.randrange(subscribers)}" for _ in range(50)]
    topics = [rng.choice(hot) for _ in range(messages)]
    start = time.perf_counter()
    delivered = sum(len(sf.match_ids(topic)) for topic in topics)
    indexed = time.perf_counter() - start

    sample = topics[: max(1, messages // 20)]
    start = time.perf_counter()
    scanned = sum(sum(passes(s, t) for s in selectors) for t in sample)
    linear = (time.perf_counter() - start) * len(topics) / len(sample)
    expected = sum(len(sf.match_ids(t)) for t in sample)
    assert scanned == expected, "index and linear scan disagree"

    print(f"matched {messages:,} messages ({delivered:,} deliveries) in {indexed * 1e3:.1f} ms")
    print(f"  skipfilter : {indexed / messages * 1e6:10.2f} us/message")
    print(f"  linear scan: {linear / messages * 1e6:10.2f} us/message (estimated from a sample)")
    print(f"  speed-up   : {linear / indexed:10.0f}x")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``skipfilter`` command."""
    parser = argparse.ArgumentParser(prog="skipfilter", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    demo = commands.add_parser("demo", help="index a generated workload and time it")
    demo.add_argument("--subscribers", type=int, default=20_000)
    demo.add_argument("--messages", type=int, default=20_000)
    demo.add_argument("--seed", type=int, default=1)
    hub = commands.add_parser("hub", help="run the Mercure SSE hub (needs skipfilter[hub])")
    try:
        from skipfilter.hub.cli import add_arguments as add_hub_arguments
    except ImportError:  # the hub extra is not installed; `hub` will say so
        pass
    else:
        add_hub_arguments(hub)
    route = commands.add_parser(
        "route", help="route a message log to subscriptions on Spark (needs skipfilter[spark])"
    )
    try:
        from skipfilter.spark.cli import add_arguments as add_route_arguments
    except ImportError:  # the spark extra is not installed; `route` will say so
        pass
    else:
        add_route_arguments(route)
    from skipfilter import bench as bench_module

    bench = commands.add_parser(
        "bench", help="every implementation side by side on one seeded workload (skipfilter[bench])"
    )
    bench_module.add_arguments(bench)
    args = parser.parse_args(argv)
    if args.command == "bench":
        return bench_module.run(args)
    if args.command == "route":
        try:
            from skipfilter.spark.cli import run as run_route
        except ImportError as error:
            parser.exit(2, f"skipfilter route needs skipfilter[spark]: {error}\n")
        return run_route(args)
    if args.command == "hub":
        from skipfilter.hub.cli import run as run_hub

        return run_hub(args)
    if args.command == "demo":
        return _demo(args.subscribers, args.messages, args.seed)
    parser.error(f"unknown command {args.command!r}")
    return 2


if __name__ == "__main__":
    sys.exit(main())
