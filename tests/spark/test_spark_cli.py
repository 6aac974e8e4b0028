"""``skipfilter route`` end to end on small files, Parquet and JSON lines."""

from __future__ import annotations

import json
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
