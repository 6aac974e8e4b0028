"""Spark routing on local[2]: broadcast vs native SQL and the naive join, transports, growth.

Not an asv suite: one Spark session, one seeded Mercure workload (skipfilter.bench.workloads),
every contender run side by side in the same process, each timed end to end (collect +
broadcast + index builds + matching) into Spark's ``noop`` sink. Prints Markdown tables.

    .venv/bin/python benchmarks/spark/spark_routing.py            # ~10 minutes on 2 cores
    .venv/bin/python benchmarks/spark/spark_routing.py --quick    # a smoke run
    .venv/bin/python benchmarks/spark/spark_routing.py --headline # broadcast vs sql vs sharded only
    .venv/bin/python benchmarks/spark/spark_routing.py --edge     # the same on exact-topic tables
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from collections.abc import Callable
from typing import Any

import pyarrow as pa  # type: ignore[import-untyped]
import pyarrow.parquet as pq  # type: ignore[import-untyped]

from skipfilter.bench import workloads
from skipfilter.index import TopicIndex


def write_workload(
    directory: str, subscribers: int, messages: int, seed: int = 0, template_share: float = 0.1
) -> tuple[str, str]:
    """The mercure workload as two Parquet files; returns their paths.

    ``template_share`` 0 gives a subscription table of exact topics only.
    """
    w = workloads.mercure(subscribers, messages, seed=seed, template_share=template_share)
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
    tag = f"{seed}-{template_share}"
    paths = (
        os.path.join(directory, f"subs-{subscribers}-{messages}-{tag}.parquet"),
        os.path.join(directory, f"msgs-{subscribers}-{messages}-{tag}.parquet"),
    )
    pq.write_table(subs, paths[0])
    pq.write_table(msgs, paths[1], row_group_size=max(1, messages // 4))
    return paths


class Bench:
    """Times routing jobs on one session over Parquet workloads in a temporary directory."""

    def __init__(self, spark: Any, directory: str) -> None:
        self.spark = spark
        self.directory = directory
        self._files: dict[tuple[int, int, float], tuple[str, str]] = {}

    def frames(
        self, subscribers: int, messages: int, template_share: float = 0.1
    ) -> tuple[Any, Any]:
        key = (subscribers, messages, template_share)
        if key not in self._files:
            self._files[key] = write_workload(
                self.directory, subscribers, messages, template_share=template_share
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
        from pyspark.sql import functions as F

        start = time.perf_counter()
        row = (
            job(*args, **kwargs)
            .agg(
                F.count("*"), F.sum(F.xxhash64("message_id", "subscriber_id").cast("decimal(38,0)"))
            )
            .first()
        )
        return time.perf_counter() - start, (row[0], row[1])


HEADLINE = (  # (subscriptions, messages, template share); the last two: where SQL may win
    (10_000, 200_000, 0.1),
    (100_000, 200_000, 0.1),
    (10_000, 200_000, 0.0),
    (100_000, 200_000, 0.0),
    (100_000, 10_000, 0.1),
)
QUICK_HEADLINE = ((1_000, 20_000, 0.1), (10_000, 20_000, 0.1), (10_000, 20_000, 0.0))
EDGE = ((100_000, 10_000, 0.0),)  # exact topics only and few messages: the index's worst case


def headline(bench: Bench, configs: tuple[tuple[int, int, float], ...]) -> None:
    """Broadcast vs native Spark SQL vs sharded on the mercure workload, each job once."""
    print(
        "### broadcast vs native SQL vs sharded (mercure workload)\n\n"
        "| subscriptions | selectors | messages | deliveries | sql s | sharded s | broadcast s "
        "| broadcast vs sql |\n|---:|---|---:|---:|---:|---:|---:|---:|"
    )
    from skipfilter.spark.routing import route

    for subs, msgs, share in configs:
        m, s = bench.frames(subs, msgs, share)
        seconds = {}
        prints = set()
        for strategy in ("sql", "sharded", "broadcast"):
            seconds[strategy], found = bench.fingerprint(route, m, s, strategy)
            prints.add(found)
        assert len(prints) == 1, f"strategies disagree: {prints}"
        kind = "with templates" if share else "exact only"
        print(
            f"| {subs:,} | {kind} | {msgs:,} | {found[0]:,} | {seconds['sql']:.1f} | "
            f"{seconds['sharded']:.1f} | {seconds['broadcast']:.1f} | "
            f"**{seconds['sql'] / seconds['broadcast']:.1f}x** |",
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
        m, s = bench.frames(100, 100)
        bench.time(route, m, s)  # start the Python workers before timing anything
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
