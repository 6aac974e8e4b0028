"""The data contract of the Spark jobs: column schemas, row checks, and readers that keep bad rows.

Users hand the jobs whatever their logs hold, so every row is checked before it is
routed, and a row that breaks the contract is *reported* -- with its file, its id and
the raw record -- instead of being dropped or crashing a job three hours in.

Contents:

- :data:`MESSAGES`, :data:`SUBSCRIPTIONS`, :data:`DELIVERIES`, :data:`ERRORS` -- the schemas;
  :data:`MATCHER`, :func:`subscriptions_schema`, :func:`typed_selectors`, :func:`as_selector` --
  the ``urlpattern`` syntax's typed selectors (Mercure 1.0's ``{"match", "match_type"}``).
- :func:`message_problem`, :func:`subscription_problem` -- what is wrong with one row.
- :func:`check_messages`, :func:`check_subscriptions` -- a DataFrame -> :class:`Checked`.
- :func:`check_json_lines` -- JSON-lines text (batch or streaming) -> :class:`Checked`.
- :func:`read_messages`, :func:`read_subscriptions` -- Parquet or JSON lines -> :class:`Checked`.
- :func:`infer_format` -- "parquet" or "json" from a path.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pyarrow as pa  # type: ignore[import-untyped]

from skipfilter.errors import SkipFilterError
from skipfilter.selectors import TypedSelector, compile_selector, selector_type, topic_problem

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

__all__ = [
    "DELIVERIES",
    "ERRORS",
    "MATCHER",
    "MESSAGES",
    "SUBSCRIPTIONS",
    "TYPED_SYNTAX",
    "Checked",
    "MalformedInput",
    "as_selector",
    "check_json_lines",
    "check_messages",
    "check_subscriptions",
    "infer_format",
    "message_problem",
    "read_messages",
    "read_subscriptions",
    "subscription_problem",
    "subscriptions_schema",
    "typed_selectors",
]

MESSAGES = "id string, topics array<string>, private boolean"
SUBSCRIPTIONS = "subscriber_id string, topics array<string>, allowed array<string>"
DELIVERIES = "message_id string, subscriber_id string"
ERRORS = "source string, file string, row_id string, reason string, record string"
#: A typed selector, as Mercure 1.0's authorization details write it: ``match_type`` is
#: ``exact`` (the default when missing or null) or ``urlpattern``.
MATCHER = "struct<match:string,match_type:string>"
#: The syntax whose subscriptions hold typed selectors: Mercure 1.0's exact and URL Pattern
#: matchers. A plain string there is a URL Pattern, normalized to ``match_type`` urlpattern.
TYPED_SYNTAX = "urlpattern"


def subscriptions_schema(syntax: str) -> str:
    """The subscriptions schema of ``syntax``: :data:`SUBSCRIPTIONS`, or for ``urlpattern``
    the same with arrays of :data:`MATCHER` (typed selectors)."""
    if syntax == TYPED_SYNTAX:
        return f"subscriber_id string, topics array<{MATCHER}>, allowed array<{MATCHER}>"
    return SUBSCRIPTIONS


def _checked_schema(source: str, syntax: str) -> str:
    columns = MESSAGES if source == "messages" else subscriptions_schema(syntax)
    return f"{columns}, _error string, _file string, _record string"


_ID = {"messages": "id", "subscriptions": "subscriber_id"}
SUBSCRIPTIONS_FIELDS = ("subscriber_id", "topics", "allowed")
_RECORD_LIMIT = 1000  # characters of a bad row kept in the error output
FORMATS = ("parquet", "json")


class MalformedInput(SkipFilterError, ValueError):
    """Input rows or columns that break the data contract; the message names them and where."""


@dataclass(frozen=True, slots=True)
class Checked:
    """An input split into the rows that keep the contract and reports of those that do not.

    Both are lazy DataFrames over the same input; ``errors`` has the :data:`ERRORS` schema.
    """

    valid: DataFrame
    errors: DataFrame


def _kind(value: object) -> str:
    return "null" if value is None else type(value).__name__


def _strings(value: object, field: str, typed: bool = False) -> str | None:
    """Problem with a non-empty array of strings (``typed``: of strings and typed selector
    objects), or None."""
    if value is None:
        return f"missing {field}"
    if not isinstance(value, list | tuple):
        return f"{field} must be an array of strings, got {_kind(value)}: {value!r:.80}"
    if not value:
        return f"{field} is empty"
    for i, item in enumerate(value):
        if typed and isinstance(item, Mapping):
            problem = _matcher_problem(item)
            if problem is not None:
                return f"{field}[{i}]: {problem}"
        elif not isinstance(item, str):
            wanted = "a string or a {match, match_type} object" if typed else "a string"
            return f"{field}[{i}] must be {wanted}, got {_kind(item)}: {item!r:.80}"
    return None


def _matcher_problem(item: Mapping[str, Any]) -> str | None:
    """Problem with a typed selector object, or None."""
    extra = sorted(set(item) - {"match", "match_type"})
    if extra:
        return f"unknown key(s) {', '.join(map(repr, extra))} in {dict(item)!r:.80}"
    if not isinstance(item.get("match"), str):
        return f"match must be a string, got {_kind(item.get('match'))}"
    if not isinstance(item.get("match_type"), str | None):
        return f"match_type must be a string, got {_kind(item.get('match_type'))}"
    return None


def as_selector(entry: str | Mapping[str, Any]) -> str | TypedSelector:
    """One selector of a subscription row as TopicIndex takes it: a string as it is, a
    ``{"match", "match_type"}`` object (``match_type`` missing or null: ``exact``) typed.

    >>> as_selector({"match": "https://example.com/books/:id", "match_type": "urlpattern"})
    TypedSelector(text='https://example.com/books/:id', syntax='urlpattern')
    """
    if isinstance(entry, str):
        return entry
    return TypedSelector(entry["match"], entry.get("match_type") or "exact")


def _id_problem(value: object, field: str) -> str | None:
    if value is None:
        return f"missing {field}"
    if not isinstance(value, str) or not value:
        return f"{field} must be a non-empty string, got {_kind(value)}: {value!r:.80}"
    return None


def message_problem(row: Mapping[str, Any], syntax: str = "mercure") -> str | None:
    """What makes ``row`` an invalid message (``id``, ``topics``, ``private``), or None;
    its topics must be publishable in ``syntax`` (no MQTT ``a/+``, no NATS ``a..b``).

    >>> message_problem({"id": "m1", "topics": []})
    'topics is empty'
    >>> message_problem({"id": "m1", "topics": ["a/b", "a/+"]}, "mqtt")
    "topics[1]: '+' at column 3 in 'a/+': a topic name has no wildcards"
    """
    problem = _id_problem(row.get("id"), "id") or _strings(row.get("topics"), "topics")
    if problem is None and syntax in ("nats", "mqtt"):
        for i, topic in enumerate(row["topics"]):
            refused = topic_problem(syntax, topic)
            if refused is not None:
                return f"topics[{i}]: {refused}"
    if problem is None and not isinstance(row.get("private"), bool | None):
        problem = f"private must be a boolean, got {_kind(row['private'])}: {row['private']!r:.80}"
    return problem


def _selectors_problem(value: object, field: str, syntax: str) -> str | None:
    problem = _strings(value, field, typed=syntax == TYPED_SYNTAX)
    if problem is None and syntax != "mercure":  # a Mercure selector that is no template is raw
        assert isinstance(value, list | tuple)
        for i, entry in enumerate(value):
            try:
                text, kind = selector_type(as_selector(entry), syntax, f"{field}[{i}]")
                compile_selector(text, kind)
            except ValueError as error:  # InvalidSelector, or an unknown match_type
                return f"{field}[{i}]: {error}"
    return problem


def subscription_problem(row: Mapping[str, Any], syntax: str = "mercure") -> str | None:
    """What makes ``row`` an invalid subscription, or None; selectors must compile in ``syntax``.

    ``allowed`` may be missing or null (no private updates) or empty, not malformed.

    >>> subscription_problem({"subscriber_id": "s", "topics": ["a.>.b"]}, "nats")
    "topics[0]: '>' must be the last token at column 3 in 'a.>.b'"
    """
    problem = _id_problem(row.get("subscriber_id"), "subscriber_id") or _selectors_problem(
        row.get("topics"), "topics", syntax
    )
    allowed = row.get("allowed")
    if problem is None and allowed is not None and allowed != []:
        problem = _selectors_problem(allowed, "allowed", syntax)
    return problem


def _checker(source: str, syntax: str) -> Callable[[Mapping[str, Any]], str | None]:
    if source == "messages":
        return lambda row: message_problem(row, syntax)
    return lambda row: subscription_problem(row, syntax)


def _checked_batches(
    batches: Iterator[pa.RecordBatch], source: str, syntax: str, text: bool
) -> Iterator[pa.RecordBatch]:
    """Check rows (parsing JSON lines first when ``text``) into the checked schema of ``source``."""
    problem_of = _checker(source, syntax)
    fields = ["id", "topics", "private"] if source == "messages" else list(SUBSCRIPTIONS_FIELDS)
    typed = source == "subscriptions" and syntax == TYPED_SYNTAX
    schema = _arrow(source, syntax)
    for batch in batches:
        files = batch.column("_file").to_pylist()
        if text:
            raw_rows: list[Any] = batch.column("value").to_pylist()
        else:
            raw_rows = batch.drop_columns(["_file"]).to_pylist()
        out: dict[str, list[Any]] = {name: [] for name in [*fields, "_error", "_file", "_record"]}
        for raw, file in zip(raw_rows, files, strict=True):
            problem: str | None = None
            row: Any = raw
            if text:
                if not raw or raw.isspace():
                    continue  # a blank line is no row
                try:
                    row = json.loads(raw)
                except ValueError as error:
                    row, problem = None, f"invalid JSON: {error}"
                else:
                    problem = None if isinstance(row, dict) else "row is not a JSON object"
                record = raw
            else:
                record = json.dumps(raw, default=str)
            if problem is None:
                assert isinstance(row, dict)
                problem = problem_of(row)
            good = problem is None
            for name in fields:
                value = row.get(name) if isinstance(row, dict) else None
                if good and typed and name in ("topics", "allowed") and value is not None:
                    value = [_matcher_row(entry) for entry in value]
                out[name].append(value if good else _scalar_or_none(name, value))
            if good and source == "messages" and out["private"][-1] is None:
                out["private"][-1] = False
            out["_error"].append(problem)
            out["_file"].append(file or "")
            out["_record"].append(None if good else record[:_RECORD_LIMIT])
        yield pa.RecordBatch.from_pydict(out, schema=schema)


def _scalar_or_none(name: str, value: object) -> object:
    """Keep a bad row's id for its report when it is a string; drop anything untyped."""
    return value if name in ("id", "subscriber_id") and isinstance(value, str) else None


def _matcher_row(entry: str | Mapping[str, Any]) -> dict[str, str]:
    """A valid typed-syntax selector as a :data:`MATCHER` row (a string is a URL Pattern)."""
    if isinstance(entry, str):
        return {"match": entry, "match_type": TYPED_SYNTAX}
    return {"match": entry["match"], "match_type": entry.get("match_type") or "exact"}


_MATCHER_ARROW = pa.struct([("match", pa.string()), ("match_type", pa.string())])


def _arrow(source: str, syntax: str) -> pa.Schema:
    """The Arrow schema of checked rows of ``source`` in ``syntax``."""
    if source == "messages":
        head = [("id", pa.string()), ("topics", pa.list_(pa.string())), ("private", pa.bool_())]
    else:
        entry = _MATCHER_ARROW if syntax == TYPED_SYNTAX else pa.string()
        head = [
            ("subscriber_id", pa.string()),
            ("topics", pa.list_(entry)),
            ("allowed", pa.list_(entry)),
        ]
    tail = [("_error", pa.string()), ("_file", pa.string()), ("_record", pa.string())]
    return pa.schema(head + tail)


def _split(checked: DataFrame, source: str) -> Checked:
    from pyspark.sql import functions as F

    names = ["id", "topics", "private"] if source == "messages" else list(SUBSCRIPTIONS_FIELDS)
    valid = checked.where(F.col("_error").isNull()).select(*names)
    errors = checked.where(F.col("_error").isNotNull()).select(
        F.lit(source).alias("source"),
        F.col("_file").alias("file"),
        F.col(_ID[source]).alias("row_id"),
        F.col("_error").alias("reason"),
        F.col("_record").alias("record"),
    )
    return Checked(valid, errors)


def _check(df: DataFrame, source: str, syntax: str, text: bool) -> Checked:
    def check(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        return _checked_batches(batches, source, syntax, text)

    return _split(df.mapInArrow(check, _checked_schema(source, syntax)), source)


def _typed(df: DataFrame, source: str, file: Any, syntax: str = "mercure") -> DataFrame:
    """The contract columns of a typed DataFrame plus ``_file``; a missing column is an error.

    Subscriptions in the typed syntax get their selectors as :func:`typed_selectors`."""
    from pyspark.sql import functions as F

    required = ["id", "topics"] if source == "messages" else ["subscriber_id", "topics"]
    optional = ["private"] if source == "messages" else ["allowed"]
    missing = [name for name in required if name not in df.columns]
    if missing:
        raise MalformedInput(
            f"{source}: missing column(s) {', '.join(missing)}; found {', '.join(df.columns)}"
        )
    if source == "subscriptions" and syntax == TYPED_SYNTAX:
        return typed_selectors(df).select(*required, *optional, file.alias("_file"))
    columns = [F.col(name) for name in required]
    types = {"private": "boolean", "allowed": "array<string>"}
    columns += [
        F.col(n) if n in df.columns else F.lit(None).cast(types[n]).alias(n) for n in optional
    ]
    return df.select(*columns, file.alias("_file"))


def typed_selectors(subscriptions: DataFrame) -> DataFrame:
    """``subscriptions`` with ``topics`` and ``allowed`` as arrays of :data:`MATCHER`.

    An array of strings holds URL Patterns (``match_type`` urlpattern); in an array of
    structs, a null ``match_type`` is exact (Mercure 1.0's default); a missing ``allowed``
    column is null (no private updates).
    """
    from pyspark.sql import functions as F
    from pyspark.sql.types import ArrayType, StringType

    columns = []
    for name in ("topics", "allowed"):
        if name not in subscriptions.columns:
            columns.append(F.lit(None).cast(f"array<{MATCHER}>").alias(name))
            continue
        kind = subscriptions.schema[name].dataType
        if isinstance(kind, ArrayType) and isinstance(kind.elementType, StringType):
            entries = F.transform(
                name, lambda s: F.struct(s.alias("match"), F.lit(TYPED_SYNTAX).alias("match_type"))
            )
        else:
            entries = F.transform(
                name,
                lambda m: F.struct(
                    m["match"].alias("match"),
                    F.coalesce(m["match_type"], F.lit("exact")).alias("match_type"),
                ),
            )
        typed = F.when(F.col(name).isNotNull(), entries).cast(f"array<{MATCHER}>")
        columns.append(typed.alias(name))
    others = [c for c in subscriptions.columns if c not in ("topics", "allowed")]
    return subscriptions.select(*others, *columns)


def check_messages(messages: DataFrame) -> Checked:
    """Split messages (columns ``id``, ``topics``, optional ``private``) by the contract.

    Runtime: one Python pass over the rows, lazily, each time ``valid`` or ``errors`` runs.
    """
    from pyspark.sql import functions as F

    return _check(_typed(messages, "messages", F.lit("")), "messages", "mercure", text=False)


def check_subscriptions(subscriptions: DataFrame, syntax: str = "mercure") -> Checked:
    """Split a subscriptions DataFrame by the contract; selectors must compile in ``syntax``."""
    from pyspark.sql import functions as F

    typed = _typed(subscriptions, "subscriptions", F.lit(""), syntax)
    return _check(typed, "subscriptions", syntax, text=False)


def check_json_lines(lines: DataFrame, source: str, syntax: str = "mercure") -> Checked:
    """Parse and split JSON-lines text (columns ``value`` and ``_file``, as from a text source).

    ``source`` is "messages" or "subscriptions". Works on streaming DataFrames too.
    """
    if source not in _ID:
        raise ValueError(f"source must be 'messages' or 'subscriptions', got {source!r}")
    return _check(lines, source, syntax, text=True)


def infer_format(path: str) -> str:
    """``"parquet"`` or ``"json"`` from a file's extension or the files in a directory."""
    names = [path]
    if os.path.isdir(path):
        names = sorted(name for name in os.listdir(path) if not name.startswith((".", "_")))
    for name in names:
        lowered = name.lower()
        if lowered.endswith(".parquet"):
            return "parquet"
        if lowered.endswith((".json", ".jsonl", ".ndjson", ".json.gz", ".jsonl.gz")):
            return "json"
    raise MalformedInput(
        f"cannot tell the format of {path!r} (no .parquet/.json/.jsonl/.ndjson file); "
        "pass --format parquet|json"
    )


def _read(spark: SparkSession, path: str, source: str, syntax: str, fmt: str | None) -> Checked:
    from pyspark.sql import functions as F

    fmt = fmt or infer_format(path)
    if fmt == "json":  # parse in Python: a type error is a bad row, not a null or a string
        raw = spark.read.text(path).select("value", F.input_file_name().alias("_file"))
        return _check(raw, source, syntax, text=True)
    if fmt != "parquet":
        raise ValueError(f"unknown format {fmt!r}; expected one of {', '.join(FORMATS)}")
    typed = _typed(spark.read.parquet(path), source, F.input_file_name(), syntax)
    return _check(typed, source, syntax, text=False)


def read_messages(spark: SparkSession, path: str, fmt: str | None = None) -> Checked:
    """Read messages from Parquet or JSON lines (``fmt`` inferred from ``path`` when None)."""
    return _read(spark, path, "messages", "mercure", fmt)


def read_subscriptions(
    spark: SparkSession, path: str, syntax: str = "mercure", fmt: str | None = None
) -> Checked:
    """Read subscriptions from Parquet or JSON lines; selectors must compile in ``syntax``."""
    return _read(spark, path, "subscriptions", syntax, fmt)
