"""``skipfilter route`` as a command on a real standalone master and worker equals the oracle."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from skipfilter.spark.cli import _hosts, _on_this_host
from tests.spark.servers import LOOPBACK
from tests.spark.sparkdata import generate, oracle
from tests.spark.test_spark_cli import write_jsonl


def test_the_command_on_a_standalone_cluster_routes_json_and_files_bad_rows(
    standalone_master: str, tmp_path: Path
) -> None:
    """The real command in its own process and JVM, executors on a real standalone worker,
    bad rows in both inputs. No PYSPARK_PYTHON and no venv on the workers' PATH: the CLI
    must name the Python."""
    msgs, subs = generate(subscribers=30, messages=80, seed=11)
    write_jsonl(tmp_path / "m.jsonl", [*msgs, '{"id": "x"', {"id": "y", "topics": "/a"}])
    write_jsonl(tmp_path / "s.ndjson", [*subs, {"subscriber_id": "z", "topics": ["a/#/b"]}])
    out, errors = tmp_path / "out", tmp_path / "errors"
    command = [sys.executable, "-m", "skipfilter.cli", "route", "--master", standalone_master]
    command += ["--messages", str(tmp_path / "m.jsonl")]
    command += ["--subscriptions", str(tmp_path / "s.ndjson")]
    command += ["--out", str(out), "--errors", str(errors), "--syntax", "mqtt"]
    venv_bin = os.path.dirname(sys.executable)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYSPARK_", "SPARK_"))}
    env["PATH"] = os.pathsep.join(p for p in env["PATH"].split(os.pathsep) if p != venv_bin)
    env["SPARK_LOCAL_IP"] = LOOPBACK
    done = subprocess.run(command, capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    assert f"executors run {sys.executable} (the master is on this host" in done.stderr
    assert "3 malformed row(s) written to" in done.stderr
    expected = oracle(msgs, subs, "mqtt")  # the generated templates are plain strings in mqtt
    assert len(expected) > 30
    assert f"{len(expected)} deliveries written to {out} (json)" in done.stdout
    rows = [json.loads(line) for part in out.glob("part-*.json") for line in part.open()]
    got = [(r["message_id"], r["subscriber_id"]) for r in rows]
    assert len(got) == len(set(got)) and set(got) == expected
    reasons = sorted(
        json.loads(line)["reason"].split(":")[0]
        for part in errors.glob("part-*.json")
        for line in part.open()
    )
    assert reasons == ["invalid JSON", "topics must be an array of strings, got str", "topics[0]"]


def test_which_masters_are_on_this_host() -> None:
    assert _hosts("spark://a:7077,[::1]:7078,b") == ["a", "::1", "b"]
    assert _on_this_host("127.0.0.1") and _on_this_host("::1") and _on_this_host("localhost")
    assert not _on_this_host("spark-master.example.com")
    assert not _on_this_host("192.0.2.7")  # TEST-NET-1: never this machine
