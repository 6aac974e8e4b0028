"""Redis source vs JSON-lines directory: the same updates routed by a streaming job (--once).

Not an asv suite. ``PYSPARK_PYTHON=.venv/bin/python .venv/bin/python
benchmarks/spark/spark_redis_source.py 20000`` from the repository root (needs redis-server);
each source runs twice, the first run warming the session. Figures: docs/spark.md.
The work is in :func:`main`, so importing the module runs nothing.
"""

import json
import sys
import tempfile
import time
from pathlib import Path


def main(N: int) -> None:
    """Route ``N`` updates from a Redis stream and from files, each twice; print the rates."""
    sys.path.insert(0, ".")  # the tests' helpers: run from the repository root
    import redis
    from pyspark.sql import SparkSession

    from skipfilter.hub.transports.redis.entries import encode
    from skipfilter.hub.update import Update
    from skipfilter.spark.redis_source import RedisStreamSource
    from skipfilter.spark.sources import MessageSource
    from skipfilter.spark.streaming import start_routing_stream
    from tests.hub.redis_server import RedisServer
    from tests.spark.sparkdata import generate

    msgs, subs = generate(subscribers=2000, messages=N, seed=1)
    spark = SparkSession.builder.master("local[2]").getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    S = "subscriber_id string, topics array<string>, allowed array<string>"
    sdf = spark.createDataFrame(
        [(s["subscriber_id"], s["topics"], s.get("allowed")) for s in subs], S
    ).cache()
    sdf.count()
    tmp = Path(tempfile.mkdtemp())
    with RedisServer(tmp) as server:
        r = redis.Redis.from_url(server.url)
        pipe = r.pipeline()
        for m in msgs:
            pipe.xadd(
                "skipfilter:updates",
                {"u": encode(Update(m["id"], tuple(m["topics"]), "", bool(m.get("private"))))},
            )
        pipe.execute()
        inbox = tmp / "in"
        inbox.mkdir()
        (inbox / "all.jsonl").write_text("".join(json.dumps(m) + "\n" for m in msgs))
        sources: list[tuple[str, str | MessageSource]] = [
            ("redis", RedisStreamSource(server.url)),
            ("files", str(inbox)),
        ]
        for name, source in sources * 2:
            out = tmp / f"out-{name}-{time.time()}"
            t = time.perf_counter()
            st = start_routing_stream(
                spark, source, sdf, str(out), str(out) + "-err", str(out) + "-ck", once=True
            )
            st.await_termination()
            el = time.perf_counter() - t
            n = spark.read.parquet(str(out)).count()
            print(
                f"{name}: {N} updates, {n} deliveries, {el:.1f} s, {N / el:,.0f} updates/s",
                flush=True,
            )


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 20000)
