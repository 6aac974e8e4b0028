"""MalformedInput's marker survives Spark's wrapping whatever the row holds; JSON lines as
bytes (no Spark here: the parts the Spark tests rely on, checked exhaustively)."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from skipfilter.spark.lines import as_text, parse_line
from skipfilter.spark.malformed import MalformedInput, column_of, malformed_rows, renamed

texts = st.text(max_size=40)


@given(
    source=st.sampled_from(["messages", "subscriptions"]),
    file=st.none() | texts,
    row=st.none() | texts,
    reason=texts,
    before=texts,
    after=texts,
)
def test_marker_round_trips_inside_any_message(
    source: str, file: str | None, row: str | None, reason: str, before: str, after: str
) -> None:
    """Ids and reasons may hold brackets, quotes and the marker's own braces."""
    error = MalformedInput.for_row(source, reason, row=row, file=file).marked()
    wrapped = RuntimeError(f"{before}[Task failed] {error}\n{after} {error}")
    found = MalformedInput.found_in(wrapped)
    assert found is not None
    assert (found.source, found.file, found.row, found.reason) == (
        source,
        file or None,
        row,
        reason,
    )
    assert found.column == error.column


def test_found_in_follows_causes_and_misses_nothing_else() -> None:
    inner = MalformedInput.for_row("messages", "topics is empty", row="m2").marked()
    outer = RuntimeError("job aborted")
    outer.__cause__ = ValueError(str(inner))
    found = MalformedInput.found_in(outer)
    assert found is not None and found.row == "m2" and found.column == "topics"
    assert MalformedInput.found_in(RuntimeError("[skipfilter.MalformedInput {broken")) is None
    assert MalformedInput.found_in(RuntimeError("no marker")) is None


def test_malformed_rows_raises_the_row_not_the_wrapper() -> None:
    marked = MalformedInput.for_row("subscriptions", "allowed holds a null", row="s1").marked()
    with pytest.raises(MalformedInput) as info, malformed_rows():
        raise RuntimeError(f"Py4JJavaError: {marked}")
    assert (info.value.source, info.value.row, info.value.column) == (
        "subscriptions",
        "s1",
        "allowed",
    )
    assert "[skipfilter.MalformedInput" not in str(info.value)  # the readable part only
    assert isinstance(info.value.__cause__, RuntimeError)


@pytest.mark.parametrize(
    ("reason", "field", "theirs"),
    [
        ("missing id", "id", "missing event_id"),
        (
            "topics[1] must be a string, got int: 3",
            "topics",
            "tags[1] must be a string, got int: 3",
        ),
        ("private must be a boolean", "private", "private must be a boolean"),
        ("invalid JSON: Expecting value", None, "invalid JSON: Expecting value"),
        ("row is not a JSON object", None, "row is not a JSON object"),
    ],
)
def test_reasons_name_their_columns(reason: str, field: str | None, theirs: str) -> None:
    assert column_of(reason) == field
    assert renamed(reason, {"id": "event_id", "topics": "tags"}) == theirs


@given(st.dictionaries(st.text(max_size=5), st.text(max_size=8), max_size=3))
def test_utf8_lines_parse_as_json_does(row: dict[str, str]) -> None:
    line = json.dumps(row, ensure_ascii=False)
    assert parse_line(line.encode()) == (row, None, line)
    assert parse_line(line) == (row, None, line)


@given(st.binary(min_size=1, max_size=30))
def test_any_bytes_are_a_row_or_its_error_never_a_crash(raw: bytes) -> None:
    parsed = parse_line(raw)
    if parsed is None:  # a blank line, as str.isspace has it (as the text reader's did)
        assert raw.decode("utf-8").isspace()
        return
    row, problem, record = parsed
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        assert problem is not None and problem.startswith("not UTF-8: byte 0x")
        assert record == raw.decode("utf-8", "backslashreplace")  # every byte, lossless
    else:
        assert record == text
        assert (problem is None) == isinstance(row, dict)


def test_carried_json_fields_as_text() -> None:
    assert [as_text(v) for v in ("a", 3, 1.5, True, None, {"b": 1})] == [
        "a",
        "3",
        "1.5",
        "true",
        None,
        '{"b": 1}',
    ]


def test_a_marked_error_raised_on_the_driver_reads_plainly() -> None:
    """Where the driver itself checks (a stream's subscriptions), the marker is not shown."""
    marked = MalformedInput.of_rows("subscriptions", [("s1", "missing topics"), ("s2", "x")])
    with pytest.raises(MalformedInput) as info, malformed_rows():
        raise marked.marked()
    assert str(info.value) == str(marked) and info.value.row == "s1"
    plain = MalformedInput("messages: missing column(s) id; found x")
    with pytest.raises(MalformedInput) as info, malformed_rows():
        raise plain
    assert info.value is plain and info.value.__cause__ is None
