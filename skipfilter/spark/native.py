"""The ``sql`` strategy: routing in Spark SQL alone, as a Spark engineer writes it without an index.

Selectors are exploded; exact ones meet the exploded message topics in a hash join
(broadcast while the selectors are under Spark's ``autoBroadcastJoinThreshold``; forcing
it ran the driver out of memory at a million subscriptions); the few distinct patterns
(URI templates, wildcards) are tested with ``RLIKE`` against each distinct topic and
joined back to the subscriptions that hold them; private updates are paired with the
same subscription row's ``allowed`` hits; ``distinct`` ends it.
No Python runs on the executors: the driver only classifies the distinct selectors that
might be patterns and turns those into Java regexes (:mod:`skipfilter.spark.javaregex`).

Contents: :func:`route_sql`, :data:`MAYBE_PATTERN`, :func:`python_pattern`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from skipfilter import uritemplate
from skipfilter.errors import InvalidSelector
from skipfilter.selectors import Selector, compile_selector
from skipfilter.selectors.selector import regex_of
from skipfilter.spark.javaregex import Untranslatable, java_fullmatch
from skipfilter.spark.malformed import MalformedInput, failing

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame

__all__ = ["MAYBE_PATTERN", "python_pattern", "route_sql"]

_ANY = r"[\s\S]*"
#: Per syntax, a ``re.fullmatch`` pattern that every selector which is *not* the exact
#: string it spells satisfies (wildcards, templates, and invalid text). Selectors it
#: rejects are joined on equality without being compiled; a test holds it to that.
MAYBE_PATTERN = {
    "mercure": rf"\*|{_ANY}\{{{_ANY}",
    "amqp": rf"(?:{_ANY}\.)?[*#](?:\.{_ANY})?",
    "nats": rf"{_ANY}[*> \t\n\r\f]{_ANY}|\.{_ANY}|{_ANY}\.\.{_ANY}|{_ANY}\.|",
    "mqtt": rf"{_ANY}[+#\x00]{_ANY}|",
}
_REPORTED = 5  # bad selectors named in a MalformedInput message


def python_pattern(selector: Selector) -> str:
    """A Python pattern whose ``re.fullmatch`` is ``selector``'s test (not exact, not match-all).

    Mercure: the template's own regex, or the selector's text itself. Word syntaxes: the
    regex the selector compiled to, or for AMQP bindings with several ``#`` (tested
    word by word in Python) a regex of the same language.
    """
    if selector.syntax == "mercure":
        template = uritemplate.parse(selector.text)
        return f"{re.escape(selector.text)}|{template.pattern.pattern}"
    regex = regex_of(selector)
    if regex is not None:
        return regex
    if selector.syntax == "amqp":
        return _amqp_words(selector.text.split("."))
    raise Untranslatable(f"no regex for {selector.syntax} selector {selector.text!r}")


def _amqp_words(words: list[str]) -> str:
    """Regex of an AMQP binding: ``*`` one word, each run of ``#`` zero or more words."""
    out: list[str] = []
    started = hashes = False
    for word in words:
        if word == "#":
            hashes = True
            continue
        if started:
            out.append(r"\.(?:[^.]*\.)*" if hashes else r"\.")
        elif hashes:
            out.append(r"(?:[^.]*\.)*")
        out.append("[^.]*" if word == "*" else re.escape(word))
        started, hashes = True, False
    if hashes:
        out.append(r"(?:\.[^.]*)*" if started else _ANY)
    return "".join(out)


def route_sql(
    messages: DataFrame,
    subscriptions: DataFrame,
    *,
    syntax: str = "mercure",
    carry: Sequence[str] = (),
    names: Mapping[str, Mapping[str, str]] | None = None,
) -> DataFrame:
    """Deliveries by joins and ``RLIKE`` only; inputs as :func:`~skipfilter.spark.routing.route`.

    Bad rows fail the job naming them (``raise_error``, on the executors); a selector
    that does not compile fails here, on the driver. Subscription rows of one subscriber
    are told apart by a 64-bit hash of their selectors, which pairs a private update's
    ``topics`` and ``allowed`` hits of the same row. Runtime: a join per exact topic,
    distinct topics x distinct patterns regex tests, and the deliveries' shuffle.
    ``carry`` (message columns) and ``names`` (the inputs' column names, for reports): see
    ``route()``.
    """
    from pyspark.sql import functions as F

    if syntax == "urlpattern":
        raise ValueError(
            "strategy 'sql' cannot route urlpattern selectors: a URL Pattern matches a topic's "
            "parsed URL (host case, default ports, dot segments, percent-encoding, relative "
            "references), which no Java regex over the topic's text computes; use 'broadcast' "
            "or 'sharded'"
        )
    if syntax not in MAYBE_PATTERN:
        raise ValueError(
            f"strategy 'sql' supports {', '.join(MAYBE_PATTERN)}: Python regular expressions "
            f"(syntax {syntax!r}) do not mean the same in Java's RLIKE"
        )
    names = names or {}
    carry = list(carry)
    topics = _message_topics(messages, syntax, carry, names.get("messages", {}))
    selectors = _subscription_selectors(subscriptions, names.get("subscriptions", {}))
    maybe = F.col("selector").rlike(java_fullmatch(MAYBE_PATTERN[syntax]))
    kinds = _classify(selectors.where(maybe), syntax, names.get("subscriptions", {}))
    patterns = [(text, regex) for text, regex in kinds.items() if regex is not None]
    match_all = [text for text, regex in kinds.items() if regex is None]
    tagged = selectors.withColumn("_pattern", maybe & F.col("selector").isin(list(kinds)))

    exact = topics.join(
        tagged.where(~F.col("_pattern")),  # Spark broadcasts it when small enough
        F.col("topic") == F.col("selector"),
    )
    hits = exact.select(*_HIT, *carry)
    if match_all:
        everyone = tagged.where(F.col("selector").isin(match_all))
        once = topics.dropDuplicates(["message_id"]).select("message_id", "private", *carry)
        hits = hits.unionByName(once.crossJoin(everyone).select(*_HIT, *carry))
    if patterns:
        pattern_hits = _pattern_hits(topics.select("topic").distinct(), patterns)
        holders = tagged.where(F.col("selector").isin([text for text, _ in patterns]))
        hits = hits.unionByName(
            topics.join(pattern_hits, "topic").join(holders, "selector").select(*_HIT, *carry)
        )
    subscribed = hits.where(~F.col("auth"))
    authorized = hits.where(F.col("auth") & F.col("private"))
    private = subscribed.where("private").join(
        authorized.select("message_id", "subscriber_id", "_row"),
        ["message_id", "subscriber_id", "_row"],
        "left_semi",
    )
    public = subscribed.where(~F.col("private"))
    pairs = public.unionByName(private).select("message_id", "subscriber_id", *carry)
    return pairs.dropDuplicates(["message_id", "subscriber_id"])  # a carried map: no distinct


_HIT = ("message_id", "private", "subscriber_id", "_row", "auth")


def _array_problem(name: str, label: str | None = None) -> Column:
    """What is wrong with array column ``name`` (called ``label`` in the input), or null."""
    from pyspark.sql import functions as F

    column, label = F.col(name), label or name
    return (
        F.when(column.isNull(), F.lit(f"missing {label}"))
        .when(F.size(column) == 0, F.lit(f"{label} is empty"))
        .when(F.exists(column, lambda item: item.isNull()), F.lit(f"{label} holds a null"))
    )


def _id_problem(name: str, label: str | None = None) -> Column:
    """What is wrong with id column ``name`` (called ``label`` in the input), or null."""
    from pyspark.sql import functions as F

    column, label = F.col(name), label or name
    return F.when(column.isNull(), F.lit(f"missing {label}")).when(
        column == "", F.lit(f"{label} must be a non-empty string")
    )


#: Per syntax that refuses some published topics, a Java regex finding what it refuses
#: (the rule of :func:`skipfilter.selectors.topic_problem`; an empty topic is refused too).
_UNPUBLISHABLE = {
    "mqtt": r"[+#\x00]",
    "nats": r"(^|\.)[*>](\.|$)|^\.|\.\.|\.$|[ \t\n\r\f]",
}


def _topics_problem(syntax: str, label: str = "topics") -> Column | None:
    """A message's first topic that ``syntax`` cannot publish to, named, or null."""
    from pyspark.sql import functions as F

    refused = _UNPUBLISHABLE.get(syntax)
    if refused is None:
        return None
    bad = F.filter("topics", lambda topic: (topic == "") | topic.rlike(refused))
    return F.when(
        F.size(bad) > 0,
        F.concat(F.lit(f"{label}: "), bad[0], F.lit(f" cannot be published to in {syntax}")),
    )


def _message_topics(
    messages: DataFrame, syntax: str, carry: list[str], names: Mapping[str, str]
) -> DataFrame:
    """``message_id``, ``private``, the ``carry`` columns, ``topic``: one row per distinct
    topic of each message; a bad message fails the task (MalformedInput's marker)."""
    from pyspark.sql import functions as F

    problems = [
        _id_problem("id", names.get("id")),
        _array_problem("topics", names.get("topics")),
    ]
    topics_problem = _topics_problem(syntax, names.get("topics", "topics"))
    if topics_problem is not None:
        problems.append(topics_problem)
    problem = F.coalesce(*problems)
    column = F.when(problems[0].isNotNull(), F.lit(names.get("id", "id"))).otherwise(
        F.lit(names.get("topics", "topics"))
    )
    file = F.col("_file") if "_file" in messages.columns else None
    row = F.col("id")
    checked = failing(F.array_distinct("topics"), problem, "messages", row, column, file)
    return messages.select(
        F.col("id").alias("message_id"), "private", *carry, F.explode(checked).alias("topic")
    )


def _subscription_selectors(subscriptions: DataFrame, names: Mapping[str, str]) -> DataFrame:
    """``subscriber_id``, ``_row``, ``auth``, ``selector``: one row per selector of each row.

    ``auth`` is false for a ``topics`` selector and true for an ``allowed`` one.
    """
    from pyspark.sql import functions as F

    allowed = F.coalesce(F.col("allowed"), F.array().cast("array<string>"))
    entries = F.concat(
        F.transform("topics", lambda s: F.struct(F.lit(False).alias("auth"), s.alias("selector"))),
        F.transform(allowed, lambda s: F.struct(F.lit(True).alias("auth"), s.alias("selector"))),
    )
    problems = [
        _id_problem("subscriber_id", names.get("subscriber_id")),
        _array_problem("topics", names.get("topics")),
        F.when(
            F.exists(allowed, lambda s: s.isNull()),
            F.lit(f"{names.get('allowed', 'allowed')} holds a null"),
        ),
    ]
    column = F.coalesce(
        *(
            F.when(p.isNotNull(), F.lit(names.get(field, field)))
            for p, field in zip(problems, ("subscriber_id", "topics", "allowed"), strict=True)
        )
    )
    row = F.col("subscriber_id")
    checked = failing(entries, F.coalesce(*problems), "subscriptions", row, column)
    return subscriptions.select(
        "subscriber_id",
        F.xxhash64("topics", "allowed").alias("_row"),
        F.inline(checked),
    )


def _classify(
    candidates: DataFrame, syntax: str, names: Mapping[str, str]
) -> dict[str, str | None]:
    """Distinct selectors that may be patterns -> Java regex, or None for match-all.

    Exact ones are left out (they join on equality); invalid ones raise MalformedInput
    naming a subscriber that holds them.
    """
    from pyspark.sql import functions as F

    holder = F.min(F.struct("subscriber_id", "auth")).alias("holder")
    rows = candidates.groupBy("selector").agg(holder).collect()
    kinds: dict[str, str | None] = {}
    bad: list[tuple[str | None, str]] = []
    for row in rows:
        text: str = row["selector"]
        try:
            selector = compile_selector(text, syntax)
        except InvalidSelector as error:
            field = "allowed" if row["holder"]["auth"] else "topics"
            bad.append((row["holder"]["subscriber_id"], f"{field}: {error}"))
            continue
        if selector.match_all:
            kinds[text] = None
        elif selector.exact is None:
            kinds[text] = java_fullmatch(python_pattern(selector))
    if bad:
        bad.sort(key=lambda item: (item[0] or "", item[1]))
        raise MalformedInput.of_rows("subscriptions", bad, names, shown=_REPORTED)
    return kinds


def _pattern_hits(topics: DataFrame, patterns: list[tuple[str, str]]) -> DataFrame:
    """``topic``, ``selector`` for each distinct topic a pattern matches: one RLIKE per pair.

    The regexes are literals, so each is compiled once per task, not once per row.
    """
    from pyspark.sql import functions as F

    tests = [F.when(F.col("topic").rlike(regex), F.lit(text)) for text, regex in patterns]
    matched = F.filter(F.array(*tests), lambda selector: selector.isNotNull())
    return topics.select("topic", F.explode(matched).alias("selector"))
