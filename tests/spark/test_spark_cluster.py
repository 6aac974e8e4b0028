"""``skipfilter route`` on a real standalone master and worker equals the same job on local[2]."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from skipfilter.spark import route
from skipfilter.spark.cli import _hosts, _on_this_host
from tests.spark.servers import LOOPBACK
from tests.spark.sparkdata import generate
from tests.spark.test_spark_cli import MESSAGES, SUBSCRIPTIONS


def test_cli_on_a_standalone_cluster_equals_local(
    spark: Any, standalone_master: str, tmp_path: Path
) -> None:
    """No PYSPARK_PYTHON and no venv on the workers' PATH: the CLI must name the Python."""
    msgs, subs = generate(subscribers=40, messages=150, seed=5)
    messages = spark.createDataFrame([(m["id"], m["topics"], m["private"]) for m in msgs], MESSAGES)
    subscriptions = spark.createDataFrame(
        [(s["subscriber_id"], s["topics"], s.get("allowed")) for s in subs], SUBSCRIPTIONS
    )
    messages.write.parquet(str(tmp_path / "msgs"))
    subscriptions.write.parquet(str(tmp_path / "subs"))
    local = {
        (r["message_id"], r["subscriber_id"]) for r in route(messages, subscriptions).collect()
    }

    out = tmp_path / "out"
    command = [sys.executable, "-m", "skipfilter.cli", "route", "--master", standalone_master]
    command += ["--messages", str(tmp_path / "msgs"), "--subscriptions", str(tmp_path / "subs")]
    command += ["--out", str(out)]
    venv_bin = os.path.dirname(sys.executable)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYSPARK_", "SPARK_"))}
    env["PATH"] = os.pathsep.join(p for p in env["PATH"].split(os.pathsep) if p != venv_bin)
    env["SPARK_LOCAL_IP"] = LOOPBACK
    done = subprocess.run(command, capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    assert f"executors run {sys.executable} (the master is on this host" in done.stderr
    rows = spark.read.parquet(str(out)).collect()
    assert len(rows) == len({tuple(r) for r in rows})
    assert {(r["message_id"], r["subscriber_id"]) for r in rows} == local
    assert len(local) > 150


def test_which_masters_are_on_this_host() -> None:
    assert _hosts("spark://a:7077,[::1]:7078,b") == ["a", "::1", "b"]
    assert _on_this_host("127.0.0.1") and _on_this_host("::1") and _on_this_host("localhost")
    assert not _on_this_host("spark-master.example.com")
    assert not _on_this_host("192.0.2.7")  # TEST-NET-1: never this machine
