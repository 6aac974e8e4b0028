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
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pyarrow as pa  # type: ignore[import-untyped]

from skipfilter.selectors import TypedSelector, compile_selector, selector_type, topic_problem
from skipfilter.spark.columns import duplicates_reported, reader_carry
from skipfilter.spark.formats import detect_format
from skipfilter.spark.lines import as_text, parse_line
from skipfilter.spark.malformed import MalformedInput, renamed

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


def _checked_schema(source: str, syntax: str, carry: Sequence[tuple[str, str]] = ()) -> str:
    """The checked rows' DDL: the contract's columns, the report's, then ``carry``'s
    ``(name, type)`` pairs."""
    columns = MESSAGES if source == "messages" else subscriptions_schema(syntax)
    carried = "".join(f", `{name}` {kind}" for name, kind in carry)
    return f"{columns}, _error string, _file string, _record string{carried}"


_ID = {"messages": "id", "subscriptions": "subscriber_id"}
SUBSCRIPTIONS_FIELDS = ("subscriber_id", "topics", "allowed")
_RECORD_LIMIT = 1000  # characters of a bad row kept in the error output
FORMATS = ("parquet", "json")


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
    batches: Iterator[pa.RecordBatch],
    source: str,
    syntax: str,
    text: bool,
    *,
    names: Mapping[str, str] | None = None,
    carry: Sequence[str] = (),
) -> Iterator[pa.RecordBatch]:
    """Check rows (parsing JSON lines, text or bytes, first when ``text``) into the checked
    schema of ``source``. ``names``: contract column -> the JSON field holding it (reasons
    name the field); ``carry``: fields kept after the report's columns (from JSON, as
    strings: :func:`.lines.as_text`; from typed rows, the batch's own columns)."""
    problem_of = _checker(source, syntax)
    fields = ["id", "topics", "private"] if source == "messages" else list(SUBSCRIPTIONS_FIELDS)
    typed = source == "subscriptions" and syntax == TYPED_SYNTAX
    schema = _arrow(source, syntax)
    for batch in batches:
        files = batch.column("_file").to_pylist()
        if text:
            raw_rows: list[Any] = batch.column("value").to_pylist()
        else:
            raw_rows = batch.drop_columns(["_file", *carry]).to_pylist()
        out: dict[str, list[Any]] = {name: [] for name in [*fields, "_error", "_file", "_record"]}
        carried: list[list[Any]] = [[] for _ in carry]
        for raw, file in zip(raw_rows, files, strict=True):
            problem: str | None = None
            row: Any = raw
            if text:
                parsed = parse_line(raw)
                if parsed is None:
                    continue  # a blank line is no row
                found, problem, record = parsed
                for values, name in zip(carried, carry, strict=True):
                    values.append(as_text(found.get(name)) if isinstance(found, dict) else None)
                row = _contract_row(found, fields, names)
            else:
                record = json.dumps(raw, default=str)
            if problem is None:
                assert isinstance(row, dict)
                problem = _named(problem_of(row), names)
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
        checked = pa.RecordBatch.from_pydict(out, schema=schema)
        if carry:
            extra = [pa.array(v, pa.string()) for v in carried] if text else batch.select(carry)
            checked = pa.RecordBatch.from_arrays(
                [*checked.columns, *extra], names=[*schema.names, *carry]
            )
        yield checked


def _contract_row(row: Any, fields: list[str], names: Mapping[str, str] | None) -> Any:
    """A parsed JSON object with the contract's keys read from its own field names."""
    if names is None or not isinstance(row, dict):
        return row
    return {field: row[names[field]] for field in fields if names[field] in row}


def _named(problem: str | None, names: Mapping[str, str] | None) -> str | None:
    """``problem`` naming the input's own field (:func:`.malformed.renamed`)."""
    return None if problem is None else renamed(problem, names)


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


def _split(checked: DataFrame, source: str, carry: Sequence[str] = ()) -> Checked:
    """``checked`` rows into valid ones and reports; every row of a message id that is on
    several rows is a report too (not checked on a stream: that needs state across
    micro-batches)."""
    from pyspark.sql import functions as F

    names = ["id", "topics", "private"] if source == "messages" else list(SUBSCRIPTIONS_FIELDS)
    carried = [F.col(f"`{name}`") for name in carry]
    if source == "messages" and not checked.isStreaming:
        checked = duplicates_reported(checked)
    valid = checked.where(F.col("_error").isNull()).select(*names, *carried)
    errors = checked.where(F.col("_error").isNotNull()).select(
        F.lit(source).alias("source"),
        F.col("_file").alias("file"),
        F.col(_ID[source]).alias("row_id"),
        F.col("_error").alias("reason"),
        F.col("_record").alias("record"),
    )
    return Checked(valid, errors)


def _check(
    df: DataFrame,
    source: str,
    syntax: str,
    text: bool,
    *,
    names: Mapping[str, str] | None = None,
    carry: Sequence[str] = (),
) -> Checked:
    """Checked rows of ``df`` (JSON-lines ``value`` and ``_file`` when ``text``, else the
    contract's columns, ``_file`` and the carried ones), split into valid rows and reports."""
    carried = tuple(carry)
    if text:
        kinds = [(name, "string") for name in carried]
    else:
        kinds = [(name, df.schema[name].dataType.simpleString()) for name in carried]

    def check(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        return _checked_batches(batches, source, syntax, text, names=names, carry=carried)

    checked = df.mapInArrow(check, _checked_schema(source, syntax, kinds))
    return _split(checked, source, carried)


def _typed(
    df: DataFrame,
    source: str,
    file: Any,
    syntax: str = "mercure",
    *,
    names: Mapping[str, str] | None = None,
    carry: Sequence[str] = (),
) -> DataFrame:
    """The contract columns of a typed DataFrame (found under ``names``, contract -> own),
    ``_file`` and the ``carry`` columns; a missing column is an error.

    Subscriptions in the typed syntax get their selectors as :func:`typed_selectors`."""
    from pyspark.sql import functions as F

    from skipfilter.spark.columns import column_names, contract_columns

    own = column_names(names, source)
    missing = [name for name in carry if name not in df.columns]
    if missing:
        raise MalformedInput(
            f"{source}: no column(s) {', '.join(missing)} to carry; found {', '.join(df.columns)}"
        )
    carried = [F.col(f"`{name}`") for name in carry]
    typed = df.select(*contract_columns(df, source, own), file.alias("_file"), *carried)
    if source == "subscriptions" and syntax == TYPED_SYNTAX:
        return typed_selectors(typed)
    return typed


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


def check_messages(
    messages: DataFrame, *, columns: Mapping[str, str] | None = None, carry: Sequence[str] = ()
) -> Checked:
    """Split messages (columns ``id``, ``topics``, optional ``private``, or those ``columns``
    names: contract -> own) by the contract; ``valid`` has the contract's names and the
    ``carry`` columns.

    Runtime: one Python pass over the rows, lazily, each time ``valid`` or ``errors`` runs.
    """
    from pyspark.sql import functions as F

    carried = reader_carry(carry, "messages")
    typed = _typed(messages, "messages", F.lit(""), names=columns, carry=carried)
    return _check(typed, "messages", "mercure", text=False, carry=carried)


def check_subscriptions(
    subscriptions: DataFrame,
    syntax: str = "mercure",
    *,
    columns: Mapping[str, str] | None = None,
) -> Checked:
    """Split a subscriptions DataFrame by the contract; selectors must compile in ``syntax``."""
    from pyspark.sql import functions as F

    typed = _typed(subscriptions, "subscriptions", F.lit(""), syntax, names=columns)
    return _check(typed, "subscriptions", syntax, text=False)


def check_json_lines(lines: DataFrame, source: str, syntax: str = "mercure") -> Checked:
    """Parse and split JSON-lines text (columns ``value`` and ``_file``, as from a text source).

    ``source`` is "messages" or "subscriptions". Works on streaming DataFrames too.
    """
    if source not in _ID:
        raise ValueError(f"source must be 'messages' or 'subscriptions', got {source!r}")
    return _check(lines, source, syntax, text=True)


def _read(
    spark: SparkSession,
    path: str,
    source: str,
    syntax: str,
    fmt: str | None,
    *,
    columns: Mapping[str, str] | None = None,
    carry: Sequence[str] = (),
) -> Checked:
    """Checked rows of the file(s) at ``path``; JSON lines go to Python as bytes, so a line
    that is not UTF-8 is that row's error (:mod:`.lines`), not the job's."""
    from pyspark.sql import functions as F

    from skipfilter.spark.columns import column_names

    names = column_names(columns, source)
    carried = reader_carry(carry, source)

    if fmt is None:  # asked of Spark: any scheme it reads, extension-less files too
        fmt = detect_format(spark, path)
    if fmt == "json":  # parse in Python: a type error is a bad row, not a null or a string
        raw = spark.read.text(path).select(
            F.col("value").cast("binary").alias("value"), F.input_file_name().alias("_file")
        )
        return _check(raw, source, syntax, text=True, names=names, carry=carried)
    if fmt != "parquet":
        raise ValueError(f"unknown format {fmt!r}; expected one of {', '.join(FORMATS)}")
    typed = _typed(
        spark.read.parquet(path), source, F.input_file_name(), syntax, names=names, carry=carried
    )
    return _check(typed, source, syntax, text=False, carry=carried)


def read_messages(
    spark: SparkSession,
    path: str,
    fmt: str | None = None,
    *,
    columns: Mapping[str, str] | None = None,
    carry: Sequence[str] = (),
) -> Checked:
    """Read messages from Parquet or JSON lines at ``path`` (a local path or any URI Spark
    reads); ``fmt`` detected through Spark when None (:func:`.formats.detect_format`).

    ``columns`` names the input's own columns (contract -> own, as ``route()`` takes them);
    ``valid`` has the contract's names and the ``carry`` columns (from JSON lines as
    strings: a string as it is, anything else as its JSON text)."""
    return _read(spark, path, "messages", "mercure", fmt, columns=columns, carry=carry)


def read_subscriptions(
    spark: SparkSession,
    path: str,
    syntax: str = "mercure",
    fmt: str | None = None,
    *,
    columns: Mapping[str, str] | None = None,
) -> Checked:
    """Read subscriptions from Parquet or JSON lines; selectors must compile in ``syntax``."""
    return _read(spark, path, "subscriptions", syntax, fmt, columns=columns)
