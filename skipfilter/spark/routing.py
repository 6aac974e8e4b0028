"""Which subscribers get which messages, for message sets beyond one machine.

The strategies give the same deliveries (distinct ``message_id``, ``subscriber_id``
pairs, Mercure semantics with private updates), and all build a plan that runs nothing until
an action (``sql`` aside, see :func:`route`); ``auto`` picks one of the first two by size:

- ``broadcast`` (:mod:`skipfilter.spark.broadcast`) -- subscription partitions are packed
  on executors and reach every message partition through Spark's broadcast join; each
  Python worker indexes them once, and
  messages stream through in Arrow batches. The fast path while the subscription rows fit
  in each worker (a few million).
- ``sharded`` -- subscriptions too large for that are hashed into shards; every message is
  sent to every shard, and each shard's index is built on an executor from the rows
  shuffled next to its messages.
- ``sql`` (:mod:`skipfilter.spark.native`) -- joins and ``RLIKE`` only, no Python on the
  executors.
- ``naive`` -- explode, cross join, a Python UDF per pair: the strawman.

Contents: :func:`route`, :func:`route_broadcast`, :func:`route_sharded`, :func:`route_naive`,
:func:`fanout_by_subscriber`, :func:`fanout_by_topic`.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import pyarrow as pa  # type: ignore[import-untyped]

from skipfilter.selectors import SYNTAXES, Selector, check_topic, compile_selector, selector_type
from skipfilter.spark import matching
from skipfilter.spark.broadcast import route_broadcast
from skipfilter.spark.columns import conform, deliveries_schema
from skipfilter.spark.contract import (
    TYPED_SYNTAX,
    as_selector,
    typed_selectors,
)
from skipfilter.spark.native import route_sql
from skipfilter.spark.session import default_parallelism
from skipfilter.spark.sizing import auto_strategy
from skipfilter.spark.streamable import stream_refusal

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

__all__ = [
    "STRATEGIES",
    "fanout_by_subscriber",
    "fanout_by_topic",
    "route",
    "route_broadcast",
    "route_naive",
    "route_sharded",
]

STRATEGIES = ("broadcast", "sharded", "sql", "naive")


def route(
    messages: DataFrame,
    subscriptions: DataFrame,
    strategy: str = "auto",
    *,
    syntax: str = "mercure",
    shards: int | None = None,
    cache_size: int = 100_000,
    message_columns: Mapping[str, str] | None = None,
    subscription_columns: Mapping[str, str] | None = None,
    carry: Sequence[str] = (),
    check_ids: bool = True,
) -> DataFrame:
    """Deliveries (``message_id``, ``subscriber_id``) of ``messages`` to ``subscriptions``.

    A transformation: it runs no Spark job, the action on the result does (``sql`` is the
    exception: it collects the distinct selectors that may be patterns, to compile them
    into regex literals). ``strategy="auto"`` picks ``broadcast`` or ``sharded`` from
    Spark's size estimate of ``subscriptions`` (:func:`~skipfilter.spark.sizing.auto_strategy`).

    Inputs follow the data contract (see :mod:`skipfilter.spark.contract`; ``private`` and
    ``allowed`` may be absent) under their own column names where ``message_columns``
    (``{"id": ..., "topics": ..., "private": ...}``) and ``subscription_columns``
    (``{"subscriber_id": ..., "topics": ..., "allowed": ...}``) say so. ``carry`` names
    message columns (a timestamp, a partition key) copied to each of its deliveries,
    after ``subscriber_id``, by every strategy and without a join.

    A malformed row, or a message id on several rows, fails the job with
    :class:`~skipfilter.spark.contract.MalformedInput` naming it; Spark raises a failure
    on an executor as its own exception type, so run the action inside
    :func:`~skipfilter.spark.malformed.malformed_rows` to get MalformedInput whatever the
    strategy. To report bad rows and route the rest, split inputs first with
    ``check_messages``/``check_subscriptions``. ``check_ids=False`` trusts the message ids
    to be unique (``read_messages``/``check_messages`` already report duplicates) and saves
    the shuffle of the messages by id that checks them. ``shards`` (sharded only) defaults
    to the default parallelism.

    ``syntax="urlpattern"`` (Mercure 1.0): ``topics`` and ``allowed`` hold typed selectors
    (``array<struct<match, match_type>>``) or URL Patterns (``array<string>``); routed by
    ``broadcast``, ``sharded`` and ``naive``, not ``sql``.
    """
    if syntax not in SYNTAXES:
        raise ValueError(f"unknown syntax {syntax!r}; expected one of {', '.join(SYNTAXES)}")
    if strategy == "auto":  # broadcast or sharded, by Spark's size estimate (no job)
        strategy = auto_strategy(subscriptions)
    if strategy not in STRATEGIES:
        raise ValueError(f"unknown strategy {strategy!r}; expected one of {', '.join(STRATEGIES)}")
    if messages.isStreaming and (refusal := stream_refusal(strategy)) is not None:
        raise ValueError(refusal)  # now, not when the query starts, with why and what instead
    inputs = conform(
        messages,
        subscriptions,
        message_columns=message_columns,
        subscription_columns=subscription_columns,
        carry=carry,
        check_ids=check_ids,
    )
    messages, subscriptions = inputs.messages, inputs.subscriptions
    if syntax == TYPED_SYNTAX:
        subscriptions = typed_selectors(subscriptions)
    carry, names = inputs.carry, inputs.names
    if strategy == "broadcast":
        routed = route_broadcast(
            messages, subscriptions, syntax=syntax, cache_size=cache_size, carry=carry, names=names
        )
    elif strategy == "sharded":
        routed = route_sharded(
            messages,
            subscriptions,
            syntax=syntax,
            shards=shards,
            cache_size=cache_size,
            carry=carry,
            names=names,
        )
    elif strategy == "sql":
        routed = route_sql(messages, subscriptions, syntax=syntax, carry=carry, names=names)
    else:
        routed = route_naive(messages, subscriptions, syntax=syntax, carry=carry, names=names)
    return inputs.named(routed)


# -- sharded ------------------------------------------------------------------------------


def route_sharded(
    messages: DataFrame,
    subscriptions: DataFrame,
    *,
    syntax: str = "mercure",
    shards: int | None = None,
    cache_size: int = 100_000,
    carry: Sequence[str] = (),
    names: Mapping[str, Mapping[str, str]] | None = None,
) -> DataFrame:
    """Hash subscriptions into ``shards``, send every message to every shard, index per shard.

    Subscriptions and the shard-tagged messages are shuffled together, one shard per
    partition, sorted so a shard's subscription rows come before its messages: the
    executor builds the shard's index from the first and streams the second through it,
    holding one shard's index at a time. Rows of one subscriber id share a shard, so
    deliveries stay distinct. Runtime: messages x shards matches, one build per shard.
    ``carry`` (message columns) and ``names`` (the inputs' column names, for reports): see
    :func:`route`.
    """
    from pyspark.sql import functions as F

    spark = messages.sparkSession
    count = shards or default_parallelism(spark)
    if count < 1:
        raise ValueError(f"shards must be positive, got {count}")
    shard_ids = spark.range(count).select(F.col("id").cast("int").alias("shard"))
    selectors = subscriptions.schema["topics"].dataType.simpleString()  # typed or not
    carry = tuple(carry)
    passed = [*(["_file"] if "_file" in messages.columns else []), *carry]  # message-only
    tagged_subscriptions = subscriptions.select(
        F.pmod(F.xxhash64("subscriber_id"), F.lit(count)).cast("int").alias("shard"),
        F.lit(0).alias("kind"),
        F.col("subscriber_id").alias("id"),
        F.col("topics").alias("selectors"),
        F.col("allowed").cast(selectors).alias("allowed"),
        F.lit(None).cast("array<string>").alias("topics"),
        F.lit(None).cast("boolean").alias("private"),
        *(F.lit(None).cast(messages.schema[name].dataType).alias(name) for name in passed),
    )
    tagged_messages = messages.crossJoin(F.broadcast(shard_ids)).select(
        "shard",
        F.lit(1).alias("kind"),
        "id",
        F.lit(None).cast(selectors).alias("selectors"),
        F.lit(None).cast(selectors).alias("allowed"),
        "topics",
        "private",
        *passed,
    )
    together = (
        tagged_subscriptions.unionByName(tagged_messages)
        .repartition(count, "shard")
        .sortWithinPartitions("shard", "kind")
    )

    def route_partition(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        return matching.route_sharded(batches, syntax, cache_size, carry, names)

    return together.mapInArrow(route_partition, deliveries_schema(messages, carry))


# -- naive --------------------------------------------------------------------------------


def route_naive(
    messages: DataFrame,
    subscriptions: DataFrame,
    *,
    syntax: str = "mercure",
    carry: Sequence[str] = (),
    names: Mapping[str, Mapping[str, str]] | None = None,
) -> DataFrame:
    """The plain Spark way: explode topics and selectors, cross join, test each pair in a UDF.

    Runtime: O(message topics x subscription selectors) UDF calls -- the baseline.
    ``carry``: message columns kept beside each delivery (``names`` is unused: no row
    checks here).
    """
    from pyspark.sql import functions as F
    from pyspark.sql.types import BooleanType

    compiled: dict[tuple[str, str], Selector] = {}

    def selects(entry: Any, topic: str) -> bool:
        check_topic(syntax, topic)  # what a broker of ``syntax`` refuses fails the job
        typed = as_selector(entry if isinstance(entry, str) else entry.asDict())
        key = selector_type(typed, syntax, "selectors")  # (text, type): a typed one's own
        found = compiled.get(key)
        if found is None:
            found = compiled[key] = compile_selector(*key)
        return found.matches(topic)

    selects_udf = F.udf(lambda selector, topic: selects(selector, topic), BooleanType())
    rows = subscriptions.withColumn("_row", F.monotonically_increasing_id())
    carry = list(carry)
    topics = messages.select(
        F.col("id").alias("message_id"), "private", *carry, F.explode("topics").alias("topic")
    )

    def hits(column: str, candidates: DataFrame) -> DataFrame:
        selectors = rows.select("_row", "subscriber_id", F.explode(column).alias("selector"))
        return (
            candidates.crossJoin(selectors)
            .where(selects_udf("selector", "topic"))
            .select("message_id", "_row", "subscriber_id", "private", *carry)
            .dropDuplicates(["message_id", "_row", "subscriber_id"])  # a carried map: no distinct
        )

    subscribed = hits("topics", topics)
    authorized = hits("allowed", topics.where("private")).select("message_id", "_row")
    public = subscribed.where(~F.col("private"))
    private = subscribed.where("private").join(authorized, ["message_id", "_row"], "left_semi")
    pairs = public.unionByName(private).select("message_id", "subscriber_id", *carry)
    return pairs.dropDuplicates(["message_id", "subscriber_id"])


# -- fan-out ------------------------------------------------------------------------------


def fanout_by_subscriber(deliveries: DataFrame) -> DataFrame:
    """Messages delivered per subscriber: ``subscriber_id``, ``messages``."""
    from pyspark.sql import functions as F

    return deliveries.groupBy("subscriber_id").agg(F.count("*").alias("messages"))


def fanout_by_topic(messages: DataFrame, deliveries: DataFrame) -> DataFrame:
    """Per topic: ``messages`` published on it and the ``deliveries`` those messages made.

    A message with several topics counts toward each; a message nobody got counts 0.
    """
    from pyspark.sql import functions as F

    per_message = deliveries.groupBy("message_id").agg(F.count("*").alias("_deliveries"))
    topics = messages.select(
        F.col("id").alias("message_id"), F.explode(F.array_distinct("topics")).alias("topic")
    )
    return (
        topics.join(per_message, "message_id", "left")
        .groupBy("topic")
        .agg(
            F.count("*").alias("messages"),
            F.coalesce(F.sum("_deliveries"), F.lit(0)).cast("long").alias("deliveries"),
        )
    )
