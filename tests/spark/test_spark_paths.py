"""Any path Spark reads: URIs and extension-less files, the input format asked of Spark or named,
and a command whose stderr holds its own lines, not Spark's."""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import pyarrow as pa  # type: ignore[import-untyped]
import pyarrow.parquet as pq  # type: ignore[import-untyped]
import pytest
from pyspark.errors import AnalysisException

from skipfilter.cli import main
from skipfilter.spark.formats import UnknownFormat, detect_format
from tests.spark.sparkdata import generate, oracle
from tests.spark.test_spark_cli import write_jsonl

MESSAGES = pa.schema(
    [("id", pa.string()), ("topics", pa.list_(pa.string())), ("private", pa.bool_())]
)


@pytest.fixture(scope="module")
def data() -> tuple[list[Any], list[Any], set[tuple[str, str]]]:
    msgs, subs = generate(subscribers=20, messages=50, seed=5)
    return msgs, subs, oracle(msgs, subs)


def _parquet_parts(folder: Path, rows: list[Any]) -> None:
    """Parquet files named as some writers name them: no extension, beside a _SUCCESS."""
    folder.mkdir(parents=True)
    half = len(rows) // 2
    for i, part in enumerate([rows[:half], rows[half:]]):
        pq.write_table(pa.Table.from_pylist(part, MESSAGES), folder / f"part-{i:05d}")
    (folder / "_SUCCESS").touch()


def test_uris_and_extensionless_files_route_with_no_format_named(
    spark: Any, tmp_path: Path, data: Any, capsys: Any
) -> None:
    """file:// URIs, Parquet and JSON lines without an extension: both formats come from
    Spark (a local listing sees no file:// path), and the output takes the messages'."""
    msgs, subs, expected = data
    _parquet_parts(tmp_path / "msgs", msgs)
    (tmp_path / "subs").mkdir()
    write_jsonl(tmp_path / "subs" / "part-00000", subs)
    out = tmp_path / "out"
    argv = ["route", "--messages", (tmp_path / "msgs").as_uri() + "/"]
    argv += ["--subscriptions", (tmp_path / "subs").as_uri(), "--out", out.as_uri()]
    assert main(argv) == 0, capsys.readouterr().err
    assert f"{len(expected)} deliveries written to {out.as_uri()} (parquet)" in (
        capsys.readouterr().out
    )
    got = {(r["message_id"], r["subscriber_id"]) for r in spark.read.parquet(str(out)).collect()}
    assert got == expected


def test_a_scheme_only_hadoop_resolves(spark: Any, tmp_path: Path, data: Any, capsys: Any) -> None:
    """``viewfs://`` (Hadoop's mount-table file system) stands in for s3a:// and hdfs://,
    which cannot run here: no local listing sees it, only Spark's Hadoop file systems do;
    inputs, outputs and the check that they are new all go through them."""
    msgs, subs, expected = data
    authority = f"skipfilter{uuid.uuid4().hex[:8]}"
    hadoop = spark.sparkContext._jsc.hadoopConfiguration()
    hadoop.set(f"fs.viewfs.mounttable.{authority}.link./data", tmp_path.as_uri())
    root = f"viewfs://{authority}/data"
    _parquet_parts(tmp_path / "msgs", msgs)
    (tmp_path / "subs").mkdir()
    write_jsonl(tmp_path / "subs" / "part-00000", subs)
    argv = ["route", "--messages", f"{root}/msgs", "--subscriptions", f"{root}/subs"]
    argv += ["--out", f"{root}/out", "--errors", f"{root}/errors"]
    assert main(argv) == 0, capsys.readouterr().err
    assert f"{len(expected)} deliveries written to {root}/out (parquet)" in capsys.readouterr().out
    got = {
        (r["message_id"], r["subscriber_id"])
        for r in spark.read.parquet(str(tmp_path / "out")).collect()
    }
    assert got == expected
    assert main(argv) == 1
    assert f"{root}/out already exists; pass --overwrite" in capsys.readouterr().err


def test_input_format_names_what_detection_cannot_tell(
    spark: Any, tmp_path: Path, data: Any, capsys: Any
) -> None:
    """A JSON-lines file whose first line is a bad row: no name or first byte tells its
    format, so the job asks for --input-format; given, it routes and files the bad line."""
    msgs, subs, expected = data
    write_jsonl(tmp_path / "updates", ["id,topics,private", *msgs])
    write_jsonl(tmp_path / "subs", subs)
    argv = ["route", "--messages", str(tmp_path / "updates"), "--subscriptions"]
    argv += [str(tmp_path / "subs"), "--out", str(tmp_path / "out")]
    assert main(argv) == 1
    err = capsys.readouterr().err
    assert "cannot tell the format of" in err and "starts with 'id,topics,private'" in err
    assert "--input-format parquet|json" in err
    assert not (tmp_path / "out").exists()
    errors = tmp_path / "errors"
    assert main([*argv, "--input-format", "json", "--errors", str(errors)]) == 0
    captured = capsys.readouterr()
    assert f"{len(expected)} deliveries written" in captured.out
    assert "1 malformed row(s) written" in captured.err
    (bad,) = spark.read.json(str(errors)).collect()
    assert bad["reason"].startswith("invalid JSON") and bad["record"] == "id,topics,private"


def test_detect_format_asks_spark(spark: Any, tmp_path: Path) -> None:
    lines = tmp_path / "lines"
    lines.mkdir()
    (lines / "a").write_text('{"id": "m1", "topics": ["/a"]}\n')
    (lines / ".hidden.parquet").write_text("dot files are not data, as for Spark's readers")
    assert detect_format(spark, f"{lines.as_uri()}/*") == "json"  # a glob, a URI
    with gzip.open(tmp_path / "updates.jsonl.gz", "wt") as packed:
        packed.write('{"id": "m1", "topics": ["/a"]}\n')
    assert detect_format(spark, str(tmp_path / "updates.jsonl.gz")) == "json"
    _parquet_parts(tmp_path / "pq", [{"id": "m", "topics": ["/a"], "private": None}])
    assert detect_format(spark, str(tmp_path / "pq")) == "parquet"

    mixed = tmp_path / "mixed"
    mixed.mkdir()
    (mixed / "a.parquet").write_bytes(b"PAR1")
    (mixed / "b.jsonl").write_text("{}\n")
    with pytest.raises(UnknownFormat, match=r"mixes formats: .*b\.jsonl \(json\), .*a\.parquet"):
        detect_format(spark, str(mixed))
    (tmp_path / "none").mkdir()
    (tmp_path / "none" / "_SUCCESS").touch()
    (tmp_path / "none" / "part-0").touch()  # empty: no data either
    with pytest.raises(UnknownFormat, match="holds no data files"):
        detect_format(spark, str(tmp_path / "none"))
    with pytest.raises(AnalysisException, match="PATH_NOT_FOUND"):
        detect_format(spark, (tmp_path / "nowhere").as_uri())


def test_the_command_says_only_its_own_lines(tmp_path: Path, data: Any) -> None:
    """Its own process and JVM, stderr a pipe as in a log: no Spark INFO/WARN chatter, no
    FileNotFoundException trace from checking that --out and --errors are new, no progress
    bar's carriage returns."""
    msgs, subs, expected = data
    write_jsonl(tmp_path / "m.jsonl", [*msgs, {"id": "x", "topics": []}])
    write_jsonl(tmp_path / "s.jsonl", subs)
    out, errors = tmp_path / "out", tmp_path / "errors"
    command = [sys.executable, "-m", "skipfilter.cli", "route", "--master", "local[2]"]
    command += ["--messages", str(tmp_path / "m.jsonl"), "--subscriptions"]
    command += [str(tmp_path / "s.jsonl"), "--out", str(out), "--errors", str(errors)]
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYSPARK_", "SPARK_"))}
    env.pop("LOG4J_CONFIGURATION_FILE", None)
    done = subprocess.run(command, capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    assert f"{len(expected)} deliveries written" in done.stdout
    assert "\r" not in done.stderr
    others = [
        line
        for line in done.stderr.splitlines()
        if not line.startswith("skipfilter route:")
        and not line.startswith("WARNING: Using incubator modules")  # the JVM's, not a log's
    ]
    assert others == [], done.stderr[-3000:]
    assert "1 malformed row(s) written to" in done.stderr
    first = json.loads(next(errors.glob("part-*.json")).read_text().splitlines()[0])
    assert first["row_id"] == "x"
