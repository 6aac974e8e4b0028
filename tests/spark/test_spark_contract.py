"""Malformed rows are reported with their file, id and reason, never dropped."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from skipfilter.spark import MalformedInput, check_subscriptions, read_messages, read_subscriptions
from skipfilter.spark.contract import message_problem, subscription_problem


@pytest.mark.parametrize(
    ("row", "problem"),
    [
        ({"id": "m", "topics": ["/a"]}, None),
        ({"id": "m", "topics": ["/a"], "private": None}, None),
        ({"topics": ["/a"]}, "missing id"),
        ({"id": "", "topics": ["/a"]}, "id must be a non-empty string, got str: ''"),
        ({"id": 7, "topics": ["/a"]}, "id must be a non-empty string, got int: 7"),
        ({"id": "m"}, "missing topics"),
        ({"id": "m", "topics": "/a"}, "topics must be an array of strings, got str: '/a'"),
        ({"id": "m", "topics": []}, "topics is empty"),
        ({"id": "m", "topics": ["/a", 3]}, "topics[1] must be a string, got int: 3"),
        ({"id": "m", "topics": ["/a"], "private": "yes"}, "private must be a boolean, got str"),
    ],
)
def test_message_problem(row: dict[str, Any], problem: str | None) -> None:
    found = message_problem(row)
    assert found == problem if problem is None else found is not None and found.startswith(problem)


def test_subscription_problem() -> None:
    assert subscription_problem({"subscriber_id": "s", "topics": ["{x"]}) is None  # raw string
    assert subscription_problem({"subscriber_id": "s", "topics": ["a"], "allowed": []}) is None
    assert subscription_problem({"subscriber_id": "s", "topics": ["a/#/b"]}, "mqtt") == (
        "topics[0]: '#' must be the last level at column 3 in 'a/#/b'"
    )
    bad = subscription_problem(
        {"subscriber_id": "s", "topics": ["a"], "allowed": ["a.>.b"]}, "nats"
    )
    assert bad is not None and bad.startswith("allowed[0]: '>' must be the last token")
    assert subscription_problem({"topics": ["a"]}) == "missing subscriber_id"


def test_json_lines_bad_rows_reported(spark: Any, tmp_path: Path) -> None:
    path = tmp_path / "updates.jsonl"
    lines = [
        json.dumps({"id": "m1", "topics": ["/a"]}),
        json.dumps({"id": "m2", "topics": "/a", "private": True}),
        "{not json",
        "",
        json.dumps(["m3"]),
        json.dumps({"topics": ["/b"]}),
        json.dumps({"id": "m4", "topics": ["/b"], "private": True}),
    ]
    path.write_text("\n".join(lines) + "\n")
    checked = read_messages(spark, str(path))
    valid = sorted((r["id"], r["topics"], r["private"]) for r in checked.valid.collect())
    assert valid == [("m1", ["/a"], False), ("m4", ["/b"], True)]
    errors = sorted(checked.errors.collect(), key=lambda r: r["record"])
    assert [(r["row_id"], r["reason"].split(":")[0]) for r in errors] == [
        (None, "row is not a JSON object"),
        ("m2", "topics must be an array of strings, got str"),
        (None, "missing id"),
        (None, "invalid JSON"),
    ]
    assert all(r["source"] == "messages" and r["file"].endswith("updates.jsonl") for r in errors)
    assert errors[3]["record"] == "{not json"


def test_parquet_bad_rows_reported(spark: Any, tmp_path: Path) -> None:
    rows = [("s1", ["a.*"], None), ("s2", ["a.>.b"], None), (None, ["a"], None), ("s4", [], ["a"])]
    df = spark.createDataFrame(
        rows, "subscriber_id string, topics array<string>, allowed array<string>"
    )
    df.write.parquet(str(tmp_path / "subs"))
    checked = read_subscriptions(spark, str(tmp_path / "subs"), syntax="nats")
    assert [r["subscriber_id"] for r in checked.valid.collect()] == ["s1"]
    errors = sorted(checked.errors.collect(), key=lambda r: str(r["row_id"]))
    assert [(r["row_id"], r["reason"]) for r in errors] == [
        (None, "missing subscriber_id"),
        ("s2", "topics[0]: '>' must be the last token at column 3 in 'a.>.b'"),
        ("s4", "topics is empty"),
    ]
    assert all(".parquet" in r["file"] for r in errors)
    assert json.loads(errors[1]["record"])["topics"] == ["a.>.b"]


def test_missing_column_rejected(spark: Any) -> None:
    df = spark.createDataFrame([("s1", ["a"])], "name string, topics array<string>")
    with pytest.raises(MalformedInput, match=r"missing column.*subscriber_id.*found name, topics"):
        check_subscriptions(df)


def test_docstring_examples() -> None:
    import doctest

    from skipfilter.spark import contract

    failures, tried = doctest.testmod(contract)
    assert failures == 0 and tried >= 2
