"""``skipfilter route`` as a command on a real standalone master and worker equals the oracle,
and docs/spark.md's cluster commands run there as written."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pyarrow as pa  # type: ignore[import-untyped]
import pyarrow.parquet as pq  # type: ignore[import-untyped]

from skipfilter.spark.cli import _hosts, _on_this_host
from tests.spark.servers import LOOPBACK
from tests.spark.sparkdata import generate, oracle
from tests.spark.test_spark_cli import write_jsonl

DOCS = Path(__file__).resolve().parents[2] / "docs" / "spark.md"
RUN_HERE = re.compile(r"<!-- run by tests/spark/test_spark_cluster.py: .+ -->")


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


def cluster_commands(page: str) -> list[str]:
    """The commands of the ```console blocks marked as run here, continuations joined."""
    commands: list[str] = []
    lines = page.splitlines()
    for i, line in enumerate(lines[:-1]):
        if not (RUN_HERE.fullmatch(line.strip()) and lines[i + 1].strip() == "```console"):
            continue
        for text in lines[i + 2 : lines.index("```", i + 2)]:
            if text.startswith("$ "):
                commands.append(text[2:])
            elif commands and commands[-1].endswith("\\"):
                commands[-1] = commands[-1][:-1] + " " + text.strip()
    return commands


def _dataset(data: Path) -> set[tuple[str, str]]:
    """Updates as extension-less Parquet files beside a _SUCCESS, subscriptions as an
    extension-less JSON-lines file, a bad row in each; returns the oracle's deliveries."""
    msgs, subs = generate(subscribers=30, messages=80, seed=7)
    (data / "updates").mkdir(parents=True)
    (data / "subs").mkdir()
    schema = pa.schema(
        [("id", pa.string()), ("topics", pa.list_(pa.string())), ("private", pa.bool_())]
    )
    bad = {"id": "bad", "topics": [], "private": False}
    for part, rows in enumerate([msgs[:40], [*msgs[40:], bad]]):
        pq.write_table(pa.Table.from_pylist(rows, schema), data / "updates" / f"part-0000{part}")
    (data / "updates" / "_SUCCESS").touch()
    write_jsonl(data / "subs" / "part-00000", [*subs, '{"subscriber_id": "z"'])
    return oracle(msgs, subs)


def test_the_docs_cluster_commands_run_as_written(standalone_master: str, tmp_path: Path) -> None:
    """spark-submit with the package shipped as the docs say; the worker's python3 has every
    dependency but skipfilter and nothing names another Python, so the zip must reach the
    executors. Inputs as file:// URIs, formats detected through Spark."""
    commands = cluster_commands(DOCS.read_text())
    assert any(c.startswith("spark-submit ") and "--py-files" in c for c in commands), commands
    expected = _dataset(tmp_path / "data")
    venv_bin = os.path.dirname(sys.executable)
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("PYSPARK_", "SPARK_")) and k not in ("PYTHONPATH", "VIRTUAL_ENV")
    }
    rest = [p for p in env["PATH"].split(os.pathsep) if p != venv_bin]
    env.update(  # a reader's shell with the virtualenv activated
        PATH=os.pathsep.join([venv_bin, *rest]),
        MASTER=standalone_master,
        DATA=(tmp_path / "data").as_uri(),
        SPARK_LOCAL_IP=LOOPBACK,
    )
    script = "set -euo pipefail\n" + "\n".join(commands)
    done = subprocess.run(
        ["bash", "-c", script], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=480
    )
    assert done.returncode == 0, done.stderr[-4000:]
    # spark-submit hands the driver's stderr to its stdout: look at both, as a log would
    output = done.stdout + done.stderr
    ours = [line for line in output.splitlines() if line.startswith("skipfilter route:")]
    assert any(f"{len(expected)} deliveries written to" in line for line in ours), ours
    assert any("(parquet)" in line for line in ours), ours
    assert any("2 malformed row(s) written to" in line for line in ours), ours
    assert "Exception" not in output and "\tat " not in output, output[-4000:]
    assert "\r" not in output  # no progress bar in a log
    got = {
        (row["message_id"], row["subscriber_id"])
        for part in (tmp_path / "data" / "deliveries").glob("part-*.parquet")
        for row in pq.read_table(part).to_pylist()
    }
    assert got == expected


def test_cluster_commands_are_read_from_the_page() -> None:
    page = (
        "```console\n$ not me\n```\n"
        "<!-- run by tests/spark/test_spark_cluster.py: why -->\n```console\n"
        "$ a \\\n    b\nshown output\n$ c\n```\n"
    )
    assert cluster_commands(page) == ["a  b", "c"]
