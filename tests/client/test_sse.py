"""The client's event-stream parser against the HTML standard's rules (§9.2.6): a literal,
whole-input reference parser is the oracle, and any split of the bytes into chunks must give
the events, last id and retry the reference gives for the whole."""

from __future__ import annotations

import codecs
import re
import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from skipfilter.client import Event, EventStreamParser, OverLimit
from skipfilter.client.sse import MAX_LINE, RETRY_CAP


def reference(raw: bytes) -> tuple[list[Event], str, int | None]:
    """The standard's algorithm step by step, on the whole stream at once."""
    text = raw.decode("utf-8", "replace")
    if text.startswith("\ufeff"):
        text = text[1:]
    lines, current, i = [], "", 0
    while i < len(text):
        char = text[i]
        if char in "\r\n":
            lines.append(current)
            current = ""
            if char == "\r" and text[i + 1 : i + 2] == "\n":
                i += 1
        else:
            current += char
        i += 1
    # ``current``: a line the stream ended in the middle of, never processed
    data, kind, id_buffer, last_id, retry = "", "", "", "", None
    events = []
    for line in lines:
        if line == "":
            last_id = id_buffer
            if data == "":
                kind = ""
                continue
            if data.endswith("\n"):
                data = data[:-1]
            events.append(Event(data, kind or "message", last_id))
            data, kind = "", ""
            continue
        if line.startswith(":"):
            continue
        if ":" in line:
            field, value = line.split(":", 1)
            if value.startswith(" "):
                value = value[1:]
        else:
            field, value = line, ""
        if field == "event":
            kind = value
        elif field == "data":
            data += value + "\n"
        elif field == "id":
            if "\0" not in value:
                id_buffer = value
        elif field == "retry" and value and all(c in "0123456789" for c in value):
            retry = int(value)
    return events, last_id, retry


def parse(chunks: list[bytes]) -> tuple[list[Event], str, int | None]:
    parser = EventStreamParser()
    events = [event for chunk in chunks for event in parser.feed(chunk)]
    return events, parser.last_event_id, parser.retry


NAMES = st.sampled_from(["data", "event", "id", "retry", "", "dat", "data ", "Data", "x", ":"])
VALUES = st.text(
    alphabet=st.sampled_from(["a", " ", ":", "7", "\0", "é", "\ufeff", "\u2028", "\x85"]),
    max_size=6,
)
ENDS = st.sampled_from(["\n", "\r", "\r\n"])


@st.composite
def streams(draw: st.DrawFn) -> bytes:
    """Field lines, comments, colon-less fields, blank lines, every line end; sometimes a
    BOM first, an unfinished line last, or stray bytes that are not UTF-8."""
    parts = ["\ufeff"] if draw(st.booleans()) else []
    for _ in range(draw(st.integers(0, 12))):
        shape = draw(st.integers(0, 4))
        if shape == 0:
            parts.append(draw(ENDS))  # a blank line: dispatch
        elif shape == 1:
            parts.append(draw(NAMES) + draw(ENDS))  # a field without a colon
        else:
            parts.append(f"{draw(NAMES)}:{draw(VALUES)}{draw(ENDS)}")
    if draw(st.booleans()):
        parts.append("data: unfinished")
    raw = "".join(parts).encode()
    if draw(st.booleans()):
        at = draw(st.integers(0, len(raw)))
        raw = raw[:at] + draw(st.sampled_from([b"\xff", b"\xc3", b"\xe2\x80"])) + raw[at:]
    return raw


@settings(max_examples=400, deadline=None)
@given(st.data())
def test_any_chunking_parses_as_the_standard_says(data: st.DataObject) -> None:
    raw = data.draw(streams())
    cuts = sorted(data.draw(st.lists(st.integers(0, len(raw)), max_size=8)))
    chunks = [raw[a:b] for a, b in zip([0, *cuts], [*cuts, len(raw)], strict=True)]
    assert parse(chunks) == reference(raw)


@settings(max_examples=100, deadline=None)
@given(streams())
def test_byte_by_byte_equals_whole(raw: bytes) -> None:
    assert parse([raw[i : i + 1] for i in range(len(raw))]) == parse([raw]) == reference(raw)


def test_the_standards_examples() -> None:
    stocks = b"data: YHOO\ndata: +2\ndata: 10\n\n"
    assert parse([stocks])[0] == [Event("YHOO\n+2\n10")]
    ids = b": test stream\n\ndata: first event\nid: 1\n\ndata:second event\nid\n\n"
    ids += b"data:  third event\n\n"
    assert parse([ids])[0] == [
        Event("first event", id="1"),
        Event("second event", id=""),
        Event(" third event", id=""),
    ]
    assert parse([b"data\n\ndata\ndata\n\ndata:"])[0] == [Event(""), Event("\n")]
    assert parse([b"data:test\n\ndata: test\n\n"])[0] == [Event("test"), Event("test")]


def test_cr_at_a_chunk_end_then_lf_is_one_line_end() -> None:
    assert parse([b"data: a\r", b"\ndata: b\r", b"\n\r", b"\n"])[0] == [Event("a\nb")]


def test_fields_the_standard_ignores() -> None:
    events, last_id, retry = parse([b"retry: 12a\nid: a\0b\nretry: 250\ndata: x\nevent: t\n\n"])
    assert events == [Event("x", "t", "")]  # the id with NUL is ignored
    assert retry == 250  # the non-digit retry is ignored, the next one counts
    assert last_id == ""


def test_an_id_alone_moves_the_last_event_id_without_an_event() -> None:
    assert parse([b"id: 7\n\n"]) == ([], "7", None)


# -- limits (issue 39): linear time, bounded memory, only OverLimit ---------------------


def over_limits(raw: bytes, max_line: int, max_event: int) -> bool:
    """Whether the stream has a line (the unfinished last one included) longer than
    ``max_line``, or an event whose data lines (each counted with its LF) pass
    ``max_event`` before it ends: the oracle, on the whole text at once."""
    text = codecs.getincrementaldecoder("utf-8-sig")("replace").decode(raw)
    *lines, unfinished = re.split(r"\r\n|\r|\n", text)
    if len(unfinished) > max_line:
        return True
    size = 0
    for line in lines:
        if len(line) > max_line:
            return True
        if not line:
            size = 0
        elif line == "data" or line.startswith("data:"):
            value = line[5:]
            size += len(value[1:] if value.startswith(" ") else value) + 1
            if size > max_event:
                return True
    return False


@settings(max_examples=400, deadline=None)
@given(st.data())
def test_limits_raise_only_over_limit_and_exactly_when_passed(data: st.DataObject) -> None:
    raw = data.draw(st.one_of(streams(), st.binary(max_size=80)))
    cuts = sorted(data.draw(st.lists(st.integers(0, len(raw)), max_size=8)))
    chunks = [raw[a:b] for a, b in zip([0, *cuts], [*cuts, len(raw)], strict=True)]
    max_line, max_event = data.draw(st.integers(0, 12)), data.draw(st.integers(0, 16))
    parser = EventStreamParser(max_line=max_line, max_event=max_event)
    try:
        for chunk in chunks:
            parser.feed(chunk)
    except OverLimit as exc:
        assert over_limits(raw, max_line, max_event), exc
        assert exc.limit == (max_line if exc.what == "line" else max_event)
    else:
        assert not over_limits(raw, max_line, max_event)


def test_a_retry_of_any_length_is_read_without_a_huge_integer() -> None:
    assert parse([b"retry: " + b"9" * 100_000 + b"\n"])[2] == RETRY_CAP
    assert parse([b"retry: " + b"0" * 100_000 + b"7\n"])[2] == 7


def test_an_endless_line_costs_linear_time_and_is_refused_at_its_limit() -> None:
    """24 MiB of one line in 64 KiB chunks (what httpx reads): the old parser joined and
    searched the whole unfinished line again at each chunk (10 s); now each chunk is
    searched once. Under a bigger limit it is kept; under the default it is refused."""
    chunk = b"x" * (1 << 16)
    parser = EventStreamParser(max_line=32 << 20)
    started = time.perf_counter()
    for _ in range(384):
        parser.feed(chunk)
    events = parser.feed(b"\n\n")
    assert time.perf_counter() - started < 2.0
    assert events == []  # a field named x...x: ignored
    default = EventStreamParser()
    with pytest.raises(OverLimit) as over:
        for _ in range(384):
            default.feed(chunk)
    assert (over.value.what, over.value.limit) == ("line", MAX_LINE)
