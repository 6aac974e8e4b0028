"""The ``skipfilter`` command: demo, hub (Mercure SSE), token (a dev access token), bench (side
by side), route (Spark).

Its help is plain text (``DESCRIPTION``), a mistake on the command line one line naming the
flag (exit 2), and a command whose extra is missing says which command installs it.
"""

from __future__ import annotations

import argparse
import importlib
import random
import sys
import time
from collections.abc import Callable, Sequence
from types import ModuleType
from typing import NoReturn

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
    "hub": ("skipfilter.hub.server.cli", "hub", "run the Mercure SSE hub"),
    "route": ("skipfilter.spark.cli", "spark", "route a message log to subscriptions on Spark"),
    "token": (
        "skipfilter.hub.server.token_command",
        "hub",
        "mint a Mercure 1.0 access token",
    ),
}


def _optional_cli(name: str) -> ModuleType | None:
    """The CLI module of an optional subcommand, or None when its extra is not installed."""
    try:
        return importlib.import_module(_OPTIONAL_COMMANDS[name][0])
    except ImportError:
        return None


DESCRIPTION = (
    "skipfilter: an inverted roaring-bitmap subscriber index, a Mercure hub built on it, and "
    "the tools around them. Run 'skipfilter COMMAND --help' for a command's flags."
)


class _Parser(argparse.ArgumentParser):
    """A parser whose mistakes are one line naming the flag (not the whole usage), exit 2."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: {message} (see {self.prog} --help)\n")


def _version() -> str:
    """The installed distribution's version (the package's own from a plain checkout)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("skipfilter")
    except PackageNotFoundError:
        import skipfilter

        return skipfilter.__version__


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``skipfilter`` command."""
    parser = _Parser(prog="skipfilter", description=DESCRIPTION)
    parser.add_argument("--version", action="version", version=f"skipfilter {_version()}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    demo = commands.add_parser(
        "demo",
        help="index a generated workload and time it",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    demo.add_argument("--subscribers", type=int, default=20_000)
    demo.add_argument("--messages", type=int, default=20_000)
    demo.add_argument("--seed", type=int, default=1)
    for name, (_, extra, summary) in _OPTIONAL_COMMANDS.items():
        command = commands.add_parser(name, help=f"{summary} (needs skipfilter[{extra}])")
        module = _optional_cli(name)
        if module is not None:
            module.add_arguments(command)
    from skipfilter.bench import cli as bench_module

    bench = commands.add_parser(
        "bench", help="every implementation side by side on one seeded workload (skipfilter[bench])"
    )
    bench_module.add_arguments(bench)
    args, unknown = parser.parse_known_args(argv)
    if unknown and not (args.command in _OPTIONAL_COMMANDS and _optional_cli(args.command) is None):
        parser.error(f"unrecognized arguments: {' '.join(unknown)}")  # else: the extra is named
    if args.command == "bench":
        try:
            return bench_module.run(args)
        except MissingExtra as exc:
            parser.exit(2, f"{exc}\n")
    if args.command in _OPTIONAL_COMMANDS:
        module = _optional_cli(args.command)
        if module is None:
            extra = _OPTIONAL_COMMANDS[args.command][1]
            from skipfilter.extras import missing

            parser.exit(2, missing(f"skipfilter {args.command}: not installed", extra) + "\n")
        run: Callable[[argparse.Namespace], int] = module.run
        return run(args)
    if args.command == "demo":
        return _demo(args.subscribers, args.messages, args.seed)
    parser.error(f"unknown command {args.command!r}")
    return 2


if __name__ == "__main__":
    sys.exit(main())
