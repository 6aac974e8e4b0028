"""One exception for a row that breaks the data contract, wherever Spark meets it.

A bad row can be found on the driver (a broadcast's subscriptions are checked there), in a
Python worker (broadcast and sharded routing) or in the JVM (the ``sql`` strategy's
``raise_error``). Spark reports the last two as its own exception types, with the worker's
or the JVM's message inside. So every place that refuses a row writes the same marker,
``[skipfilter.MalformedInput {json}]``, into its message, and :func:`malformed_rows` turns
any Spark failure carrying one back into :class:`MalformedInput`, with the row's
``source``, ``file``, ``row`` (its id) and ``column``.

Contents: :class:`MalformedInput`, :func:`malformed_rows`, :func:`failing`, :func:`column_of`,
:func:`renamed`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from skipfilter.errors import SkipFilterError

if TYPE_CHECKING:
    from pyspark.sql import Column

__all__ = ["MalformedInput", "column_of", "failing", "malformed_rows", "renamed"]

_MARKER = "[skipfilter.MalformedInput "
_FIELD = re.compile(r"(?:missing )?([A-Za-z_][A-Za-z0-9_]*)")
_FIELDS = ("source", "file", "row", "column", "reason")


class MalformedInput(SkipFilterError, ValueError):
    """Input rows or columns that break the data contract; the message names them and where.

    For one bad row, ``source`` (messages/subscriptions), ``file`` (None when the row did
    not come from a file), ``row`` (its id, when it has a usable one), ``column`` (the
    input's own column name) and ``reason`` say which and why.
    """

    def __init__(
        self,
        message: str,
        *,
        source: str | None = None,
        file: str | None = None,
        row: str | None = None,
        column: str | None = None,
        reason: str | None = None,
    ) -> None:
        super().__init__(message)
        self.source = source
        self.file = file or None
        self.row = row
        self.column = column
        self.reason = reason

    @classmethod
    def for_row(
        cls,
        source: str,
        reason: str,
        *,
        row: str | None,
        file: str | None = None,
        names: Mapping[str, str] | None = None,
    ) -> MalformedInput:
        """The error of one bad row; its column is the field ``reason`` starts with, as the
        input names it (``names``: contract name -> the input's)."""
        field = column_of(reason)
        column = (names or {}).get(field, field) if field is not None else None
        reason = renamed(reason, names)
        return cls(
            _describe(source, file, row, column, reason),
            source=source,
            file=file,
            row=row,
            column=column,
            reason=reason,
        )

    @classmethod
    def of_rows(
        cls,
        source: str,
        bad: Sequence[tuple[str | None, str]],
        names: Mapping[str, str] | None = None,
        shown: int = 5,
    ) -> MalformedInput:
        """The error of several bad rows, ``(id, reason)`` each: the first one's fields, and
        up to ``shown`` of them in the message."""
        first = cls.for_row(source, bad[0][1], row=bad[0][0], names=names)
        if len(bad) == 1:
            return first
        listed = "; ".join(
            str(cls.for_row(source, r, row=i, names=names)).removeprefix(f"{source}: ")
            for i, r in bad[:shown]
        )
        fields = {name: getattr(first, name) for name in _FIELDS}
        return cls(f"{source}: {len(bad)} malformed row(s): {listed}", **fields)

    def encoded(self) -> str:
        """The message with the marker that :func:`malformed_rows` finds again."""
        fields = {name: getattr(self, name) for name in _FIELDS}
        return f"{self} {_MARKER}{json.dumps(fields, sort_keys=True)}]"

    def marked(self) -> MalformedInput:
        """This error with :meth:`encoded` as its message: what a Python worker raises."""
        fields = {name: getattr(self, name) for name in _FIELDS}
        return MalformedInput(self.encoded(), **fields)

    @classmethod
    def found_in(cls, error: BaseException) -> MalformedInput | None:
        """The MalformedInput whose marker ``error``'s message (or a cause's) carries, if any."""
        seen: BaseException | None = error
        while seen is not None:
            if isinstance(seen, MalformedInput):
                readable = str(seen).split(f" {_MARKER}", 1)[0]  # a marked one, unmarked
                own = {name: getattr(seen, name) for name in _FIELDS}
                return seen if readable == str(seen) else cls(readable, **own)
            fields = _decoded(str(seen))
            if fields is not None:
                return cls(_describe(**fields), **fields)
            seen = seen.__cause__
        return None


def _decoded(text: str) -> dict[str, Any] | None:
    """The fields of the first marker in ``text`` (JSON decoded in place: a reason may hold
    brackets), or None."""
    start = text.find(_MARKER)
    if start < 0:
        return None
    try:
        fields, _ = json.JSONDecoder().raw_decode(text, start + len(_MARKER))
    except ValueError:
        return None
    if not isinstance(fields, dict):
        return None
    return {name: fields.get(name) for name in _FIELDS}


def _describe(
    source: str | None, file: str | None, row: str | None, column: str | None, reason: str | None
) -> str:
    where = [f"file {file}"] if file else []
    where += [f"row id={row!r}"] if row is not None else ["row without a usable id"]
    where += [f"column {column}"] if column else []
    return f"{source}: {', '.join(where)}: {reason}"


def column_of(reason: str) -> str | None:
    """The contract field a reason is about (``topics[1]: ...`` -> ``topics``), or None."""
    match = _FIELD.match(reason)
    if match is None or match.group(1) in ("invalid", "row"):  # invalid JSON, row is not ...
        return None
    return match.group(1)


def renamed(reason: str, names: Mapping[str, str] | None) -> str:
    """``reason`` naming the input's own column where it starts with a contract column
    (``missing id`` -> ``missing event_id``, ``topics[1]: ...`` -> ``tags[1]: ...``).

    >>> renamed("topics[1] must be a string", {"topics": "tags"})
    'tags[1] must be a string'
    """
    field = column_of(reason)
    own = (names or {}).get(field or "")
    if field is None or own is None or own == field:
        return reason
    head = "missing " if reason.startswith("missing ") else ""
    return head + own + reason[len(head) + len(field) :]


@contextmanager
def malformed_rows() -> Iterator[None]:
    """Raise :class:`MalformedInput` for a Spark failure caused by a bad row, whatever the
    strategy; other failures pass unchanged. Wrap the action (``collect``, ``write``...)::

        with malformed_rows():
            route(messages, subscriptions, "sql").write.parquet("deliveries/")
    """
    try:
        yield
    except Exception as error:
        found = MalformedInput.found_in(error)
        if found is None or found is error:
            raise
        raise found from error


def failing(
    value: Column,
    problem: Column,
    source: str,
    row: Column,
    column: Column,
    file: Column | None = None,
) -> Column:
    """``value``, or (when ``problem`` is not null) a task failure carrying the marker: the
    JVM-side twin of raising :meth:`MalformedInput.encoded` in a Python worker."""
    from pyspark.sql import functions as F

    file = F.lit(None).cast("string") if file is None else F.nullif(file, F.lit(""))
    fields = F.to_json(
        F.struct(
            column.alias("column"),
            file.alias("file"),
            problem.alias("reason"),
            row.alias("row"),
            F.lit(source).alias("source"),
        ),
        {"ignoreNullFields": "false"},
    )
    where = F.concat_ws(  # as _describe writes it; a null part is left out
        ", ",
        F.concat(F.lit("file "), file),
        F.when(row.isNull(), F.lit("row without a usable id")).otherwise(
            F.concat(F.lit("row id='"), row, F.lit("'"))
        ),
        F.concat(F.lit("column "), column),
    )
    readable = F.concat(F.lit(f"{source}: "), where, F.lit(": "), problem)
    message = F.concat(readable, F.lit(f" {_MARKER}"), fields, F.lit("]"))
    return F.when(problem.isNull(), value).otherwise(F.raise_error(message))
