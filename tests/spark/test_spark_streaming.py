"""The streaming job, stopped mid-stream and restarted from its checkpoint: every delivery once."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

from skipfilter.spark.streaming import start_routing_stream
from tests.spark.sparkdata import generate, oracle

SUBSCRIPTIONS = "subscriber_id string, topics array<string>, allowed array<string>"


def drop(directory: Path, name: str, rows: list[Any]) -> None:
    """Write a JSON-lines file atomically, as an exporter should (the source lists whole files)."""
    tmp = directory.parent / f".{name}.tmp"
    tmp.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows))
    os.replace(tmp, directory / name)


def test_restart_from_checkpoint_delivers_exactly_once(spark: Any, tmp_path: Path) -> None:
    msgs, subs = generate(subscribers=40, messages=160, seed=3)
    expected = oracle(msgs, subs)
    subscriptions = spark.createDataFrame(
        [(s["subscriber_id"], s["topics"], s.get("allowed")) for s in subs], SUBSCRIPTIONS
    )
    inbox, out, errors, checkpoint = (tmp_path / n for n in ("in", "out", "errors", "ckpt"))
    inbox.mkdir()
    for i in range(2):
        drop(inbox, f"part-{i}.jsonl", msgs[i * 40 : (i + 1) * 40])

    def start() -> Any:
        return start_routing_stream(
            spark,
            str(inbox),
            subscriptions,
            str(out),
            str(errors),
            str(checkpoint),
            max_files_per_trigger=1,
        )

    stream = start()
    deadline = time.monotonic() + 90
    while not any(p["numInputRows"] for p in stream.deliveries.recentProgress):
        assert time.monotonic() < deadline, "no batch committed"
        assert stream.deliveries.exception() is None, stream.deliveries.exception()
        time.sleep(0.2)
    stream.stop()  # mid-stream: the second file may be half routed
    first = {(r["message_id"], r["subscriber_id"]) for r in spark.read.parquet(str(out)).collect()}
    assert first and first < expected

    drop(inbox, "part-2.jsonl", [*msgs[80:120], "{broken", {"id": "x", "topics": []}])
    drop(inbox, "part-3.jsonl", msgs[120:])
    stream = start()
    try:
        stream.process_all_available()
    finally:
        stream.stop()
    rows = [(r["message_id"], r["subscriber_id"]) for r in spark.read.parquet(str(out)).collect()]
    assert len(rows) == len(set(rows)), "a delivery was written twice"
    assert set(rows) == expected
    reported = sorted(r["reason"] for r in spark.read.parquet(str(errors)).collect())
    assert [r.split(":")[0] for r in reported] == ["invalid JSON", "topics is empty"]
