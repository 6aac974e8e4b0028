"""Inputs as their owners name them: the contract's columns under the inputs' own names,
chosen message columns carried to the deliveries, and message ids held unique.

A Spark user's log has ``event_id`` and ``tags``, and wants its timestamp and partition
key next to each delivery. Joining the deliveries back to the messages for that costs a
shuffle of every delivery; carrying the columns through the routing costs nothing extra
(broadcast and sharded take them row by row in Arrow, ``sql`` and ``naive`` keep them in
their joins). Inside, the strategies see the contract's names (``id``, ``topics``,
``private``; ``subscriber_id``, ``topics``, ``allowed``) and carried columns under
private names, so no input column can collide with a working one.

Contents: :func:`column_names`, :func:`contract_columns`, :func:`check_carry`,
:func:`conform`, :class:`Conformed`, :func:`deliveries_schema`; for the readers,
:func:`reader_carry` and :func:`duplicates_reported`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from skipfilter.spark.malformed import MalformedInput, failing

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame
    from pyspark.sql.types import StructType

__all__ = [
    "MESSAGE_COLUMNS",
    "OUTPUT_COLUMNS",
    "SUBSCRIPTION_COLUMNS",
    "Conformed",
    "check_carry",
    "column_names",
    "conform",
    "contract_columns",
    "deliveries_schema",
    "duplicates_reported",
    "reader_carry",
]

MESSAGE_COLUMNS = ("id", "topics", "private")
SUBSCRIPTION_COLUMNS = ("subscriber_id", "topics", "allowed")
OUTPUT_COLUMNS = ("message_id", "subscriber_id")
_OPTIONAL = {"private": "boolean", "allowed": "array<string>"}


def column_names(given: Mapping[str, str] | None, source: str) -> dict[str, str]:
    """Contract column -> the input's column, for ``source`` (messages or subscriptions).

    >>> column_names({"id": "event_id"}, "messages")
    {'id': 'event_id', 'topics': 'topics', 'private': 'private'}
    """
    fields = MESSAGE_COLUMNS if source == "messages" else SUBSCRIPTION_COLUMNS
    names = dict(given or {})
    unknown = sorted(set(names) - set(fields))
    if unknown:
        raise ValueError(
            f"{source} columns: unknown contract column(s) {', '.join(map(repr, unknown))}; "
            f"name some of {', '.join(fields)}"
        )
    for field, name in names.items():
        if not isinstance(name, str) or not name:
            raise ValueError(f"{source} columns: {field} must name a column, got {name!r}")
    return {field: names.get(field, field) for field in fields}


def check_carry(carry: Sequence[str], messages: DataFrame | None = None) -> tuple[str, ...]:
    """``carry`` as a tuple, refused when it repeats a name, takes an output column's name or
    (given ``messages``) names a column they do not have."""
    if isinstance(carry, str):
        raise ValueError(f"carry must be a list of column names, got the string {carry!r}")
    names = tuple(carry)
    taken = sorted({name for name in names if names.count(name) > 1})
    if taken:
        raise ValueError(f"carry names {', '.join(taken)} more than once")
    clashes = [name for name in names if name in OUTPUT_COLUMNS]
    if clashes:
        raise ValueError(
            f"carry cannot take {', '.join(clashes)}: the deliveries' own column(s) are named so"
        )
    if messages is not None:
        missing = [name for name in names if name not in messages.columns]
        if missing:
            raise MalformedInput(
                f"messages: no column(s) {', '.join(missing)} to carry; "
                f"found {', '.join(messages.columns)}",
                source="messages",
                column=missing[0],
            )
    return names


def deliveries_schema(messages: DataFrame, carry: Sequence[str]) -> StructType:
    """``message_id``, ``subscriber_id`` and the ``carry`` columns with their types in
    ``messages``: what a strategy's Arrow function returns."""
    from pyspark.sql.types import StringType, StructField, StructType

    fields = [StructField(name, StringType()) for name in OUTPUT_COLUMNS]
    fields += [messages.schema[name] for name in carry]
    return StructType(fields)


@dataclass(frozen=True, slots=True)
class Conformed:
    """Inputs under the contract's names, and how to give the deliveries their names back.

    ``messages``: ``id``, ``topics``, ``private`` (false when absent or null), ``_file`` and
    the carried columns as ``_carry_0``...; ``subscriptions``: ``subscriber_id``,
    ``topics``, ``allowed`` (null when absent).
    """

    messages: DataFrame
    subscriptions: DataFrame
    carry: tuple[str, ...]  # the carried columns' inside names
    carried: tuple[str, ...]  # ... and their own
    names: dict[str, dict[str, str]]  # per source: contract column -> the input's

    def named(self, deliveries: DataFrame) -> DataFrame:
        """``deliveries`` with the carried columns under their own names."""
        from pyspark.sql import functions as F

        if not self.carry:
            return deliveries
        carried = (F.col(i).alias(n) for i, n in zip(self.carry, self.carried, strict=True))
        return deliveries.select(*OUTPUT_COLUMNS, *carried)


def contract_columns(df: DataFrame, source: str, names: dict[str, str]) -> list[Column]:
    """The contract columns of ``df`` under the contract's names; a missing required one, or
    an optional one named explicitly but absent, is refused with the columns ``df`` has."""
    from pyspark.sql import functions as F

    wanted = [
        field
        for field, name in names.items()
        if name not in df.columns and (field not in _OPTIONAL or name != field)
    ]
    if wanted:
        missing = [names[field] for field in wanted]
        raise MalformedInput(
            f"{source}: missing column(s) {', '.join(missing)}; found {', '.join(df.columns)}",
            source=source,
            column=missing[0],
        )
    columns: list[Column] = []
    for field, name in names.items():
        present = name in df.columns
        column = F.col(f"`{name}`") if present else F.lit(None).cast(_OPTIONAL[field])
        if field == "private":
            column = F.coalesce(column, F.lit(False))
        columns.append(column.alias(field))
    return columns


def _file_column(messages: DataFrame) -> Column:
    """Each row's file, for error reports: Spark's ``input_file_name`` where the plan allows
    it (not above a join), else null."""
    from pyspark.errors import PySparkException
    from pyspark.sql import functions as F

    try:
        messages.select(F.input_file_name()).schema  # noqa: B018 -- analysis, no job
    except PySparkException:  # input_file_name over several sources
        return F.lit(None).cast("string")
    return F.input_file_name()


def conform(
    messages: DataFrame,
    subscriptions: DataFrame,
    *,
    message_columns: Mapping[str, str] | None = None,
    subscription_columns: Mapping[str, str] | None = None,
    carry: Sequence[str] = (),
    check_ids: bool = True,
) -> Conformed:
    """The inputs under the contract's names, carried columns alongside, message ids unique.

    A message id on several rows fails the job naming it (``MalformedInput``, raised where
    Spark meets the second row): a delivery is one (message, subscriber) pair, and two
    different messages under one id cannot be told apart in the output. The check
    shuffles the messages by id once (not the deliveries); ``check_ids=False`` skips it, and
    a streaming DataFrame is not checked (that would need state across micro-batches).
    """
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    names = {
        "messages": column_names(message_columns, "messages"),
        "subscriptions": column_names(subscription_columns, "subscriptions"),
    }
    carried = check_carry(carry, messages)
    inside = tuple(f"_carry_{i}" for i in range(len(carried)))
    file = _file_column(messages)
    picked = messages.select(
        *contract_columns(messages, "messages", names["messages"]),
        file.alias("_file"),
        *(F.col(f"`{own}`").alias(name) for own, name in zip(carried, inside, strict=True)),
    )
    if check_ids and not messages.isStreaming:
        picked = picked.withColumn("_copies", F.count(F.lit(1)).over(Window.partitionBy("id")))
        copies = F.col("_copies")
        problem = F.when(
            F.col("id").isNotNull() & (copies > 1),
            F.format_string("id '%s' is on %d rows; message ids must be unique", "id", copies),
        )
        checked_id = failing(
            F.col("id"),
            problem,
            "messages",
            row=F.col("id"),
            column=F.lit(names["messages"]["id"]),
            file=F.col("_file"),
        )
        picked = picked.select(checked_id.alias("id"), *picked.columns[1:-1])
    return Conformed(
        messages=picked,
        subscriptions=subscriptions.select(
            *contract_columns(subscriptions, "subscriptions", names["subscriptions"])
        ),
        carry=inside,
        carried=carried,
        names=names,
    )


def duplicates_reported(checked: DataFrame) -> DataFrame:
    """``checked`` messages with each valid row whose id is on several rows made an error:
    the deliveries could not tell those messages apart. One shuffle of the messages by id."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    copies = F.count(F.lit(1)).over(Window.partitionBy("id"))
    counted = checked.withColumn("_copies", copies)
    duplicate = F.col("_error").isNull() & F.col("id").isNotNull() & (F.col("_copies") > 1)
    reason = F.format_string("id '%s' is on %d rows; message ids must be unique", "id", "_copies")
    record = F.to_json(F.struct("id", "topics", "private"))
    return counted.select(
        *(F.col(f"`{c}`") for c in checked.columns if c not in ("_error", "_record")),
        F.when(duplicate, reason).otherwise(F.col("_error")).alias("_error"),
        F.when(duplicate, record).otherwise(F.col("_record")).alias("_record"),
    )


def reader_carry(carry: Sequence[str], source: str) -> tuple[str, ...]:
    """``carry`` for a reader: columns kept beside the contract's (messages only), none
    named like a column the checked rows already have."""
    names = check_carry(carry)
    if names and source != "messages":
        raise ValueError("carry: only message columns are carried to the deliveries")
    taken = [n for n in names if n in ("id", "topics", "private", "_error", "_file", "_record")]
    if taken:
        raise ValueError(
            f"carry cannot keep {', '.join(taken)} beside the contract's columns; name the "
            "input's own columns with columns={...} instead"
        )
    return names
