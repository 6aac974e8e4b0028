"""``skipfilter route`` end to end on small files, Parquet and JSON lines."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from skipfilter.cli import main
from tests.spark.sparkdata import generate, oracle

SUBSCRIPTIONS = "subscriber_id string, topics array<string>, allowed array<string>"
MESSAGES = "id string, topics array<string>, private boolean"


def write_jsonl(path: Path, rows: list[Any]) -> None:
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows))


@pytest.fixture(scope="module")
def data() -> tuple[list[Any], list[Any], set[tuple[str, str]]]:
    msgs, subs = generate(subscribers=30, messages=80, seed=11)
    return msgs, subs, oracle(msgs, subs)


def test_parquet_in_process(spark: Any, tmp_path: Path, data: Any, capsys: Any) -> None:
    msgs, subs, expected = data
    spark.createDataFrame(
        [(m["id"], m["topics"], m["private"]) for m in msgs], MESSAGES
    ).write.parquet(str(tmp_path / "msgs"))
    spark.createDataFrame(
        [(s["subscriber_id"], s["topics"], s.get("allowed")) for s in subs], SUBSCRIPTIONS
    ).write.parquet(str(tmp_path / "subs"))
    out = tmp_path / "out"
    argv = [
        "route",
        "--messages",
        str(tmp_path / "msgs"),
        "--subscriptions",
        str(tmp_path / "subs"),
    ]
    assert main([*argv, "--out", str(out), "--strategy", "sharded"]) == 0
    assert f"{len(expected)} deliveries written" in capsys.readouterr().out
    got = {(r["message_id"], r["subscriber_id"]) for r in spark.read.parquet(str(out)).collect()}
    assert got == expected
    assert main([*argv, "--out", str(out)]) == 1  # exists: refused before any work
    assert "already exists; pass --overwrite" in capsys.readouterr().err


def test_malformed_rows_refused_without_errors_path(
    spark: Any, tmp_path: Path, data: Any, capsys: Any
) -> None:
    msgs, subs, _ = data
    write_jsonl(tmp_path / "m.jsonl", [*msgs, {"id": "bad", "topics": []}])
    write_jsonl(tmp_path / "s.jsonl", subs)
    argv = ["route", "--messages", str(tmp_path / "m.jsonl"), "--subscriptions"]
    assert main([*argv, str(tmp_path / "s.jsonl"), "--out", str(tmp_path / "out")]) == 1
    err = capsys.readouterr().err
    assert "malformed messages row in" in err and "id='bad'): topics is empty" in err
    assert "1 malformed row(s); pass --errors" in err
    assert not (tmp_path / "out").exists()


def test_json_end_to_end_as_a_command(tmp_path: Path, data: Any) -> None:
    """The real command in its own process and JVM, with bad rows in both inputs."""
    msgs, subs, expected = data
    write_jsonl(tmp_path / "m.jsonl", [*msgs, '{"id": "x"', {"id": "y", "topics": "/a"}])
    write_jsonl(tmp_path / "s.ndjson", [*subs, {"subscriber_id": "z", "topics": ["a/#/b"]}])
    out, errors = tmp_path / "out", tmp_path / "errors"
    command = [
        sys.executable,
        "-m",
        "skipfilter.cli",
        "route",
        "--messages",
        str(tmp_path / "m.jsonl"),
        "--subscriptions",
        str(tmp_path / "s.ndjson"),
        "--out",
        str(out),
        "--errors",
        str(errors),
        "--master",
        "local[2]",
        "--syntax",
        "mqtt",
    ]
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable}
    done = subprocess.run(command, capture_output=True, text=True, env=env, timeout=240)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "3 malformed row(s) written to" in done.stderr
    # mqtt instead of mercure: the generated templates are plain strings there
    expected = oracle(msgs, subs, "mqtt")
    assert f"{len(expected)} deliveries written to {out} (json)" in done.stdout
    got = set()
    for part in out.glob("part-*.json"):
        got |= {(r["message_id"], r["subscriber_id"]) for r in map(json.loads, part.open())}
    assert got == expected
    reasons = sorted(
        json.loads(line)["reason"].split(":")[0]
        for part in errors.glob("part-*.json")
        for line in part.open()
    )
    assert reasons == ["invalid JSON", "topics must be an array of strings, got str", "topics[0]"]


def test_stream_once(spark: Any, tmp_path: Path, data: Any, capsys: Any) -> None:
    msgs, subs, expected = data
    inbox = tmp_path / "inbox"
    inbox.mkdir()
    write_jsonl(inbox / "a.jsonl", msgs[:50])
    write_jsonl(inbox / "b.jsonl", [*msgs[50:], {"id": "bad"}])
    write_jsonl(tmp_path / "s.jsonl", subs)
    out, errors, checkpoint = (str(tmp_path / n) for n in ("out", "errors", "ckpt"))
    argv = ["route", "--stream", "--once", "--messages", str(inbox), "--subscriptions"]
    argv += [
        str(tmp_path / "s.jsonl"),
        "--out",
        out,
        "--errors",
        errors,
        "--checkpoint",
        checkpoint,
    ]
    assert main(argv) == 0
    assert "0 malformed subscription row(s), 1 malformed update(s)" in capsys.readouterr().err
    got = {(r["message_id"], r["subscriber_id"]) for r in spark.read.json(out).collect()}
    assert got == expected
