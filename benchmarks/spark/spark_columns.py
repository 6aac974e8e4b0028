"""What their columns cost: carried columns against a join back, and the duplicate-id check.

Issue 43 measured 0.7 s to route 20,000 messages and 4.6 s to join a timestamp and a
partition key back onto the deliveries. This script times, on local[2], one seeded Mercure
workload as Parquet (messages with a ``ts`` timestamp and a ``part`` int), each job end to
end into Spark's ``noop`` sink, interleaved over rounds, best of the rounds:

- ``plain``: ``route()`` (broadcast), the deliveries only;
- ``carry``: ``route(..., carry=["ts", "part"])``;
- ``join``: ``route()``, then the deliveries joined to the messages on the id for the two
  (Spark broadcasts the messages while they are under its broadcast threshold);
- ``join_merge``: the same join as a sort-merge join, what Spark does once the messages are
  too large to broadcast (both sides shuffled by id: every delivery);
- ``unchecked``: ``route(..., check_ids=False)``, without the duplicate-id check (a window
  count over the messages by id): what the check costs.

    .venv/bin/python benchmarks/spark/spark_columns.py                    # 2,000 x 20,000
    .venv/bin/python benchmarks/spark/spark_columns.py --subscriptions 10000 --messages 200000
"""

from __future__ import annotations

import argparse
import datetime
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import pyarrow as pa  # type: ignore[import-untyped]
import pyarrow.parquet as pq  # type: ignore[import-untyped]

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))  # run by path: the repository root for benchmarks.*
from benchmarks.spark.spark_routing import write_workload  # noqa: E402


def with_columns(messages: str) -> str:
    """The messages file with a ``ts`` timestamp and a ``part`` int column added."""
    table = pq.read_table(messages)
    start = datetime.datetime(2026, 1, 1, tzinfo=datetime.UTC)
    stamps = [start + datetime.timedelta(seconds=i) for i in range(table.num_rows)]
    table = table.append_column("ts", pa.array(stamps, pa.timestamp("us", tz="UTC")))
    table = table.append_column("part", pa.array([i % 16 for i in range(table.num_rows)]))
    path = messages.replace(".parquet", "-carry.parquet")
    pq.write_table(table, path, row_group_size=max(1, table.num_rows // 4))
    return path


def jobs(spark: Any, messages_path: str, subscriptions_path: str) -> dict[str, Any]:
    """The contenders: each builds its deliveries DataFrame from the Parquet files."""
    from pyspark.sql import functions as F

    from skipfilter.spark import route

    def frames() -> tuple[Any, Any]:
        return spark.read.parquet(messages_path), spark.read.parquet(subscriptions_path)

    def plain() -> Any:
        return route(*frames(), "broadcast")

    def carry() -> Any:
        return route(*frames(), "broadcast", carry=["ts", "part"])

    def join() -> Any:
        messages, subscriptions = frames()
        routed = route(messages, subscriptions, "broadcast")
        extra = messages.select(F.col("id").alias("message_id"), "ts", "part")
        return routed.join(extra, "message_id")

    def join_merge() -> Any:
        messages, subscriptions = frames()
        routed = route(messages, subscriptions, "broadcast")
        extra = messages.select(F.col("id").alias("message_id"), "ts", "part")
        return routed.join(extra.hint("merge"), "message_id")

    def unchecked() -> Any:
        messages, subscriptions = frames()
        return route(messages, subscriptions, "broadcast", check_ids=False)

    return {
        "plain": plain,
        "carry": carry,
        "join": join,
        "join_merge": join_merge,
        "unchecked": unchecked,
    }


def timed(job: Any) -> float:
    started = time.perf_counter()
    job().write.format("noop").mode("overwrite").save()
    return time.perf_counter() - started


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--subscriptions", type=int, default=2_000)
    parser.add_argument("--messages", type=int, default=20_000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()

    from pyspark.sql import SparkSession

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
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
        subscriptions, messages = write_workload(directory, args.subscriptions, args.messages)
        messages = with_columns(messages)
        contenders = jobs(spark, messages, subscriptions)
        counts = {name: job().count() for name, job in contenders.items()}  # also warms up
        assert len(set(counts.values())) == 1, counts
        best: dict[str, float] = {}
        for _ in range(args.rounds):
            for name, job in contenders.items():
                best[name] = min(best.get(name, float("inf")), timed(job))
    load = os.getloadavg()[0]
    print(
        f"{args.subscriptions:,} subscriptions, {args.messages:,} messages, "
        f"{counts['plain']:,} deliveries; best of {args.rounds}, load average {load:.1f}\n"
    )
    print("| job | seconds | vs plain |")
    print("|---|---:|---:|")
    for name, seconds in best.items():
        print(f"| {name} | {seconds:.2f} | {seconds / best['plain']:.2f}x |")
    spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
