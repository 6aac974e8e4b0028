"""What a side-by-side run is asked (:class:`Config`) and found (:class:`Cell`, :class:`Report`).

Plain data, shared by the measuring (:mod:`~skipfilter.bench.measure`) and the
presentation (:mod:`~skipfilter.bench.report`), so neither imports the other.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

__all__ = ["BASELINE", "QUICK_SIZES", "REFERENCE", "SIZES", "WORKLOADS", "Cell", "Config", "Report"]

REFERENCE = "TopicIndex"  # every other implementation's recipients are checked against it
BASELINE = "LinearScan"  # the "vs LinearScan" column: Mercure <= 0.13
WORKLOADS = (
    "mercure",
    "hot",
    "churn",
    "amqp",
    "mqtt",
    "iot",
    "iot-hot",
    "iot-fleet",
    "industrial",
    "mercure1",
)
SIZES = (1_000, 10_000, 100_000, 1_000_000)
QUICK_SIZES = (1_000, 10_000)


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
    recipients: float | None = None  # mean recipients per publish (the answer's size)
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
