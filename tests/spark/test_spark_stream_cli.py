"""``skipfilter route --stream`` as a Spark user runs it: a Parquet inbox, any strategy, a
trigger interval; usage mistakes refused before a session starts."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow as pa  # type: ignore[import-untyped]
import pyarrow.parquet as pq  # type: ignore[import-untyped]
import pytest

from skipfilter.cli import main
from tests.spark.sparkdata import generate, oracle


def test_parquet_inbox_routed_by_sharded_with_a_stray_file_reported(
    spark: Any, tmp_path: Path, capsys: Any
) -> None:
    msgs, subs = generate(subscribers=30, messages=80, seed=12)
    inbox = tmp_path / "inbox"
    inbox.mkdir()
    pq.write_table(pa.Table.from_pylist(msgs[:50]), inbox / "a.parquet")
    pq.write_table(pa.Table.from_pylist(msgs[50:]), inbox / "b.parquet")
    (inbox / "c.parquet").write_text(json.dumps(msgs[0]) + "\n")  # JSON under a Parquet name
    pq.write_table(pa.Table.from_pylist(subs), tmp_path / "subs.parquet")
    out, errors, checkpoint = (str(tmp_path / n) for n in ("out", "errors", "ckpt"))
    argv = ["route", "--stream", "--once", "--input-format", "parquet", "--strategy", "sharded"]
    argv += ["--messages", str(inbox), "--subscriptions", str(tmp_path / "subs.parquet")]
    argv += ["--out", out, "--errors", errors, "--checkpoint", checkpoint, "--format", "json"]
    assert main(argv) == 0
    assert "0 malformed subscription row(s), 1 malformed update(s)" in capsys.readouterr().err
    got = {(r["message_id"], r["subscriber_id"]) for r in spark.read.json(out).collect()}
    assert got == oracle(msgs, subs)
    (report,) = spark.read.json(str(tmp_path / "errors" / "messages")).collect()
    assert report["file"].endswith("c.parquet")
    assert report["reason"].startswith("not a readable parquet file: ")


@pytest.mark.parametrize(
    ("extra", "said"),
    [
        (["--trigger", "10 seconds"], "--trigger is for --stream"),
        (["--stream", "--trigger", "soon"], "trigger must be an interval such as '10 seconds'"),
        (["--stream", "--once", "--trigger", "1 minute"], "a trigger interval or once"),
    ],
)
def test_trigger_mistakes_are_usage_errors(
    tmp_path: Path, capsys: Any, extra: list[str], said: str
) -> None:
    argv = ["route", "--messages", str(tmp_path), "--subscriptions", str(tmp_path)]
    argv += ["--out", str(tmp_path / "out"), "--errors", str(tmp_path / "errors")]
    argv += ["--checkpoint", str(tmp_path / "ckpt"), *extra]
    assert main(argv) == 2
    assert said in capsys.readouterr().err
