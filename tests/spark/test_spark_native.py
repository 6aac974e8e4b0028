"""The ``sql`` strategy's parts: Java regexes that mean what the selectors mean, and its errors.

Java's verdicts come from Spark's RLIKE itself, on thousands of (selector, topic) pairs in
one job, against the selectors' own Python test.
"""

from __future__ import annotations

import random
import re
from typing import Any

import pytest
import uritemplate as reference
from hypothesis import given
from hypothesis import strategies as st

from skipfilter.errors import InvalidSelector
from skipfilter.selectors import compile_selector
from skipfilter.spark import STRATEGIES, MalformedInput, malformed_rows, route
from skipfilter.spark.javaregex import Untranslatable, java_fullmatch
from skipfilter.spark.native import MAYBE_PATTERN, python_pattern

MESSAGES = "id string, topics array<string>, private boolean"
SUBSCRIPTIONS = "subscriber_id string, topics array<string>, allowed array<string>"
VALUE_CHARS = "ab/?#[]@!$&'()*+,;=%-._~ é\n\u2028" + "\U0001f600"


def _template(rng: random.Random) -> str:
    out = []
    for _ in range(rng.randint(1, 3)):
        if rng.random() < 0.5:
            out.append(rng.choice(["/", "x", "-", ".", "é", "?y=1", "%2F", "~"]))
        op = rng.choice(["", "+", "#", ".", "/", ";", "?", "&"])
        specs = [
            rng.choice("abc") + rng.choice(["", "", "*", ":1", ":3"])
            for _ in range(rng.randint(1, 3))
        ]
        out.append("{" + op + ",".join(specs) + "}")
    return "".join(out)


def _value(rng: random.Random) -> Any:
    def text() -> str:
        return "".join(rng.choice(VALUE_CHARS) for _ in range(rng.randint(0, 4)))

    kind = rng.random()
    if kind < 0.15:
        return None
    if kind < 0.7:
        return text()
    if kind < 0.85:
        return [text() for _ in range(rng.randint(1, 3))]
    return {text() or "k": text() for _ in range(rng.randint(1, 2))}


def _mutations(rng: random.Random, topic: str) -> list[str]:
    out = []
    if topic:
        i = rng.randrange(len(topic))
        out += [topic[:i] + topic[i + 1 :], topic[:i] + rng.choice(VALUE_CHARS) + topic[i:]]
    return [*out, topic + "\n", topic + "/"]


def mercure_pairs(rng: random.Random, count: int) -> list[tuple[str, str]]:
    """Templates with the topics they expand to, and near misses of those."""
    pairs: list[tuple[str, str]] = []
    while len(pairs) < count:
        text = _template(rng)
        topics = {text}
        for _ in range(4):
            values = {name: _value(rng) for name in "abc"}
            values = {k: v for k, v in values.items() if v is not None}
            expanded = reference.URITemplate(text).expand(values)
            topics.add(expanded)
            topics.update(_mutations(rng, expanded))
        pairs += [(text, topic) for topic in sorted(topics)]
    return pairs


WORDS = {
    "amqp": (".", ["a", "b", "", "*", "#", "#", "a*"], ["a", "b", "", "c d", "#", "*"]),
    "nats": (".", ["a", "b", "*", ">", "c"], ["a", "b", "", "c", "*", ">"]),
    "mqtt": ("/", ["a", "b", "", "+", "#", "$x"], ["a", "b", "", "$x", "+", "#"]),
}


def word_pairs(rng: random.Random, syntax: str, count: int) -> list[tuple[str, str]]:
    sep, selector_words, topic_words = WORDS[syntax]
    pairs: list[tuple[str, str]] = []
    while len(pairs) < count:
        text = sep.join(rng.choice(selector_words) for _ in range(rng.randint(1, 5)))
        try:
            compile_selector(text, syntax)
        except InvalidSelector:
            continue
        for _ in range(6):  # random topics, and instances of the selector
            words = [rng.choice(topic_words) for _ in range(rng.randint(1, 6))]
            pairs.append((text, sep.join(words)))
            words = []
            for word in text.split(sep):
                if word in ("*", "+"):
                    words.append(rng.choice(topic_words))
                elif word in ("#", ">"):
                    words += [rng.choice(topic_words) for _ in range(rng.randint(word == ">", 2))]
                else:
                    words.append(word)
            pairs.append((text, sep.join(words)))
    return pairs


@pytest.mark.parametrize("syntax", ["mercure", "amqp", "nats", "mqtt"])
def test_rlike_agrees_with_the_selectors(spark: Any, syntax: str) -> None:
    rng = random.Random(f"rlike-{syntax}")
    pairs = mercure_pairs(rng, 1000) if syntax == "mercure" else word_pairs(rng, syntax, 1500)
    selectors = {text: compile_selector(text, syntax) for text, _ in pairs}
    patterns = {
        text: python_pattern(selector)
        for text, selector in selectors.items()
        if selector.exact is None and not selector.match_all
    }
    java = {text: java_fullmatch(pattern) for text, pattern in patterns.items()}
    rows, expected = [], []
    for i, (text, topic) in enumerate(pairs):
        if text in java:
            rows.append((i, topic, java[text]))
            expected.append((i, selectors[text].matches(topic)))
    df = spark.createDataFrame(rows, "i int, topic string, regex string")
    got = sorted(tuple(r) for r in df.selectExpr("i", "topic RLIKE regex").collect())
    assert got == expected
    matched = sum(hit for _, hit in expected)
    assert len(rows) > 500 and 0.1 * len(rows) < matched < 0.9 * len(rows)
    if syntax == "mercure":  # the conditional groups of multi-variable expressions were met
        assert sum("(?(" in pattern for pattern in patterns.values()) > 30


@pytest.mark.parametrize(
    ("pattern", "construct"),
    [
        (r"\w+", "Unicode character class"),
        (r"(?i)a", "flags"),
        (r"(?<=a)b", "lookbehind"),
        (r"(a)\1", "GROUPREF"),
        (r"(?s:.)", "inline flag"),
    ],
)
def test_untranslatable_patterns_are_named(pattern: str, construct: str) -> None:
    with pytest.raises(Untranslatable, match=re.escape(construct)):
        java_fullmatch(pattern)


@given(st.text(alphabet="ab.{}*#>+/ \t$\x00", max_size=8), st.sampled_from(sorted(MAYBE_PATTERN)))
def test_selectors_not_flagged_are_their_own_exact_topic(text: str, syntax: str) -> None:
    """A selector MAYBE_PATTERN lets through is joined on equality: it must be exact."""
    if re.fullmatch(MAYBE_PATTERN[syntax], text) is None:
        assert compile_selector(text, syntax).exact == text


def test_bad_rows_fail_by_name(spark: Any) -> None:
    subscriptions = spark.createDataFrame([("s1", ["/a"], None)], SUBSCRIPTIONS)
    messages = spark.createDataFrame([("m1", ["/a"], False), ("m2", [], False)], MESSAGES)
    empty = r"messages: row id='m2', column topics: topics is empty"
    with pytest.raises(MalformedInput, match=empty), malformed_rows():
        route(messages, subscriptions, "sql").collect()
    messages = spark.createDataFrame([("m1", ["/a"], False)], MESSAGES)
    subscriptions = spark.createDataFrame([("s1", ["/a"], ["/b", None])], SUBSCRIPTIONS)
    held = r"subscriptions: row id='s1', column allowed: allowed holds a null"
    with pytest.raises(MalformedInput, match=held), malformed_rows():
        route(messages, subscriptions, "sql").collect()
    subscriptions = spark.createDataFrame(
        [("good", ["a.*"], None), ("bad", ["a.>.b"], None)], SUBSCRIPTIONS
    )
    with pytest.raises(MalformedInput, match=r"row id='bad', column topics: .*'>' must be"):
        route(messages, subscriptions, "sql", syntax="nats")
    with pytest.raises(ValueError, match=r"syntax 'regex'"):
        route(messages, subscriptions, "sql", syntax="regex")


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_unpublishable_topics_fail_by_name(spark: Any, strategy: str) -> None:
    """MQTT names with wildcards, NATS subjects with empty tokens: brokers refuse them."""
    for syntax, good, bad in [("mqtt", "a/b", "a/+"), ("nats", "a.b", "a..b")]:
        messages = spark.createDataFrame([("m1", [good], False), ("m2", [bad], False)], MESSAGES)
        subscriptions = spark.createDataFrame(
            [("s1", ["#" if syntax == "mqtt" else ">"], None)], SUBSCRIPTIONS
        )
        named = re.escape(bad) if strategy == "naive" else rf"m2.*{re.escape(bad)}"
        with pytest.raises(Exception, match=named):  # naive tests pairs: no message id
            route(messages, subscriptions, strategy, syntax=syntax).collect()


def test_docstring_examples() -> None:
    import doctest

    from skipfilter.spark import javaregex

    failures, tried = doctest.testmod(javaregex)
    assert failures == 0 and tried >= 1
