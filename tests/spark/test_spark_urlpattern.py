"""Mercure 1.0 subscriptions on Spark: typed selectors (exact and URL Pattern) in the data
contract, routed by the broadcast, sharded and naive strategies against brute force with
the ``urlpattern`` package; the sql strategy refuses them, saying why."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest

from skipfilter.spark import MalformedInput, read_subscriptions, route
from skipfilter.spark.contract import MATCHER, subscription_problem
from skipfilter.spark.malformed import malformed_rows
from tests.selectors.urloracle import urlpattern_oracle

BASE = "https://example.com"
PATTERNS = [
    f"{BASE}/books/:id",
    f"{BASE}/users/:user/orders{{/:order}}?",
    "https://*.example.com/chat/*",
    f"{BASE}/news/:year(\\d+)/:slug",
    "*",
]
MESSAGES = "id string, topics array<string>, private boolean"
TYPED = f"subscriber_id string, topics array<{MATCHER}>, allowed array<{MATCHER}>"

Row = dict[str, Any]


def generate(subscribers: int, messages: int, seed: int) -> tuple[list[Row], list[Row]]:
    """Typed subscriptions (exact topics, URL Patterns, ``*``) and messages whose topics are
    spelled as a naive index would miss them (host case, default port)."""
    rng = random.Random(seed)

    def topic() -> str:
        host = rng.choice(
            ["https://example.com", "https://EXAMPLE.com:443", "https://a.example.com"]
        )
        path = rng.choice(
            [
                f"/books/{rng.randrange(9)}",
                f"/users/u{rng.randrange(4)}/orders/{rng.randrange(3)}",
                f"/users/u{rng.randrange(4)}/orders",
                f"/chat/{rng.choice('ab')}",
                f"/news/202{rng.randrange(3)}/s",
            ]
        )
        return host + path

    def matcher() -> Row:
        if rng.random() < 0.4:
            return {"match": rng.choice(PATTERNS), "match_type": "urlpattern"}
        return {"match": topic(), "match_type": rng.choice(["exact", None])}

    subs = []
    for i in range(subscribers):
        row: Row = {"subscriber_id": f"s{i % (subscribers - 3)}", "topics": [matcher(), matcher()]}
        row["allowed"] = [matcher()] if rng.random() < 0.6 else None
        subs.append(row)
    msgs = [
        {"id": f"m{i}", "topics": [topic(), topic()], "private": rng.random() < 0.3}
        for i in range(messages)
    ]
    return msgs, subs


def hit(matchers: list[Row] | None, topics: list[str]) -> bool:
    for m in matchers or []:
        for topic in topics:
            if m["match"] == "*" or (m["match_type"] in (None, "exact") and m["match"] == topic):
                return True
            if m["match_type"] == "urlpattern" and urlpattern_oracle(m["match"], topic):
                return True
    return False


def oracle(msgs: list[Row], subs: list[Row]) -> set[tuple[str, str]]:
    return {
        (m["id"], s["subscriber_id"])
        for m in msgs
        for s in subs
        if hit(s["topics"], m["topics"]) and (not m["private"] or hit(s["allowed"], m["topics"]))
    }


def pairs(df: Any) -> set[tuple[str, str]]:
    return {(r["message_id"], r["subscriber_id"]) for r in df.collect()}


@pytest.fixture(scope="module")
def data(spark: Any) -> tuple[Any, Any, set[tuple[str, str]]]:
    msgs, subs = generate(40, 150, seed=3)
    expected = oracle(msgs, subs)
    assert len(expected) > 200 and any(m["private"] for m in msgs)
    messages = spark.createDataFrame([(m["id"], m["topics"], m["private"]) for m in msgs], MESSAGES)
    subscriptions = spark.createDataFrame(
        [(s["subscriber_id"], s["topics"], s["allowed"]) for s in subs], TYPED
    )
    return messages.repartition(3), subscriptions, expected


@pytest.mark.parametrize("strategy", ["broadcast", "sharded", "naive"])
def test_typed_subscriptions_route_as_brute_force(data: Any, strategy: str) -> None:
    messages, subscriptions, expected = data
    got = route(messages, subscriptions, strategy, syntax="urlpattern", shards=3)
    rows = [(r["message_id"], r["subscriber_id"]) for r in got.collect()]
    assert len(rows) == len(set(rows)), "deliveries must be distinct"
    assert set(rows) == expected


def test_plain_strings_are_url_patterns(spark: Any) -> None:
    messages = spark.createDataFrame(
        [("m1", ["https://EXAMPLE.com:443/books/1"], False), ("m2", ["/books/2"], False)], MESSAGES
    )
    subscriptions = spark.createDataFrame(
        [("s1", [f"{BASE}/books/:id"])], "subscriber_id string, topics array<string>"
    )
    for strategy in ("broadcast", "sharded"):
        got = route(messages, subscriptions, strategy, syntax="urlpattern")
        assert pairs(got) == {("m1", "s1")}  # '/books/2' is relative: no base, no match


def test_sql_refuses_urlpattern_saying_why(data: Any) -> None:
    messages, subscriptions, _ = data
    with pytest.raises(ValueError, match="strategy 'sql' cannot route urlpattern selectors"):
        route(messages, subscriptions, "sql", syntax="urlpattern")


def test_a_bad_typed_selector_fails_the_job_naming_it(spark: Any) -> None:
    messages = spark.createDataFrame([("m1", [f"{BASE}/a"], False)], MESSAGES)
    bad = spark.createDataFrame(
        [("s1", [{"match": f"{BASE}/a+b", "match_type": "urlpattern"}], None)], TYPED
    )
    deliveries = route(messages, bad, "broadcast", syntax="urlpattern")  # lazy: runs nothing
    with pytest.raises(MalformedInput, match=r"'s1'.*invalid URL pattern"), malformed_rows():
        deliveries.collect()


@pytest.mark.parametrize(
    ("entry", "problem"),
    [
        ({"match": f"{BASE}/a", "match_type": "regex"}, "not regex"),
        ({"match": f"{BASE}/a", "match_type": "uri"}, "unknown selector type 'uri'"),
        ({"match": f"{BASE}/a+b", "match_type": "urlpattern"}, "invalid URL pattern"),
        ({"match_type": "exact"}, "match must be a string"),
        ({"match": "x", "kind": "exact"}, "unknown key(s) 'kind'"),
        (42, "must be a string or a {match, match_type} object"),
    ],
)
def test_contract_names_bad_typed_selectors(entry: Any, problem: str) -> None:
    found = subscription_problem({"subscriber_id": "s", "topics": [entry]}, "urlpattern")
    assert found is not None and problem in found, found
    assert (
        subscription_problem({"subscriber_id": "s", "topics": [{"match": "x"}]}, "urlpattern")
        is None
    )


def test_typed_selectors_only_in_the_urlpattern_syntax() -> None:
    found = subscription_problem({"subscriber_id": "s", "topics": [{"match": "/a"}]}, "mercure")
    assert found == "topics[0] must be a string, got dict: {'match': '/a'}"


def test_json_lines_mix_strings_and_objects(spark: Any, tmp_path: Path) -> None:
    lines = [
        {"subscriber_id": "s1", "topics": [f"{BASE}/books/:id", {"match": f"{BASE}/x"}]},
        {"subscriber_id": "s2", "topics": [{"match": "*", "match_type": "urlpattern"}]},
        {"subscriber_id": "s3", "topics": [{"match": f"{BASE}/books/:id", "match_type": "mqtt"}]},
    ]
    path = tmp_path / "subs.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    checked = read_subscriptions(spark, str(path), "urlpattern")
    errors = checked.errors.collect()
    assert [(e["row_id"], "not mqtt" in e["reason"]) for e in errors] == [("s3", True)]
    valid = {r["subscriber_id"]: [tuple(m) for m in r["topics"]] for r in checked.valid.collect()}
    assert valid == {
        "s1": [(f"{BASE}/books/:id", "urlpattern"), (f"{BASE}/x", "exact")],
        "s2": [("*", "urlpattern")],
    }
    messages = spark.createDataFrame(
        [("m1", [f"{BASE}/books/1"], False), ("m2", [f"{BASE}/x"], False)], MESSAGES
    )
    got = pairs(route(messages, checked.valid, "broadcast", syntax="urlpattern"))
    assert got == {("m1", "s1"), ("m1", "s2"), ("m2", "s1"), ("m2", "s2")}
