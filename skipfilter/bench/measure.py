"""Side-by-side benchmark: every implementation, one seeded workload, one process.

Absolute times on shared machines drift from run to run; ratios measured in one run on
the same subscribers and messages do not. So this module runs each implementation of
:class:`~skipfilter.matcher.Matcher` over exactly the same workload, checks that they all
return the same recipients as :class:`~skipfilter.index.TopicIndex`, and reports
per-operation costs and ratios.

- :func:`implementations` -- display name -> registry row of every implementation.
- :func:`measure` -- run the whole grid; returns a :class:`~skipfilter.bench.model.Report`.
"""

from __future__ import annotations

import gc
import os
import platform
import subprocess
import sys
import time
import tracemalloc
from collections.abc import Callable, Iterator
from concurrent.futures import ProcessPoolExecutor
from dataclasses import asdict, dataclass
from multiprocessing import get_context
from typing import Any

from skipfilter.bench.model import BASELINE, REFERENCE, Cell, Config, Report
from skipfilter.bench.registry import IMPLEMENTATIONS, Implementation
from skipfilter.bench.scenarios import Scenario, scenario
from skipfilter.bench.workloads import Subscriber
from skipfilter.matcher import Matcher

__all__ = ["implementations", "measure"]

Factory = Callable[[str], Matcher]

#: Workloads run above ``--cap`` (TopicIndex only): the Mercure ones issue 3 is about.
BEYOND_CAP = frozenset({"mercure", "hot", "churn", "mercure1"})
#: Where memory is measured: hot and churn reuse mercure's subscribers, amqp is mqtt respelled.
MEMORY_WORKLOADS = frozenset({"mercure", "mqtt", "mercure1"})


def implementations() -> dict[str, Implementation]:
    """Every implementation of :data:`~skipfilter.bench.registry.IMPLEMENTATIONS`, by
    display name, so a new one shows up in the report without edits here."""
    return {impl.display: impl for impl in IMPLEMENTATIONS.values()}


def resolve(name: str) -> str:
    """The display name for ``name`` in any case (``linearscan`` -> ``LinearScan``)."""
    for known in implementations():
        if known.lower() == name.lower():
            return known
    raise ValueError(f"unknown implementation {name!r}; available: {', '.join(implementations())}")


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
    scans, whose few timed ops are mostly the cheaper public updates (a private one
    costs LinearScan about three times as much).

    Results are dropped as a hub drops them once delivered: keeping them all alive
    cost TopicIndex fresh memory for every bitmap, a harness cost (docs/benchmarks.md).
    :func:`_replay` collects recipients, untimed, on a fresh matcher.

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
    matcher = factory(scen.syntax)
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
    factory = implementations()[impl].make
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
    impls = implementations()
    cells: list[Cell] = []
    scen: Scenario | None = None
    key: tuple[str, int] | None = None
    reference: dict[int, list[int]] | None = None  # TopicIndex's recipients, by op
    for workload, size, impl in grid(config):
        label = f"{workload} {size:,} {impl}"
        progress(label, 0)
        if scen is None or key != (workload, size):
            scen, reference = None, None  # free the previous size before the next
            gc.unfreeze()
            gc.collect()
            scen, key = scenario(workload, size, config.messages, config.seed), (workload, size)
            # The scenario (and every module) lives through the cells: frozen, the
            # collections before each timing, and the automatic ones during it, skip them.
            gc.collect()
            gc.freeze()
        cell = Cell(workload, size, impl, ops_total=len(scen.ops))
        cells.append(cell)
        row = impls[impl]
        if scen.syntax not in row.syntaxes:
            cell.unsupported, cell.note = True, f"no {scen.syntax} syntax"
        elif not row.available():
            cell.note = row.missing() or ""
        elif size > config.cap and impl != REFERENCE:
            why = "O(N) per new topic" if row.scan else "loading takes minutes"
            cell.note = f"not run above {config.cap:,} subscribers ({why})"
        if cell.note:
            progress(label, 1)
            continue
        matcher = row.make(scen.syntax)
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
        # recipients from untimed replays on fresh matchers (see _time_ops)
        if reference is None:
            reference = _replay(impls[REFERENCE].make(scen.syntax), scen, len(scen.ops))
        if reference:
            cell.recipients = sum(map(len, reference.values())) / len(reference)
        if impl == REFERENCE:
            cell.verified = True
        else:
            mine = _replay(row.make(scen.syntax), scen, result.timed)
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
    gc.unfreeze()
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
