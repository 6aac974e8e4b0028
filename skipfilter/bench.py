"""Side-by-side benchmark: every implementation, one seeded workload, one process.

Absolute times on shared machines drift from run to run; ratios measured in one run on
the same subscribers and messages do not. So this module runs each implementation of
:class:`~skipfilter.matcher.Matcher` over exactly the same workload, checks that they all
return the same recipients as :class:`~skipfilter.index.TopicIndex`, and reports
per-operation costs and ratios. ``skipfilter bench`` and ``benchmarks/compare.py`` are
its command line; the tables, JSON and charts live in :mod:`skipfilter.benchreport`.

- :func:`implementations` -- name -> factory of every implementation available.
- :func:`measure` -- run the whole grid; returns a :class:`Report`.
- :func:`add_arguments`, :func:`run` -- the command line.
"""

from __future__ import annotations

import argparse
import gc
import os
import platform
import subprocess
import sys
import time
import tracemalloc
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import asdict, dataclass, field
from multiprocessing import get_context
from typing import Any

from skipfilter import workloads
from skipfilter.matcher import Matcher
from skipfilter.workloads import Op, Subscriber

__all__ = ["Cell", "Report", "add_arguments", "implementations", "measure", "run"]

Factory = Callable[[str], Matcher]

REFERENCE = "TopicIndex"  # every other implementation's recipients are checked against it
BASELINE = "LinearScan"  # the "vs LinearScan" column: Mercure <= 0.13
#: Implementations whose cost per new topic grows with N.
SCANS = frozenset({"LinearScan", "CachedScan"})
#: Workloads run above ``--cap`` (TopicIndex only): the Mercure ones issue 3 is about.
BEYOND_CAP = frozenset({"mercure", "hot", "churn"})
WORKLOADS = ("mercure", "hot", "churn", "amqp", "mqtt")
#: Where memory is measured: hot and churn reuse mercure's subscribers, amqp is mqtt respelled.
MEMORY_WORKLOADS = frozenset({"mercure", "mqtt"})
SIZES = (1_000, 10_000, 100_000, 1_000_000)
QUICK_SIZES = (1_000, 10_000)


#: Display names of the registry's implementations (:data:`skipfilter.adapters.IMPLEMENTATIONS`).
DISPLAY = {
    "topicindex": "TopicIndex",
    "linearscan": "LinearScan",
    "cachedscan": "CachedScan",
    "lockedtrie": "LockedTrie",
    "ctrie": "Ctrie",
    "paho": "Paho",
}


def implementations() -> dict[str, Factory]:
    """Every Matcher implementation of the registry, by display name.

    Reads :data:`skipfilter.adapters.IMPLEMENTATIONS`, so a new implementation shows
    up in the report without edits here.
    """
    from skipfilter.adapters import IMPLEMENTATIONS

    return {DISPLAY.get(name, name): factory for name, factory in IMPLEMENTATIONS.items()}


def resolve(name: str) -> str:
    """The display name for ``name`` in any case (``linearscan`` -> ``LinearScan``)."""
    for known in implementations():
        if known.lower() == name.lower():
            return known
    raise ValueError(f"unknown implementation {name!r}; available: {', '.join(implementations())}")


def _make(factory: Factory, syntax: str) -> Matcher | None:
    """An empty matcher for ``syntax``, or None when the implementation lacks that syntax."""
    try:
        return factory(syntax)
    except (ValueError, NotImplementedError, KeyError):
        return None


@dataclass(frozen=True, slots=True)
class Scenario:
    """One workload at one size: subscribers to load first, then ops to time."""

    workload: str
    syntax: str
    subscribers: list[Subscriber]
    ops: list[Op]  # an unsubscribe's target is a subscriber position (see _positions)
    extras: list[Subscriber]  # fresh subscribers for the marginal subscribe/unsubscribe cost


def scenario(workload: str, size: int, messages: int, seed: int) -> Scenario:
    """Generate ``workload`` at ``size`` subscribers with ``messages`` timed operations."""
    extras_n = min(size, 1_000)
    if workload in ("amqp", "mqtt"):
        w = workloads.amqp(size, messages, seed=seed)
        extra = workloads.amqp(extras_n, 0, seed=seed + 1).subscribers
        if workload == "mqtt":
            w, extra = _as_mqtt(w), _as_mqtt(workloads.Workload("", "", extra, [])).subscribers
        return Scenario(workload, w.syntax, w.subscribers, _publishes(w), extra)
    extra = workloads.mercure(extras_n, 0, seed=seed + 1).subscribers
    if workload == "mercure":
        return Scenario(
            workload, "mercure", *_split(workloads.mercure(size, messages, seed)), extra
        )
    if workload == "hot":
        return Scenario(workload, "mercure", *_split(workloads.hot(size, messages, seed)), extra)
    if workload == "churn":
        ops = workloads.churn(size, messages, seed=seed)
        subs = [op.subscriber for op in ops[:size] if op.subscriber is not None]
        return Scenario(workload, "mercure", subs, ops[size:], extra)
    raise ValueError(f"unknown workload {workload!r}; expected one of {', '.join(WORKLOADS)}")


def _as_mqtt(w: workloads.Workload) -> workloads.Workload:
    """The amqp workload in MQTT spelling: ``/`` levels, ``+`` for ``*``.

    Same matches: the generator puts ``#`` only last, where both mean "zero or more
    trailing words", and no topic starts with ``$``. Lets Paho join the comparison.
    """

    def convert(text: str) -> str:
        return "/".join("+" if word == "*" else word for word in text.split("."))

    subs = [Subscriber(tuple(map(convert, s.selectors))) for s in w.subscribers]
    msgs = [workloads.Message(tuple(map(convert, m.topics)), m.private) for m in w.messages]
    return workloads.Workload("mqtt", "mqtt", subs, msgs)


def _publishes(w: workloads.Workload) -> list[Op]:
    return [Op("publish", message=m) for m in w.messages]


def _split(w: workloads.Workload) -> tuple[list[Subscriber], list[Op]]:
    return w.subscribers, _publishes(w)


@dataclass(slots=True)
class Cell:
    """One implementation on one workload at one size; None where not measured."""

    workload: str
    size: int
    impl: str
    us_per_op: float | None = None
    ops_per_s: float | None = None
    ops_timed: int = 0
    ops_total: int = 0
    sampled: bool = False  # timed on the first ops_timed of ops_total operations
    extrapolated: bool = False  # us_per_op scaled linearly from the largest measured size
    subscribe_us: float | None = None  # marginal, at this size
    unsubscribe_us: float | None = None
    build_s: float | None = None  # loading all subscribers
    heap_bytes_per_sub: float | None = None  # tracemalloc: Python objects only
    rss_bytes_per_sub: float | None = None  # resident memory: C bitmaps too
    ratio_to_best: float | None = None
    speedup_vs_linear: float | None = None
    verified: bool | None = None  # same recipients as TopicIndex on every timed publish
    mismatches: int = 0
    unsupported: bool = False  # the implementation lacks the workload's syntax
    note: str = ""


@dataclass(slots=True)
class Report:
    """All cells of one run, plus where and how it ran."""

    cells: list[Cell]
    config: dict[str, Any]
    machine: dict[str, Any] = field(default_factory=dict)

    @property
    def verified(self) -> bool:
        """True when every implementation compared agreed with TopicIndex everywhere."""
        return all(c.verified is not False for c in self.cells)

    def to_json(self) -> dict[str, Any]:
        """A plain dict for ``--json``."""
        return {
            "machine": self.machine,
            "config": self.config,
            "verified": self.verified,
            "results": [asdict(c) for c in self.cells],
        }


@dataclass(slots=True)
class _Run:
    """What timing one implementation produced, before it becomes a Cell."""

    build_s: float
    per_op: float  # seconds of CPU per op, over all the ops timed
    timed: int
    subscribe_us: float
    unsubscribe_us: float


# One op, unpacked before the clock starts: (kind, first argument, second argument).
_PUBLISH, _SUBSCRIBE, _UNSUBSCRIBE = range(3)
_Step = tuple[int, Any, Any]


def _steps(scen: Scenario) -> list[_Step]:
    """The ops of ``scen`` as plain tuples, so the timed loop reads no attributes."""
    steps: list[_Step] = []
    for op in scen.ops:
        if op.message is not None:
            steps.append((_PUBLISH, op.message.topics, op.message.private))
        elif op.subscriber is not None:
            steps.append((_SUBSCRIBE, op.subscriber.selectors, op.subscriber.allowed))
        else:
            steps.append((_UNSUBSCRIBE, op.target, None))
    return steps


def _subscribe_all(matcher: Matcher, scen: Scenario) -> tuple[float, dict[int, int]]:
    """Subscribe every subscriber: (seconds taken, subscriber position -> sid)."""
    subscribe = matcher.subscribe
    gc.collect()
    start = time.perf_counter()
    sids = [subscribe(s.selectors, s.allowed) for s in scen.subscribers]
    return time.perf_counter() - start, dict(enumerate(sids))


def _run_steps(
    matcher: Matcher,
    steps: list[_Step],
    first: int,
    sid_at: dict[int, int],
    initial: int,
    keep: list[Any] | None,
) -> None:
    """Run ``steps``, numbered from ``first``; a publish's result goes to ``keep`` or
    is dropped. ``sid_at`` maps subscriber positions to sids: the subscribe of step i
    is position ``initial + i``, after the ``initial`` subscribers loaded first."""
    match, subscribe, unsubscribe = matcher.match, matcher.subscribe, matcher.unsubscribe
    for i, (kind, a, b) in enumerate(steps, first):
        if kind == _PUBLISH:
            result = match(a, b)
            if keep is not None:
                keep.append((i, result))
        elif kind == _SUBSCRIBE:
            sid_at[initial + i] = subscribe(a, b)
        else:
            unsubscribe(sid_at[a])


def _time_ops(matcher: Matcher, scen: Scenario, budget: float) -> _Run:
    """Load the subscribers, then time the ops in order until done or over ``budget`` s.

    Costs are process CPU time, not wall time: on a shared machine a 30 ms window
    of fast lookups loses whole scheduler slices to other jobs, which would bias
    ratios against the fastest implementation. Ops run in chunks (1, 2, 4, ... up to
    256, or what the wall-time budget left is expected to hold) so the clock is not
    read per op. The cost per op is the mean: a median would favour the sampled
    scans, whose few timed ops are mostly the cheaper public updates (LinearScan at
    100k: 138 ms public, ~370 ms private).

    Results are dropped as a hub drops them once delivered: keeping 5,000 results
    alive cost TopicIndex +1.3 us per publish (fresh memory for every bitmap), a
    harness cost. :func:`_replay` collects recipients, untimed, on a fresh matcher.

    At least three ops are timed; a scan at large N is therefore timed on a sample
    (the first ops), which the report says.
    """
    build_s, sid_at = _subscribe_all(matcher, scen)
    steps, initial = _steps(scen), len(scen.subscribers)
    gc.collect()
    clock, cpu = time.perf_counter, time.process_time
    began = clock()
    deadline = began + budget
    timed, chunk = 0, 1
    spent = 0.0  # CPU seconds
    while timed < len(steps):
        start = cpu()
        _run_steps(matcher, steps[timed : timed + chunk], timed, sid_at, initial, None)
        spent += cpu() - start
        timed = min(len(steps), timed + chunk)
        now = clock()
        if timed >= 3 and now > deadline:
            break
        # Grow the chunk, but not past what the budget left is expected to hold.
        fits = (deadline - now) / ((now - began) / timed)
        chunk = max(1, int(min(2 * chunk, 256, fits)))
    sub_us, unsub_us = _marginal(matcher, scen.extras)
    return _Run(build_s, spent / max(1, timed), timed, sub_us, unsub_us)


def _replay(matcher: Matcher, scen: Scenario, count: int) -> dict[int, list[int]]:
    """Load ``matcher`` and run the first ``count`` ops untimed: per publish (by op
    index), its recipients as sorted subscriber positions."""
    _, sid_at = _subscribe_all(matcher, scen)
    results: list[tuple[int, Any]] = []
    _run_steps(matcher, _steps(scen)[:count], 0, sid_at, len(scen.subscribers), results)
    position = {sid: pos for pos, sid in sid_at.items()}
    return {i: sorted(position[sid] for sid in bitmap) for i, bitmap in results}


def _marginal(matcher: Matcher, extras: list[Subscriber]) -> tuple[float, float]:
    """Microseconds (CPU) to subscribe, then unsubscribe, one more subscriber at this size."""
    gc.collect()
    start = time.process_time()
    sids = [matcher.subscribe(s.selectors, s.allowed) for s in extras]
    middle = time.process_time()
    for sid in sids:
        matcher.unsubscribe(sid)
    end = time.process_time()
    n = max(1, len(extras))
    return (middle - start) / n * 1e6, (end - middle) / n * 1e6


def _rss() -> int | None:
    """Resident set size in bytes (Linux), or None."""
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return None


def _load(factory: Factory, scen: Scenario) -> Matcher:
    matcher = _make(factory, scen.syntax)
    if matcher is None:
        raise ValueError(f"this implementation has no {scen.syntax} syntax")
    for s in scen.subscribers:
        matcher.subscribe(s.selectors, s.allowed)
    return matcher


def rss_per_subscriber(factory: Factory, scen: Scenario) -> float | None:
    """Resident memory added by loading ``scen``'s subscribers, per subscriber.

    Counts CRoaring's bitmaps, which tracemalloc cannot see. Meaningful only in a
    process that has not freed much memory before (it would be reused unseen).
    """
    gc.collect()
    before = _rss()
    matcher = _load(factory, scen)
    after = _rss()
    del matcher
    if before is None or after is None:
        return None
    return max(0, after - before) / max(1, len(scen.subscribers))


def heap_per_subscriber(factory: Factory, scen: Scenario) -> float:
    """Python-heap bytes (tracemalloc) held after loading ``scen``'s subscribers, per subscriber."""
    gc.collect()
    tracemalloc.start()
    try:
        matcher = _load(factory, scen)
        heap = tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()
    del matcher
    return heap / max(1, len(scen.subscribers))


def memory_child(workload: str, size: int, impl: str, seed: int) -> tuple[float | None, float]:
    """Bytes per subscriber of ``impl`` loaded with the workload: (RSS, tracemalloc).

    Runs in a fresh process so the RSS delta is not hidden by memory an earlier
    build freed; tracemalloc sees only Python's allocator, hence both figures.
    """
    scen = scenario(workload, size, 0, seed)
    factory = implementations()[impl]
    return rss_per_subscriber(factory, scen), heap_per_subscriber(factory, scen)


def _memory(workload: str, size: int, impl: str, seed: int) -> tuple[float | None, float | None]:
    """Run :func:`memory_child` in a fresh spawned process."""
    with ProcessPoolExecutor(1, mp_context=get_context("spawn")) as pool:
        try:
            return pool.submit(memory_child, workload, size, impl, seed).result()
        except Exception as exc:  # a failed child must not sink the whole report
            print(f"memory of {impl} at {size:,} failed: {exc}", file=sys.stderr)
            return None, None


def machine() -> dict[str, Any]:
    """Where the run happened: CPU, cores, Python, commit, date."""
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as f:
            names = [line.split(":", 1)[1].strip() for line in f if line.startswith("model name")]
        cpu = names[0] if names else cpu
    except OSError:
        pass
    try:
        commit = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=False
        ).stdout.strip()
    except OSError:
        commit = ""
    return {
        "cpu": cpu,
        "cores": os.cpu_count(),
        "python": platform.python_version(),
        "platform": platform.platform(),
        "commit": commit,
        "date": time.strftime("%Y-%m-%d %H:%M %Z"),
    }


@dataclass(frozen=True, slots=True)
class Config:
    """What to run; see :func:`add_arguments` for the meaning of each field."""

    workloads: tuple[str, ...] = WORKLOADS
    sizes: tuple[int, ...] = SIZES
    impls: tuple[str, ...] = ()  # empty: all
    messages: int = 5_000
    budget: float = 3.0
    cap: int = 100_000  # above: TopicIndex only, mercure workloads only
    memory: bool = True
    memory_sizes: tuple[int, ...] = ()  # empty: every size
    seed: int = 0


def grid(config: Config) -> Iterator[tuple[str, int, str]]:
    """(workload, size, impl) in run order; the reference runs first at each size."""
    names = [REFERENCE, *(n for n in implementations() if n != REFERENCE)]
    chosen = [n for n in names if not config.impls or n in config.impls or n == REFERENCE]
    for workload in config.workloads:
        for size in sorted(config.sizes):
            if size > config.cap and workload not in BEYOND_CAP:
                continue
            for impl in chosen:
                yield workload, size, impl


def _quiet(label: str, advance: int) -> None:
    """The default progress callback: none."""


def measure(config: Config, progress: Callable[[str, int], None] = _quiet) -> Report:
    """Run every (workload, size, implementation) of ``config``.

    ``progress(label, advance)`` is called as work starts on a cell (advance 0) and
    when it is done (advance 1).
    """
    factories = implementations()
    cells: list[Cell] = []
    scen: Scenario | None = None
    key: tuple[str, int] | None = None
    reference: dict[int, list[int]] | None = None  # TopicIndex's recipients, by op
    for workload, size, impl in grid(config):
        label = f"{workload} {size:,} {impl}"
        progress(label, 0)
        if scen is None or key != (workload, size):
            scen, reference = None, None  # free the previous size before the next
            gc.collect()
            scen, key = scenario(workload, size, config.messages, config.seed), (workload, size)
        cell = Cell(workload, size, impl, ops_total=len(scen.ops))
        cells.append(cell)
        matcher = _make(factories[impl], scen.syntax)
        if matcher is None:
            cell.unsupported, cell.note = True, f"no {scen.syntax} syntax"
            progress(label, 1)
            continue
        if size > config.cap and impl != REFERENCE:
            why = "O(N) per new topic" if impl in SCANS else "loading takes minutes"
            cell.note = f"not run above {config.cap:,} subscribers ({why})"
            progress(label, 1)
            continue
        # The reference runs every op: the others are checked against its recipients.
        budget = float("inf") if impl == REFERENCE else config.budget
        result = _time_ops(matcher, scen, budget)
        del matcher
        gc.collect()
        cell.ops_timed = result.timed
        cell.sampled = result.timed < len(scen.ops)
        cell.us_per_op = result.per_op * 1e6
        cell.ops_per_s = 1e6 / cell.us_per_op if cell.us_per_op else None
        cell.build_s = result.build_s
        cell.subscribe_us, cell.unsubscribe_us = result.subscribe_us, result.unsubscribe_us
        if impl == REFERENCE:
            cell.verified = True
        else:  # recipients from untimed replays on fresh matchers (see _time_ops)
            if reference is None:
                reference = _replay(factories[REFERENCE](scen.syntax), scen, len(scen.ops))
            mine = _replay(factories[impl](scen.syntax), scen, result.timed)
            bad = sum(reference[i] != r for i, r in mine.items())
            cell.verified, cell.mismatches = bad == 0, bad
        if (
            config.memory
            and workload in MEMORY_WORKLOADS
            and (not config.memory_sizes or size in config.memory_sizes)
        ):
            progress(f"{label} (memory)", 0)
            cell.rss_bytes_per_sub, cell.heap_bytes_per_sub = _memory(
                workload, size, impl, config.seed
            )
        progress(label, 1)
    _extrapolate(cells, config)
    _ratios(cells)
    return Report(cells, asdict(config), machine())


def _extrapolate(cells: list[Cell], config: Config) -> None:
    """Fill LinearScan above the cap from its largest measured size (it is O(N) per op)."""
    for cell in cells:
        if cell.impl != BASELINE or cell.us_per_op is not None or cell.size <= config.cap:
            continue
        measured = [
            c
            for c in cells
            if c.impl == BASELINE
            and c.workload == cell.workload
            and c.us_per_op
            and not c.extrapolated
        ]
        if not measured:
            continue
        top = max(measured, key=lambda c: c.size)
        assert top.us_per_op is not None
        cell.us_per_op = top.us_per_op * cell.size / top.size
        cell.ops_per_s = 1e6 / cell.us_per_op
        cell.extrapolated = True
        cell.note = f"extrapolated x{cell.size // top.size} from {top.size:,} (not run)"


def _ratios(cells: list[Cell]) -> None:
    """Ratio to the fastest measured implementation and speed-up over LinearScan, per size."""
    for cell in cells:
        if cell.us_per_op is None:
            continue
        peers = [c for c in cells if (c.workload, c.size) == (cell.workload, cell.size)]
        measured = [c.us_per_op for c in peers if c.us_per_op is not None and not c.extrapolated]
        if measured and not cell.extrapolated:
            cell.ratio_to_best = cell.us_per_op / min(measured)
        linear = [c.us_per_op for c in peers if c.impl == BASELINE and c.us_per_op is not None]
        if linear:
            cell.speedup_vs_linear = linear[0] / cell.us_per_op


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
    """The options of ``skipfilter bench`` / ``benchmarks/compare.py``."""
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
    from skipfilter import benchreport

    config = config_from(args)
    cells = sum(1 for _ in grid(config))
    report = benchreport.with_progress(lambda tick: measure(config, tick), cells)
    if args.json:
        benchreport.print_json(report)
    else:
        benchreport.print_tables(report)
    if args.plot:
        for path in benchreport.plot(report, args.plot):
            print(f"wrote {path}", file=sys.stderr)
    if args.markdown:
        benchreport.write_markdown(report, args.markdown, args.plot)
        print(f"wrote {args.markdown}", file=sys.stderr)
    return 0 if report.verified else 1


def main(argv: Sequence[str] | None = None) -> int:
    """Standalone entry point (``python -m skipfilter.bench``)."""
    parser = argparse.ArgumentParser(prog="skipfilter bench", description=__doc__)
    add_arguments(parser)
    return run(parser.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
