"""The ``skipfilter`` command: demo, hub (Mercure SSE), token (a dev access token), bench (side
by side), route (Spark)."""

from __future__ import annotations

import argparse
import importlib
import random
import sys
import time
from collections.abc import Callable, Sequence
from types import ModuleType

from skipfilter.core import SkipFilter
from skipfilter.errors import MissingExtra


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


#: Subcommands whose code lives behind an optional extra: name -> (module, extra, help).
_OPTIONAL_COMMANDS = {
    "hub": ("skipfilter.hub.cli", "hub", "run the Mercure SSE hub"),
    "route": ("skipfilter.spark.cli", "spark", "route a message log to subscriptions on Spark"),
    "token": ("skipfilter.hub.protocol.mint", "hub", "mint a Mercure 1.0 access token"),
}


def _optional_cli(name: str) -> ModuleType | None:
    """The CLI module of an optional subcommand, or None when its extra is not installed."""
    try:
        return importlib.import_module(_OPTIONAL_COMMANDS[name][0])
    except ImportError:
        return None


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``skipfilter`` command."""
    parser = argparse.ArgumentParser(prog="skipfilter", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    demo = commands.add_parser("demo", help="index a generated workload and time it")
    demo.add_argument("--subscribers", type=int, default=20_000)
    demo.add_argument("--messages", type=int, default=20_000)
    demo.add_argument("--seed", type=int, default=1)
    for name, (_, extra, summary) in _OPTIONAL_COMMANDS.items():
        command = commands.add_parser(name, help=f"{summary} (needs skipfilter[{extra}])")
        module = _optional_cli(name)
        if module is not None:  # without the extra, running the command says so
            module.add_arguments(command)
    from skipfilter.bench import cli as bench_module

    bench = commands.add_parser(
        "bench", help="every implementation side by side on one seeded workload (skipfilter[bench])"
    )
    bench_module.add_arguments(bench)
    args = parser.parse_args(argv)
    if args.command == "bench":
        try:
            return bench_module.run(args)
        except MissingExtra as exc:
            parser.exit(2, f"{exc}\n")
    if args.command in _OPTIONAL_COMMANDS:
        module = _optional_cli(args.command)
        if module is None:
            extra = _OPTIONAL_COMMANDS[args.command][1]
            parser.exit(2, f"skipfilter {args.command} needs skipfilter[{extra}]\n")
        run: Callable[[argparse.Namespace], int] = module.run
        return run(args)
    if args.command == "demo":
        return _demo(args.subscribers, args.messages, args.seed)
    parser.error(f"unknown command {args.command!r}")
    return 2


if __name__ == "__main__":
    sys.exit(main())
