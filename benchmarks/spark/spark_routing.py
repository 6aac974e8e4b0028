"""Spark routing on local[2]: each strategy against hand-written Spark SQL, transports, growth.

Not an asv suite: one Spark session, one seeded Mercure workload (skipfilter.bench.workloads),
every contender run side by side in the same process, each timed end to end (subscriptions
packed and broadcast, index builds, matching) into an aggregate that reads every delivery.
The headline holds each strategy to the Spark SQL a user writes without skipfilter
(benchmarks/spark/handwritten.py: plain, tuned) on a workload reduced to what that SQL
handles (simple ``{var}`` templates, ``*``), every contender checked against the brute-force
oracle (small) and the single-process index (every row). Prints Markdown tables.

    .venv/bin/python benchmarks/spark/spark_routing.py            # everything, ~30+ min
    .venv/bin/python benchmarks/spark/spark_routing.py --quick    # a smoke run
    .venv/bin/python benchmarks/spark/spark_routing.py --headline # strategies vs hand-written SQL
    .venv/bin/python benchmarks/spark/spark_routing.py --edge     # the same on exact-topic tables
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa  # type: ignore[import-untyped]
import pyarrow.parquet as pq  # type: ignore[import-untyped]

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))  # run by path: the repository root for benchmarks.*
from benchmarks.spark import handwritten  # noqa: E402
from skipfilter.bench import workloads  # noqa: E402
from skipfilter.index import TopicIndex  # noqa: E402
from skipfilter.selectors import matches  # noqa: E402


def simple_templates(w: workloads.Workload) -> workloads.Workload:
    """``w`` as hand-written SQL can route it: every template reduced to simple ``{var}``s
    (``{/id}`` -> ``/{id}``, ``{?lang}`` dropped), plus ``*`` (every 1,000th subscriber's
    third selector, every 700th's allowed)."""

    def simple(selector: object) -> str:
        assert isinstance(selector, str)
        return re.sub(r"\{\?[^}]*\}", "", re.sub(r"\{/([^}]*)\}", r"/{\1}", selector))

    subscribers = []
    for i, s in enumerate(w.subscribers):
        selectors = [simple(x) for x in s.selectors]
        allowed = [simple(x) for x in s.allowed] if s.allowed is not None else None
        if i % 1000 == 999:
            selectors[-1] = "*"
        if i % 700 == 699:
            allowed = [*(allowed or ()), "*"]
        subscribers.append(
            workloads.Subscriber(tuple(selectors), None if allowed is None else tuple(allowed))
        )
    return workloads.Workload(w.name, w.syntax, subscribers, w.messages)


def workload(
    subscribers: int,
    messages: int,
    seed: int = 0,
    template_share: float = 0.1,
    simple: bool = False,
) -> workloads.Workload:
    """The seeded mercure workload; ``simple``: reduced to what hand-written SQL handles."""
    w = workloads.mercure(subscribers, messages, seed=seed, template_share=template_share)
    return simple_templates(w) if simple else w


def write_workload(
    directory: str,
    subscribers: int,
    messages: int,
    seed: int = 0,
    template_share: float = 0.1,
    simple: bool = False,
) -> tuple[str, str]:
    """The mercure workload as two Parquet files; returns their paths.

    ``template_share`` 0 gives a subscription table of exact topics only.
    """
    w = workload(subscribers, messages, seed, template_share, simple)
    subs = pa.table(
        {
            "subscriber_id": [f"s{i}" for i in range(len(w.subscribers))],
            "topics": [list(s.selectors) for s in w.subscribers],
            "allowed": [list(s.allowed) if s.allowed is not None else None for s in w.subscribers],
        }
    )
    msgs = pa.table(
        {
            "id": [f"m{i}" for i in range(len(w.messages))],
            "topics": [list(m.topics) for m in w.messages],
            "private": [m.private for m in w.messages],
        }
    )
    tag = f"{seed}-{template_share}-{'simple' if simple else 'full'}"
    paths = (
        os.path.join(directory, f"subs-{subscribers}-{messages}-{tag}.parquet"),
        os.path.join(directory, f"msgs-{subscribers}-{messages}-{tag}.parquet"),
    )
    pq.write_table(subs, paths[0])
    pq.write_table(msgs, paths[1], row_group_size=max(1, messages // 4))
    return paths


def reference_pairs(w: workloads.Workload) -> list[tuple[str, str]]:
    """Deliveries of ``w`` through one in-process TopicIndex (the suite holds it to the
    brute-force oracle): the reference every Spark contender must equal."""
    index = TopicIndex(w.syntax)
    for i, s in enumerate(w.subscribers):
        index.subscribe(s.selectors, s.allowed, payload=f"s{i}")
    return [
        (f"m{i}", str(name))
        for i, m in enumerate(w.messages)
        for name in set(index.payloads(index.match(m.topics, m.private)))
    ]


def brute_force(w: workloads.Workload) -> set[tuple[str, str]]:
    """Deliveries of ``w`` by testing every selector against every topic (small ``w`` only)."""
    out = set()
    for i, m in enumerate(w.messages):
        for j, s in enumerate(w.subscribers):
            wanted = any(matches(x, t) for x in s.selectors for t in m.topics)  # type: ignore[arg-type]
            if wanted and m.private:
                wanted = any(matches(x, t) for x in s.allowed or () for t in m.topics)  # type: ignore[arg-type]
            if wanted:
                out.add((f"m{i}", f"s{j}"))
    return out


class Bench:
    """Times routing jobs on one session over Parquet workloads in a temporary directory."""

    def __init__(self, spark: Any, directory: str) -> None:
        self.spark = spark
        self.directory = directory
        self._files: dict[tuple[int, int, float, bool], tuple[str, str]] = {}

    def frames(
        self, subscribers: int, messages: int, template_share: float = 0.1, simple: bool = False
    ) -> tuple[Any, Any]:
        key = (subscribers, messages, template_share, simple)
        if key not in self._files:
            self._files[key] = write_workload(
                self.directory, subscribers, messages, template_share=template_share, simple=simple
            )
        subs, msgs = self._files[key]
        # 4 message partitions: both cores busy, and a realistic per-task batch count
        return self.spark.read.parquet(msgs).repartition(4), self.spark.read.parquet(subs)

    def time(self, job: Callable[..., Any], *args: Any, **kwargs: Any) -> float:
        """Seconds to run ``job(*args, **kwargs)`` (a DataFrame) into the noop sink."""
        start = time.perf_counter()
        job(*args, **kwargs).write.format("noop").mode("overwrite").save()
        return time.perf_counter() - start

    def fingerprint(self, job: Callable[..., Any], *args: Any, **kwargs: Any) -> tuple[float, Any]:
        """Seconds to run ``job`` to the end, and (deliveries, sum of their hashes).

        The aggregate reads every delivery, as a sink would, and two strategies with
        equal fingerprints gave the same distinct pairs (count and order-free checksum).
        """
        start = time.perf_counter()
        row = fingerprint_of(job(*args, **kwargs)).first()
        return time.perf_counter() - start, (row[0], row[1])

    def reference(self, w: workloads.Workload) -> Any:
        """The fingerprint of ``w``'s reference deliveries, computed by Spark as for the rest."""
        pairs = reference_pairs(w)
        path = os.path.join(self.directory, f"reference-{time.monotonic_ns()}.parquet")
        table = pa.table(
            {"message_id": [p[0] for p in pairs], "subscriber_id": [p[1] for p in pairs]}
        )
        pq.write_table(table, path)
        row = fingerprint_of(self.spark.read.parquet(path)).first()
        return row[0], row[1]


def fingerprint_of(deliveries: Any) -> Any:
    """One row: the count of ``deliveries`` and the sum of their pairs' hashes (order-free)."""
    from pyspark.sql import functions as F

    pair = F.xxhash64("message_id", "subscriber_id").cast("decimal(38,0)")
    return deliveries.agg(F.count("*"), F.sum(pair))


HEADLINE = (  # (subscriptions, messages, template share); exact only: where SQL may win
    (20_000, 10_000, 0.1),
    (20_000, 10_000, 0.0),
    (50_000, 5_000, 0.1),
)
QUICK_HEADLINE = ((2_000, 2_000, 0.1), (2_000, 2_000, 0.0))
EDGE = ((100_000, 10_000, 0.0),)  # exact topics only and few messages: the index's worst case
CONTENDERS = ("plain SQL", "tuned SQL", "sql", "sharded", "broadcast")


def contender(name: str) -> Callable[[Any, Any], Any]:
    """The job that routes (messages, subscriptions) as ``name`` does."""
    from skipfilter.spark.routing import route

    if name == "plain SQL":
        return handwritten.plain
    if name == "tuned SQL":
        return handwritten.tuned
    return lambda messages, subscriptions: route(messages, subscriptions, name)


def check_small(bench: Bench) -> None:
    """Every contender equals the brute-force oracle on small simple-template workloads."""
    for share in (0.1, 0.0):
        expected = brute_force(workload(300, 300, template_share=share, simple=True))
        assert len(expected) > 100, "the check needs deliveries"
        m, s = bench.frames(300, 300, share, simple=True)
        for name in CONTENDERS:
            got = contender(name)(m, s).collect()
            pairs = {(r["message_id"], r["subscriber_id"]) for r in got}
            assert len(pairs) == len(got), f"{name}: duplicate deliveries"
            assert pairs == expected, f"{name} disagrees with the brute-force oracle"


def headline(bench: Bench, configs: tuple[tuple[int, int, float], ...]) -> None:
    """Each strategy against hand-written Spark SQL (plain, tuned): same data, same run."""
    from skipfilter.spark.sizing import auto_strategy

    print(
        "### skipfilter strategies vs hand-written Spark SQL (mercure workload, simple "
        "templates and `*`)\n\n| subscriptions | selectors | messages | deliveries | "
        + " | ".join(f"{name} s" for name in CONTENDERS)
        + " | broadcast vs plain | broadcast vs tuned | auto picks |\n"
        + "|---:|---|---:|---:|"
        + "---:|" * (len(CONTENDERS) + 2)
        + "---|"
    )
    for subs, msgs, share in configs:
        m, s = bench.frames(subs, msgs, share, simple=True)
        expected = bench.reference(workload(subs, msgs, template_share=share, simple=True))
        seconds = {}
        for name in CONTENDERS:
            seconds[name], found = bench.fingerprint(contender(name), m, s)
            assert found == expected, f"{name} disagrees with the reference: {found} != {expected}"
        kind = "with templates" if share else "exact only"
        print(
            f"| {subs:,} | {kind} | {msgs:,} | {expected[0]:,} | "
            + " | ".join(f"{seconds[name]:.1f}" for name in CONTENDERS)
            + f" | **{seconds['plain SQL'] / seconds['broadcast']:.1f}x** | "
            f"**{seconds['tuned SQL'] / seconds['broadcast']:.1f}x** | {auto_strategy(s)} |",
            flush=True,
        )
    print()


def single_process(subscribers: int, messages: int) -> tuple[float, float, float]:
    """(index build seconds, messages/s, deliveries/message) of one in-process TopicIndex."""
    w = workloads.mercure(subscribers, messages)
    start = time.perf_counter()
    index = TopicIndex()
    for s in w.subscribers:
        index.subscribe(s.selectors, s.allowed)
    built = time.perf_counter() - start
    start = time.perf_counter()
    deliveries = sum(len(index.match(m.topics, m.private)) for m in w.messages)
    return built, messages / (time.perf_counter() - start), deliveries / messages


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="small sizes, a smoke run")
    parser.add_argument(
        "--headline", action="store_true", help="only broadcast vs native SQL vs sharded"
    )
    parser.add_argument(
        "--edge", action="store_true", help="only that comparison, on exact-topic tables"
    )
    args = parser.parse_args()
    q = args.quick
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    from skipfilter.spark.routing import route, route_broadcast

    spark = (
        SparkSession.builder.master("local[2]")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "4")
        .config("spark.driver.memory", "2g")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    with tempfile.TemporaryDirectory() as directory:
        bench = Bench(spark, directory)
        check_small(bench)  # every contender against the brute-force oracle, first
        m, s = bench.frames(100, 100)
        bench.time(route, m, s)  # start the Python workers before timing anything
        if not (args.headline or args.edge):
            bench.time(route, m, s, "naive")  # and those of plain Python UDFs
        bench.time(route, m, s, "sql")  # and compile the JVM's join and regex paths
        print(f"Spark {spark.version}, local[2], {os.cpu_count()} cores\n")
        if args.edge:
            headline(bench, EDGE)
            spark.stop()
            return 0
        headline(bench, QUICK_HEADLINE if q else HEADLINE)
        if args.headline:
            spark.stop()
            return 0

        for subs, msgs in ((300, 400),) if q else ((1_000, 2_000), (2_000, 4_000), (3_000, 6_000)):
            m, s = bench.frames(subs, msgs)
            naive = bench.time(route, m, s, "naive")
            fast = min(bench.time(route, m, s, "broadcast") for _ in range(2))
            sharded = min(bench.time(route, m, s, "sharded") for _ in range(2))
            sql = min(bench.time(route, m, s, "sql") for _ in range(2))
            count = route(m, s).count()
            assert count == route(m, s, "naive").count() == route(m, s, "sql").count()
            print(
                f"### broadcast vs naive ({subs:,} subscriptions, {msgs:,} messages, {count:,} "
                "deliveries)\n"
            )
            print("| strategy | seconds | vs naive |\n|---|---:|---:|")
            contenders = (("naive", naive), ("sql", sql), ("sharded", sharded), ("broadcast", fast))
            for name, seconds in contenders:
                print(f"| {name} | {seconds:.1f} | {naive / seconds:.1f}x |")
            print()

        subs, msgs = (2_000, 20_000) if q else (10_000, 100_000)
        m, s = bench.frames(subs, msgs)
        print(f"\n### broadcast transports ({subs:,} subscriptions, {msgs:,} messages)\n")
        print("| transport | seconds | messages/s | time vs arrow |\n|---|---:|---:|---:|")
        best: dict[str, float] = {}
        for _ in range(2):  # interleaved rounds: load from other jobs hits all three alike
            for transport in ("arrow", "pandas", "rdd"):
                seconds = bench.time(route_broadcast, m, s, transport=transport)
                best[transport] = min(seconds, best.get(transport, seconds))
        for transport, seconds in best.items():
            print(
                f"| {transport} | {seconds:.1f} | {msgs / seconds:,.0f} | "
                f"{seconds / best['arrow']:.2f}x |"
            )
        print(
            "\n### growth with messages (broadcast, "
            f"{subs:,} subscriptions)\n\n| messages | seconds | messages/s |\n|---:|---:|---:|"
        )
        for msgs in (5_000, 10_000, 20_000) if q else (50_000, 100_000, 200_000, 400_000):
            m, s = bench.frames(subs, msgs)
            seconds = bench.time(route, m, s)
            print(f"| {msgs:,} | {seconds:.1f} | {msgs / seconds:,.0f} |")

        msgs = 20_000 if q else 100_000
        print(f"\n### growth with subscriptions ({msgs:,} messages)\n")
        print(
            "| subscriptions | deliveries/message | broadcast s | messages/s | sharded s | "
            "one-process build s | one-process messages/s |\n|---:|---:|---:|---:|---:|---:|---:|"
        )
        for subs in (1_000, 10_000) if q else (1_000, 10_000, 100_000):
            m, s = bench.frames(subs, msgs)
            seconds = bench.time(route, m, s)
            shard_seconds = bench.time(route, m, s, "sharded")
            built, rate, fanout = single_process(subs, min(msgs, 20_000))
            print(
                f"| {subs:,} | {fanout:,.0f} | {seconds:.1f} | {msgs / seconds:,.0f} | "
                f"{shard_seconds:.1f} | "
                f"{built:.2f} | {rate:,.0f} |"
            )
    spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
