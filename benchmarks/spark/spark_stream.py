"""A routing stream by each strategy, and per-batch output against Spark's file sink.

Not an asv suite. ``PYSPARK_PYTHON=.venv/bin/python .venv/bin/python
benchmarks/spark/spark_stream.py 10000`` from the repository root: ``N`` updates in ten
JSON-lines files, one file per micro-batch, 2,000 subscriptions, routed with ``once`` by
``broadcast`` inside the stream's plan into Spark's file sink (how streams ran before
per-batch output), then by ``start_routing_stream`` with each strategy (per-batch output,
``batch_id=N`` directories). Every case runs twice, in turn; the second pass is the figure.
Figures: docs/spark.md. The work is in :func:`main`, so importing the module runs nothing.
"""

import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

FILES = 10


def main(N: int) -> None:
    """Route ``N`` updates by each case, twice; print times, deliveries and ratios."""
    sys.path.insert(0, ".")  # the tests' helpers: run from the repository root
    from pyspark.sql import SparkSession

    from skipfilter.spark.routing import route
    from skipfilter.spark.sources import FileDirectory
    from skipfilter.spark.streaming import start_routing_stream
    from tests.spark.sparkdata import generate

    msgs, subs = generate(subscribers=2000, messages=N, seed=1)
    spark = (
        SparkSession.builder.master("local[2]")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "4")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    schema = "subscriber_id string, topics array<string>, allowed array<string>"
    rows = [(s["subscriber_id"], s["topics"], s.get("allowed")) for s in subs]
    sdf = spark.createDataFrame(rows, schema).cache()
    sdf.count()
    tmp = Path(tempfile.mkdtemp())
    inbox = tmp / "in"
    inbox.mkdir()
    size = -(-N // FILES)
    for i in range(FILES):
        part = msgs[i * size : (i + 1) * size]
        (inbox / f"part-{i}.jsonl").write_text("".join(json.dumps(m) + "\n" for m in part))
    source = FileDirectory(str(inbox), max_files_per_trigger=1)

    def file_sink(out: Path) -> Any:
        valid = source.read(spark, "mercure").valid
        query = (
            route(valid, sdf, "broadcast")
            .writeStream.format("parquet")
            .option("checkpointLocation", str(out) + "-ck")
            .trigger(availableNow=True)
            .start(str(out))
        )
        query.awaitTermination()

    def per_batch(strategy: str) -> Any:
        def run(out: Path) -> None:
            stream = start_routing_stream(
                spark,
                source,
                sdf,
                str(out),
                str(out) + "-err",
                str(out) + "-ck",
                strategy=strategy,
                once=True,
            )
            stream.await_termination()

        return run

    cases = [("broadcast, file sink", file_sink)]
    cases += [(f"{s}, per batch", per_batch(s)) for s in ("broadcast", "sharded", "sql")]
    times: dict[str, float] = {}
    for round_ in range(2):
        for name, run in cases:
            out = tmp / f"out-{round_}-{name.replace(', ', '-').replace(' ', '')}"
            started = time.perf_counter()
            run(out)
            elapsed = time.perf_counter() - started
            deliveries = spark.read.parquet(str(out)).count()
            times[name] = elapsed
            print(
                f"pass {round_ + 1}: {name}: {N} updates in {FILES} batches, "
                f"{deliveries} deliveries, {elapsed:.1f} s, {N / elapsed:,.0f} updates/s",
                flush=True,
            )
    base = times["broadcast, file sink"]
    for name, elapsed in times.items():
        print(f"{name}: {elapsed / base:.2f}x the file sink's time")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 10000)
