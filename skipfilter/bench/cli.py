"""``skipfilter bench`` and ``benchmarks/index/compare.py``: options, then measure and report."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from skipfilter.bench import report as bench_report
from skipfilter.bench.measure import grid, measure, resolve
from skipfilter.bench.model import QUICK_SIZES, SIZES, WORKLOADS, Config

__all__ = ["add_arguments", "config_from", "main", "run"]


def _sizes(text: str) -> tuple[int, ...]:
    """Parse ``1k,10k,1M`` into integers."""
    out = []
    for part in text.split(","):
        part = part.strip().lower()
        scale = {"k": 1_000, "m": 1_000_000}.get(part[-1:], 1)
        try:
            out.append(int(float(part.rstrip("km")) * scale))
        except ValueError:
            raise argparse.ArgumentTypeError(f"bad size {part!r} in {text!r}") from None
    return tuple(out)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of ``skipfilter bench`` / ``benchmarks/index/compare.py``."""
    parser.add_argument(
        "--quick",
        action="store_true",
        help="about one minute: 1k and 10k, short budgets, memory at the largest size only",
    )
    parser.add_argument("--sizes", type=_sizes, help="subscriber counts, e.g. 1k,10k,100k,1M")
    parser.add_argument(
        "--workload",
        action="append",
        choices=WORKLOADS,
        help="only this workload (repeatable; default: all)",
    )
    parser.add_argument(
        "--impl",
        action="append",
        help="only this implementation (repeatable; TopicIndex always runs)",
    )
    parser.add_argument("--messages", type=int, help="operations per workload (default 5000)")
    parser.add_argument(
        "--budget", type=float, help="seconds of timing per cell before sampling (default 3)"
    )
    parser.add_argument(
        "--cap",
        type=int,
        default=100_000,
        help="largest N for every implementation but TopicIndex (LinearScan is extrapolated "
        "above it) and for the amqp/mqtt workloads",
    )
    parser.add_argument("--no-memory", action="store_true", help="skip the memory measurement")
    parser.add_argument(
        "--memory-sizes", type=_sizes, help="measure memory only at these sizes (default: all)"
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", action="store_true", help="print JSON instead of tables")
    parser.add_argument("--plot", metavar="DIR", help="write PNG charts into DIR")
    parser.add_argument(
        "--markdown",
        metavar="FILE",
        help="replace the generated section of FILE (between bench markers) with the tables",
    )


def config_from(args: argparse.Namespace) -> Config:
    """Turn parsed options into a :class:`Config`; --quick sets smaller defaults."""
    try:
        impls = tuple(resolve(name) for name in args.impl or ())
    except ValueError as exc:
        raise SystemExit(str(exc)) from None
    chosen = tuple(args.workload or WORKLOADS)
    sizes = args.sizes or (QUICK_SIZES if args.quick else SIZES)
    return Config(
        workloads=tuple(dict.fromkeys(chosen)),
        sizes=sizes,
        impls=impls,
        messages=args.messages or (500 if args.quick else 5_000),
        budget=args.budget if args.budget is not None else (0.3 if args.quick else 3.0),
        cap=args.cap,
        memory=not args.no_memory,
        memory_sizes=args.memory_sizes or ((max(sizes),) if args.quick else ()),
        seed=args.seed,
    )


def run(args: argparse.Namespace) -> int:
    """Entry point of ``skipfilter bench``: measure, then print, plot, write markdown."""
    bench_report.check_installed(plots=bool(args.plot))
    config = config_from(args)
    cells = sum(1 for _ in grid(config))
    report = bench_report.with_progress(lambda tick: measure(config, tick), cells)
    if args.json:
        bench_report.print_json(report)
    else:
        bench_report.print_tables(report)
    if args.plot:
        for path in bench_report.plot(report, args.plot):
            print(f"wrote {path}", file=sys.stderr)
    if args.markdown:
        bench_report.write_markdown(report, args.markdown, args.plot)
        print(f"wrote {args.markdown}", file=sys.stderr)
    return 0 if report.verified else 1


def main(argv: Sequence[str] | None = None) -> int:
    """Standalone entry point (``python -m skipfilter.bench``)."""
    parser = argparse.ArgumentParser(prog="skipfilter bench", description=__doc__)
    add_arguments(parser)
    return run(parser.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
