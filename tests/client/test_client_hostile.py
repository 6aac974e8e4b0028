"""The client against servers that are not hubs, or hostile ones, over real loopback sockets:
whatever id, ``retry:``, line, body or content type comes back, only the client's own
errors (``MercureError``) come out, in bounded time and memory."""

from __future__ import annotations

import asyncio
import itertools
import queue
import time
from collections.abc import Iterator

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from skipfilter.client import (
    AsyncPublisher,
    BadAnswer,
    MercureError,
    NotEventStream,
    OverLimit,
    Publisher,
    Unavailable,
    subscribe,
)
from skipfilter.client.subscriber import READ_TIMEOUT, RETRY_RANGE
from skipfilter.hub import HubSettings
from tests.client.clienttest import Reader
from tests.client.rawserver import Answer, RawServer, sized, stream_head

BOOK = "https://example.com/books/1"


def events(*lines: bytes) -> Answer:
    return [stream_head(), *lines]


# -- ids every subscriber can send back ---------------------------------------------------


def test_a_non_ascii_id_is_sent_back_as_utf8() -> None:
    """A hub that accepts any id (the Go hub does): the resumption carries it as the HTML
    standard's EventSource does, as UTF-8; it does not raise UnicodeEncodeError."""
    script = [events(b"id: urn:\xc3\xa9-1\ndata: one\n\n"), events(b"data: two\n\n")]
    with RawServer(lambda n, head: script[n] if n < 2 else None) as server:
        reader = Reader(server.url, BOOK)
        try:
            assert [(u.data, u.id) for u in reader.take(2)] == [
                ("one", "urn:é-1"),
                ("two", "urn:é-1"),
            ]
        finally:
            reader.close()
        assert server.header(1, b"last-event-id") == "urn:é-1".encode()


@pytest.mark.parametrize("raw_id", [b"a\x01b", b"  padded", b"tab\t", b"del\x7f"])
def test_an_id_no_header_can_carry_resumes_from_now_with_a_gap(raw_id: bytes) -> None:
    script = [events(b"id: " + raw_id + b"\ndata: one\n\n"), events(b"data: two\n\n")]
    with RawServer(lambda n, head: script[n] if n < 2 else None) as server:
        reader = Reader(server.url, BOOK)
        try:
            one, two = reader.take(2)
            assert (one.gap, two.gap, two.data) == (False, True, "two")
            assert reader.subscription.gaps == 1
        finally:
            reader.close()
        assert server.header(1, b"last-event-id") is None


# -- retry ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "delay"),
    [
        (b"9" * 5000, RETRY_RANGE[1]),  # int() of it: ValueError (4300 digits at most)
        (b"1" + b"0" * 30, RETRY_RANGE[1]),  # a float sleep() overflows
        (b"31536000000", RETRY_RANGE[1]),  # a year
        (b"0", RETRY_RANGE[0]),  # reconnect at once, forever
        (b"000000000000000000000250", 0.25),  # leading zeros are digits
        (b"-5", 3.0),  # not all digits: ignored, as the standard says
        (b"\xd9\xa3", 3.0),  # ARABIC-INDIC DIGIT THREE: a digit, not an ASCII one
    ],
)
def test_a_hostile_retry_is_clamped_or_ignored(value: bytes, delay: float) -> None:
    answer = events(b"retry: " + value + b"\ndata: one\n\n")
    with RawServer(lambda n, head: answer if n == 0 else None) as server:
        reader = Reader(server.url, BOOK, reconnect_delay=3.0)
        try:
            assert reader.next().data == "one"
            assert reader.subscription.retry == delay
        finally:
            reader.close()  # ends the wait, however long, at once
        assert not reader.thread.is_alive()


# -- lines, events, content types --------------------------------------------------------


def test_an_endless_line_is_refused_at_the_limit() -> None:
    """8 MiB without a line end (the default limit: 4 Mi characters) then more: OverLimit,
    after reading little more than the limit."""
    chunk = b"data: " + b"x" * (1 << 20)
    answer = events(*([chunk] * 64))
    with RawServer(lambda n, head: answer if n == 0 else None) as server:
        reader = Reader(server.url, BOOK)
        try:
            error = reader.error(timeout=30)
        finally:
            reader.close()
        assert isinstance(error, OverLimit) and error.what == "line"
        assert server.sent[0] < 32 << 20


def test_an_event_over_the_limit_is_refused() -> None:
    line = b"data: " + b"y" * 1000 + b"\n"
    answer = events(b"data: small\n\n", line * 200)
    with RawServer(lambda n, head: answer if n == 0 else None) as server:
        reader = Reader(server.url, BOOK, max_event=100_000)
        try:
            assert reader.next().data == "small"
            error = reader.error()
        finally:
            reader.close()
        assert isinstance(error, OverLimit) and (error.what, error.limit) == ("event", 100_000)


@pytest.mark.parametrize(
    "content_type", ["text/html; charset=utf-8", "text/plain", "", "text/event-stream-x"]
)
def test_a_200_that_is_not_an_event_stream_is_refused(content_type: str) -> None:
    page = b"<html><body>\ndata: not an update\n\n</body></html>\n"
    answer: Answer = [stream_head(content_type).replace(b"Content-Type: \r\n", b""), page]
    with RawServer(lambda n, head: answer) as server:
        reader = Reader(server.url, BOOK)
        try:
            error = reader.error()
        finally:
            reader.close()
        assert isinstance(error, NotEventStream) and error.content_type == content_type
        assert len(server.heads) == 1  # raised, not retried


def test_event_stream_with_parameters_and_any_case_is_a_stream() -> None:
    answer: Answer = [stream_head("Text/Event-Stream; charset=utf-8"), b"data: fine\n\n"]
    with RawServer(lambda n, head: answer if n == 0 else None) as server:
        reader = Reader(server.url, BOOK)
        try:
            assert reader.next().data == "fine"
        finally:
            reader.close()


# -- timeouts -----------------------------------------------------------------------------


def test_the_default_read_timeout_is_finite_and_above_a_hubs_heartbeat() -> None:
    """By default a silent server is given up on (old: read_timeout None, waiting forever),
    and a live idle stream, whose heartbeat comes every 40 s by default, is kept."""
    subscription = subscribe("http://127.0.0.1:1/.well-known/mercure", [BOOK])
    assert subscription.read_timeout == READ_TIMEOUT
    assert HubSettings(anonymous=True).heartbeat * 2 < READ_TIMEOUT <= 300


def test_a_server_that_never_answers_the_head_is_a_failed_connection() -> None:
    with RawServer(lambda n, head: None) as server:
        reader = Reader(server.url, BOOK, read_timeout=0.5, max_reconnects=1)
        started = time.monotonic()
        try:
            error = reader.error(timeout=15)
        finally:
            reader.close()
        assert isinstance(error, Unavailable) and not error.may_be_stored
        assert 0.9 < time.monotonic() - started < 10  # two attempts of 0.5 s each
        assert len(server.heads) == 2


# -- publish answers ----------------------------------------------------------------------


def _huge() -> Iterator[bytes]:
    """128 MiB announced, sent in 1 MiB pieces while the client reads."""
    yield b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 134217728\r\n\r\n"
    for _ in range(128):
        yield b"i" * (1 << 20)


def test_a_huge_publish_answer_is_not_read_as_an_id() -> None:
    with RawServer(lambda n, head: _huge()) as server:
        with Publisher(server.url, token="t") as pub, pytest.raises(OverLimit) as over:
            pub.publish(BOOK, "x")
        assert over.value.what == "answer" and "may have been stored" in str(over.value)
        assert len(server.heads) == 1  # not sent again
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline and len(server.sent) < 1:
            time.sleep(0.01)
    assert server.sent[0] < 32 << 20  # it stopped reading: the rest was never sent


def _answer_in_pieces(body: bytes, cuts: list[int]) -> Iterator[bytes]:
    """A 200 of ``body`` sent in pieces cut at ``cuts``, 20 ms apart (so the client reads
    each on its own, a read ending at the limit included)."""
    yield b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nConnection: close\r\n\r\n"
    edges = [0, *sorted({c % (len(body) + 1) for c in cuts}), len(body)]
    for start, end in itertools.pairwise(edges):
        if end > start:
            time.sleep(0.02)
            yield body[start:end]


def _publish_answered(url: str, limit: int, asynchronous: bool) -> str:
    if asynchronous:

        async def go() -> str:
            async with AsyncPublisher(url, token="t", max_answer=limit) as pub:
                return await pub.publish(BOOK, "x")

        return asyncio.run(asyncio.wait_for(go(), 30))
    with Publisher(url, token="t", max_answer=limit) as pub:
        return pub.publish(BOOK, "x")


@settings(max_examples=8, deadline=None)  # 0.3 s each (a client and a server)
@given(
    limit=st.integers(1, 3000),
    over=st.booleans(),
    cuts=st.lists(st.integers(0, 3001), max_size=3),
    asynchronous=st.booleans(),
)
@example(limit=1 << 16, over=False, cuts=[], asynchronous=False)  # the default, exactly
@example(limit=1 << 16, over=True, cuts=[1 << 16], asynchronous=True)
@example(limit=100, over=True, cuts=[100], asynchronous=False)  # a read ends at the limit
@example(limit=100, over=True, cuts=[100], asynchronous=True)
def test_an_answer_of_exactly_max_answer_bytes_is_an_id_and_one_more_is_over_the_limit(
    limit: int, over: bool, cuts: list[int], asynchronous: bool
) -> None:
    """At the limit, however the bytes arrive, the whole answer is the id; one byte more
    is OverLimit, for both publishers."""
    body = bytes(ord("a") + n % 26 for n in range(limit + over))
    with RawServer(lambda n, head: _answer_in_pieces(body, cuts)) as server:
        if over:
            with pytest.raises(OverLimit) as raised:
                _publish_answered(server.url, limit, asynchronous)
            assert (raised.value.what, raised.value.limit) == ("answer", limit)
        else:
            assert _publish_answered(server.url, limit, asynchronous) == body.decode()
        assert len(server.heads) == 1  # never sent again


def test_a_huge_error_answer_is_read_only_for_its_description() -> None:
    body = b"E" * (16 << 20)
    with (
        RawServer(lambda n, head: [sized(body, "503 Service Unavailable")]) as server,
        Publisher(server.url, token="t") as pub,
        pytest.raises(Unavailable) as down,
    ):
        pub.publish(BOOK, "x")
    assert down.value.may_be_stored and len(str(down.value)) < 1000
    assert len(server.heads) == 1


def test_a_publish_answer_in_a_broken_content_encoding_is_a_bad_answer() -> None:
    answer = [b"HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\nContent-Length: 5\r\n\r\nnot.z"]
    with (
        RawServer(lambda n, head: answer) as server,
        Publisher(server.url, token="t") as pub,
        pytest.raises(BadAnswer),
    ):
        pub.publish(BOOK, "x")


# -- whatever comes back, only the client's errors ---------------------------------------

IDS = st.binary(max_size=40).filter(lambda b: b"\n" not in b and b"\r" not in b)
RETRIES = st.one_of(
    st.integers(0, 999).map(lambda n: str(n).encode()), st.binary(max_size=12), st.just(b"9" * 40)
)
TYPES = st.sampled_from(
    ["text/event-stream", "text/html", "", "application/json", "TEXT/EVENT-STREAM"]
)


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(raw_id=IDS, retry=RETRIES, content_type=TYPES, tail=st.binary(max_size=64))
def test_any_id_retry_content_type_or_bytes_raise_only_client_errors(
    raw_id: bytes, retry: bytes, content_type: str, tail: bytes
) -> None:
    """Two connections: the first sends an id, a retry and stray bytes, the second an
    update; whatever they were, nothing but a MercureError comes out."""
    first: Answer = [
        stream_head(content_type),
        b"retry: " + retry + b"\nid: " + raw_id + b"\ndata: one\n\n" + tail,
    ]
    second: Answer = [stream_head(), b"\n\ndata: two\n\n"]
    script = [first, second]
    with RawServer(lambda n, head: script[n] if n < 2 else None) as server:
        reader = Reader(server.url, BOOK, reconnect_delay=0.01, max_event=1000, max_line=1000)
        reader.subscription.retry = 0.01
        got: list[object] = []
        try:
            while len(got) < 3:  # until "two", an error, or a long retry honoured
                item: object = reader.items.get(timeout=2)
                got.append(item)
                if isinstance(item, BaseException) or getattr(item, "data", "") == "two":
                    break
        except queue.Empty:
            assert reader.subscription.retry > 1, got  # only a long retry: nothing else waits
        finally:
            reader.close()
    for item in got:
        assert not isinstance(item, BaseException) or isinstance(item, MercureError), item
