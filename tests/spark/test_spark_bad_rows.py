"""A bad row is one error, MalformedInput with its file, row and column, whatever the strategy
(issue 43, item 6); message ids are unique or the job is refused naming them (item 7); a
line that is not UTF-8 is that row's error, the rest routed (item 4)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from skipfilter.cli import main
from skipfilter.spark import STRATEGIES, MalformedInput, read_messages, route

SUBSCRIPTIONS = "subscriber_id string, topics array<string>, allowed array<string>"
MESSAGES = "id string, topics array<string>, private boolean"
ROW_STRATEGIES = ["broadcast", "sharded", "sql"]  # naive checks no rows: the strawman


def failure(work: Any) -> MalformedInput:
    """The MalformedInput that ``work()`` (building the plan and running it) ends with."""
    from skipfilter.spark.malformed import malformed_rows

    with pytest.raises(MalformedInput) as info, malformed_rows():
        work()
    return info.value


@pytest.fixture(scope="module")
def bad_parquet(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> str:
    """Messages under their own column names, one with no topics, in one Parquet file."""
    path = str(tmp_path_factory.mktemp("bad-parquet") / "events")
    rows = [("m1", ["/a"]), ("m2", []), ("m3", ["/a"])]
    spark.createDataFrame(rows, "event_id string, tags array<string>").coalesce(1).write.parquet(
        path
    )
    return path


@pytest.mark.parametrize("strategy", ROW_STRATEGIES)
def test_bad_message_is_malformed_input_naming_file_row_column(
    spark: Any, bad_parquet: str, strategy: str
) -> None:
    messages = spark.read.parquet(bad_parquet)
    subscriptions = spark.createDataFrame([("s1", ["/a"], None)], SUBSCRIPTIONS)
    error = failure(
        lambda: route(
            messages,
            subscriptions,
            strategy,
            message_columns={"id": "event_id", "topics": "tags"},
        ).collect()
    )
    assert (error.source, error.row, error.column) == ("messages", "m2", "tags")
    assert error.file is not None and error.file.endswith(".parquet"), error.file
    assert error.reason == "tags is empty"
    assert "row id='m2'" in str(error) and "column tags" in str(error)


@pytest.mark.parametrize("strategy", ROW_STRATEGIES)
def test_bad_subscription_is_malformed_input(spark: Any, strategy: str) -> None:
    messages = spark.createDataFrame([("m1", ["a.b"], False)], MESSAGES)
    subscriptions = spark.createDataFrame(
        [("good", ["a.*"], None), ("bad", ["a.>.b"], None)], SUBSCRIPTIONS
    )
    error = failure(lambda: route(messages, subscriptions, strategy, syntax="nats").collect())
    assert (error.source, error.row, error.column) == ("subscriptions", "bad", "topics")
    assert error.reason is not None and "'>' must be the last token" in error.reason


def test_other_failures_pass_unchanged(spark: Any) -> None:
    from skipfilter.spark.malformed import malformed_rows

    with pytest.raises(ZeroDivisionError), malformed_rows():
        _ = 1 / 0


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_duplicate_message_ids_refused_by_name(spark: Any, strategy: str) -> None:
    """Two rows with one id would give the pair (m1, s1) twice, or once for two messages."""
    messages = spark.createDataFrame(
        [("m1", ["/a"], False), ("m2", ["/a"], False), ("m1", ["/b"], False)], MESSAGES
    ).repartition(2)
    subscriptions = spark.createDataFrame([("s1", ["/a", "/b"], None)], SUBSCRIPTIONS)
    error = failure(lambda: route(messages, subscriptions, strategy).collect())
    assert (error.source, error.row, error.column) == ("messages", "m1", "id")
    assert error.reason == "id 'm1' is on 2 rows; message ids must be unique"


def test_unique_ids_route_as_before(spark: Any) -> None:
    messages = spark.createDataFrame([("m1", ["/a"], False), ("m2", ["/b"], False)], MESSAGES)
    subscriptions = spark.createDataFrame([("s1", ["/a", "/b"], None)], SUBSCRIPTIONS)
    got = sorted(tuple(r) for r in route(messages, subscriptions).collect())
    assert got == [("m1", "s1"), ("m2", "s1")]


def write_bytes_lines(path: Path) -> None:
    path.write_bytes(
        b'{"id": "m1", "topics": ["/a"]}\n'
        b'{"id": "m2", "topics": ["/caf\xe9"]}\n'  # Latin-1, not UTF-8
        b'{"id": "m3", "topics": ["/a"]}\n'
    )


def test_non_utf8_line_is_that_rows_error(spark: Any, tmp_path: Path) -> None:
    path = tmp_path / "updates.jsonl"
    write_bytes_lines(path)
    checked = read_messages(spark, str(path))
    assert sorted(r["id"] for r in checked.valid.collect()) == ["m1", "m3"]
    [error] = checked.errors.collect()
    assert error["file"].endswith("updates.jsonl") and error["row_id"] == "m2"
    assert error["reason"].startswith("not UTF-8: byte 0xe9 at offset 29")
    assert error["record"] == '{"id": "m2", "topics": ["/caf\\xe9"]}'  # every byte, readable


def test_cli_routes_the_rest_of_a_non_utf8_file(spark: Any, tmp_path: Path, capsys: Any) -> None:
    write_bytes_lines(tmp_path / "m.jsonl")
    (tmp_path / "s.jsonl").write_text(json.dumps({"subscriber_id": "s1", "topics": ["/a"]}))
    out, errors = tmp_path / "out", tmp_path / "errors"
    argv = ["route", "--messages", str(tmp_path / "m.jsonl"), "--subscriptions"]
    argv += [str(tmp_path / "s.jsonl"), "--out", str(out), "--errors", str(errors)]
    assert main(argv) == 0
    assert "1 malformed row(s) written" in capsys.readouterr().err
    got = {(r["message_id"], r["subscriber_id"]) for r in spark.read.json(str(out)).collect()}
    assert got == {("m1", "s1"), ("m3", "s1")}
    [row] = spark.read.json(str(errors)).collect()
    assert (row["row_id"], row["reason"][:10]) == ("m2", "not UTF-8:")


def test_duplicate_ids_are_reported_rows_when_read(spark: Any, tmp_path: Path) -> None:
    """With a report (read_messages, the CLI's --errors), every row of a duplicated id is
    an error row and the rest is routed."""
    path = tmp_path / "m.jsonl"
    rows = [{"id": "m1", "topics": ["/a"]}, {"id": "m2", "topics": ["/a"]}]
    path.write_text("".join(json.dumps(r) + "\n" for r in [*rows, {"id": "m1", "topics": []}]))
    checked = read_messages(spark, str(path))
    assert [r["id"] for r in checked.valid.collect()] == ["m2"]
    errors = sorted((r["row_id"], r["reason"]) for r in checked.errors.collect())
    assert errors == [
        ("m1", "id 'm1' is on 2 rows; message ids must be unique"),
        ("m1", "topics is empty"),
    ]


def test_check_ids_false_trusts_the_ids(spark: Any) -> None:
    """The caller that checked its ids (the CLI reads them through read_messages) skips the
    shuffle; duplicates then pass unnoticed, as documented."""
    messages = spark.createDataFrame([("m1", ["/a"], False), ("m1", ["/b"], False)], MESSAGES)
    subscriptions = spark.createDataFrame([("s1", ["/a", "/b"], None)], SUBSCRIPTIONS)
    got = route(messages, subscriptions, "broadcast", check_ids=False).collect()
    assert [tuple(r) for r in got] == [("m1", "s1"), ("m1", "s1")]
