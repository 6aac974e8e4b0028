"""A node pays for an update only where it delivers it (issue 42): Redis entries carry their
topics and private flag apart from the payload (the ``t`` field), a node's tail matches
them without decoding the update, and decodes only what someone there receives. What the
node then sends must be byte for byte what it sent before; ``t`` is a claim ``u`` must
confirm, so a forged or malformed ``t`` never causes a wrong delivery. Two hub nodes on a
real redis-server."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import replace
from itertools import count
from typing import cast

import pytest
import redis
from hypothesis import given, settings
from hypothesis import strategies as st

from skipfilter.hub.sse import InvalidField
from skipfilter.hub.transports.redis.entries import (
    UnusableEntry,
    decode_payload,
    encode,
    read_topics,
    topics_field,
)
from skipfilter.hub.update import Entry, LazyEntry, Update, http_chunk, valid_update
from tests.hub.hubtest import Server, Stream, sub_token
from tests.hub.redis_server import RedisServer

TOPIC = "https://example.com/t"
OTHER = "https://example.com/other"
STREAM = "skipfilter:updates"

#: Text a topic, id or type may hold: any character but the control ones (and surrogates,
#: which UTF-8 cannot carry), line separators and odd spaces included.
_TEXT = st.text(st.characters(blacklist_categories=("Cc", "Cs")), max_size=12)


def _checked(values: tuple[object, ...]) -> Update | None:
    try:
        return valid_update(*values)
    except InvalidField:
        return None


#: Updates a publish may carry, odd values included: unicode, line breaks and CRs in the
#: data, empty and repeated topics, the largest retry.
UPDATES = st.tuples(
    _TEXT.filter(bool),
    st.lists(_TEXT, min_size=1, max_size=3),
    st.text(max_size=40) | st.sampled_from(["a\nb", "a\r\nb\rc", "\n", "", "é\u2028ü"]),
    st.booleans(),
    st.none() | _TEXT,
    st.none() | st.sampled_from([0, 1, 2**64 - 1]) | st.integers(0, 10**6),
).map(_checked)


def _entry_on(node: Server, update_id: str, timeout: float = 10) -> Entry:
    """The entry ``node``'s ring holds for ``update_id``, once its tail has read it."""
    deadline = time.monotonic() + timeout
    while (seq := node.hub.ring.seq_of(update_id)) is None:
        assert time.monotonic() < deadline, f"{update_id!r} never reached the node"
        time.sleep(0.005)
    entry = node.hub.ring.get(seq)
    assert entry is not None
    return entry


async def _on_loop(fn: Callable[[], object]) -> object:
    return fn()


def test_a_node_holds_an_update_nobody_there_receives_undecoded_and_would_send_the_same_bytes(
    redis_hub: Callable[..., Server],
) -> None:
    a, b = redis_hub(), redis_hub()  # b has no subscriber
    ids = count()

    @settings(max_examples=60, deadline=None, database=None)
    @given(update=UPDATES)
    def one(update: Update | None) -> None:
        if update is None:
            return
        update = replace(update, id=f"{update.id}~{next(ids)}")  # ids unique in the ring
        a.call(a.hub.publish(update))
        entry = _entry_on(b, update.id)
        assert isinstance(entry, LazyEntry) and entry.raw is not None  # never decoded on b
        assert (entry.id, entry.topics, entry.private) == (update.id, update.topics, update.private)
        # what b sends once someone receives it: the bytes every hub sent before
        assert b.call(_on_loop(entry.usable)) is True
        assert entry.chunk == http_chunk(update.encode())
        assert bytes(entry.event) == update.encode()
        assert entry.update == update

    one()


def test_a_resume_on_another_node_replays_entries_it_never_decoded(
    redis_hub: Callable[..., Server],
) -> None:
    a, b = redis_hub(), redis_hub()
    data = ["one", "two\nlines", "thrée"]
    for i, text in enumerate(data):
        assert a.publish(TOPIC, data=text, id=f"r{i}").status_code == 200
    lazy = _entry_on(b, "r2")
    assert isinstance(lazy, LazyEntry) and lazy.raw is not None  # b holds them undecoded
    resumed = Stream(b, [TOPIC], params={"lastEventID": "r0"})
    try:
        got = [resumed.event() for _ in range(2)]
        assert [(e.id, e.data) for e in got] == [("r1", "two\nlines"), ("r2", "thrée")]
        assert resumed.response is not None
        assert resumed.response.headers.get("last-event-id") == "r0"
        assert a.publish(TOPIC, data="live", id="r3").status_code == 200
        assert resumed.event().id == "r3"
    finally:
        resumed.close()


def _fields(update: Update, **changes: bytes) -> dict[str, bytes]:
    """An entry as a hub writes it (``u``, ``i``, ``t``), some fields changed."""
    fields = {
        "u": encode(update).encode(),
        "i": update.id.encode(),
        "t": topics_field(update).encode(),
    }
    fields.update(changes)
    return fields


FORGED = Update("forged", (TOPIC,), "forged data", False)
PRIVATE = Update("forged", (TOPIC,), "secret", True)
#: Entries whose ``t`` (or ``i``) no hub writes, or that disagree with ``u``: unusable,
#: never delivered, by either node, live or in a replay.
BAD_T: dict[str, dict[str, bytes]] = {
    "flag not 0 or 1": _fields(FORGED, t=b"2\n" + TOPIC.encode()),
    "no topics": _fields(FORGED, t=b"0"),
    "a control character": _fields(FORGED, t=b"0\n" + TOPIC.encode() + b"\x07"),
    "a tab": _fields(FORGED, t=b"0\n" + TOPIC.encode() + b"\t"),
    "not UTF-8": _fields(FORGED, t=b"0\n\xff\xfe"),
    "another topic than u": _fields(FORGED, t=b"0\n" + OTHER.encode()),
    "one topic more than u": _fields(FORGED, t=f"0\n{TOPIC}\n{OTHER}".encode()),
    "public while u is private": _fields(PRIVATE, t=b"0\n" + TOPIC.encode()),
    "private while u is public": _fields(FORGED, t=b"1\n" + TOPIC.encode()),
    "i is not u's id": _fields(FORGED, i=b"someone-else"),
    "i missing": {"u": encode(FORGED).encode(), "t": topics_field(FORGED).encode()},
    "a reserved id in u and i": _fields(replace(FORGED, id="earliest")),
    "an id with an edge space in u and i": _fields(replace(FORGED, id="x ")),
}


@pytest.mark.parametrize("bad", list(BAD_T), ids=list(BAD_T))
def test_an_entry_whose_t_is_malformed_or_disagrees_with_u_is_never_delivered(
    redis_hub: Callable[..., Server],
    redis_server: RedisServer,
    caplog: pytest.LogCaptureFixture,
    bad: str,
) -> None:
    caplog.set_level(logging.WARNING, logger="skipfilter.hub")
    a, b = redis_hub(), redis_hub()
    # on each node: subscribers of what u says, of what t says, of everything, with a
    # token for private updates and without: none of them may get the forged entry
    auth = {"Authorization": f"Bearer {sub_token('*')}"}
    live = [
        Stream(node, topics, headers=headers, raw=True)
        for node in (a, b)
        for topics in ([TOPIC], [OTHER], ["*"])
        for headers in (auth, {})
    ]
    assert a.publish([TOPIC, OTHER], id="before").status_code == 200
    sid = redis.Redis.from_url(redis_server.url).xadd(STREAM, BAD_T[bad])  # type: ignore[arg-type]
    assert b.publish([TOPIC, OTHER], id="after").status_code == 200
    for stream in live:
        assert _ids(stream, 2) == ["before", "after"]
        stream.close()
    for node in (a, b):  # a replay from Redis decodes every entry: it skips it too
        replay = Stream(node, ["*"], headers=auth, params={"lastEventID": "earliest"}, raw=True)
        assert _ids(replay, 2) == ["before", "after"]
        replay.close()
    assert isinstance(sid, bytes)
    warned = [r for r in caplog.records if sid.decode() in r.getMessage()]
    assert 1 <= len(warned) <= 2, [r.getMessage() for r in warned]  # once per node at most
    assert "is not a hub update" in warned[0].getMessage()


def _ids(stream: Stream, n: int, timeout: float = 10) -> list[str]:
    """The ids of the next ``n`` events of a raw stream."""
    ids: list[str] = []
    deadline = time.monotonic() + timeout
    while len(ids) < n:
        line = stream.next(max(0.1, deadline - time.monotonic()))
        if line.startswith("id: "):
            ids.append(line[4:])
        assert not line.startswith("data: forged") and "secret" not in line, line
    return ids


def test_an_older_hubs_entry_without_t_is_delivered_as_before(
    redis_hub: Callable[..., Server], redis_server: RedisServer
) -> None:
    a, b = redis_hub(), redis_hub()
    live = [Stream(node, [TOPIC], raw=True) for node in (a, b)]
    old = Update("from-an-older-hub", (TOPIC,), "two\nlines", False, "kind", 5)
    stored = {"u": encode(old), "i": old.id}  # what hubs before ``t`` write
    redis.Redis.from_url(redis_server.url).xadd(STREAM, stored)  # type: ignore[arg-type]
    want = old.encode().decode().split("\n")[:-2]
    for stream in live:
        while (line := stream.next(10)) != want[0]:
            assert line == "" or line.startswith(":"), line  # the stream's opening comment
        got = [line, *(stream.next(10) for _ in want[1:])]
        assert got == want
        stream.close()


def test_an_older_hub_reads_a_new_entry_as_it_always_did(
    redis_hub: Callable[..., Server], redis_server: RedisServer
) -> None:
    """A rolling upgrade: hubs before ``t`` read an entry as its ``u`` field (``decode``
    then, ``decode_payload`` now) and take the publisher's token from its last field."""
    a = redis_hub()
    update = Update("new-entry", (TOPIC, OTHER), "x", True, "t", 3)
    a.call(a.hub.publish(update))
    newest = redis.Redis.from_url(redis_server.url).xrevrange(STREAM, count=1)
    assert isinstance(newest, list)  # typed optional by redis-py: a synchronous client answers
    fields = cast(dict[bytes, bytes], newest[0][1])
    assert list(fields)[:3] == [b"u", b"i", b"t"]
    assert list(fields)[-1] == b"n"  # the token, last, where older hubs look for it
    assert decode_payload(fields[b"u"]) == update  # u alone: what an older hub reads
    assert fields[b"i"] == b"new-entry"


@settings(max_examples=300, deadline=None)
@given(topics=st.lists(_TEXT, min_size=1, max_size=4), private=st.booleans())
def test_t_holds_any_topics_a_publish_may_carry(topics: list[str], private: bool) -> None:
    update = Update("x", tuple(topics), "", private)
    assert read_topics(topics_field(update).encode()) == (tuple(topics), private)


@settings(max_examples=300, deadline=None)
@given(raw=st.binary(max_size=24) | st.text(max_size=24).map(str.encode))
def test_any_t_field_is_read_or_refused_by_name(raw: bytes) -> None:
    try:
        topics, private = read_topics(raw)
    except UnusableEntry as exc:
        assert "'t' field" in str(exc)
        return
    assert raw.decode().split("\n") == ["1" if private else "0", *topics]


def test_a_lazy_entry_found_unusable_selects_nothing_and_is_reported_once(
    caplog: pytest.LogCaptureFixture,
) -> None:
    from skipfilter.hub.transports.redis.entries import EntryReader

    caplog.set_level(logging.WARNING, logger="skipfilter.hub")
    reader = EntryReader("s")
    fields = _fields(FORGED, u=encode(Update("forged", (OTHER,), "d")).encode())
    flat = [x for pair in fields.items() for x in (pair[0].encode(), pair[1])]
    entry = reader.lazy(b"1-1", flat, 1, (1, 1))
    assert isinstance(entry, LazyEntry) and entry.topics == (TOPIC,)
    for _ in range(3):
        assert entry.usable() is False
    assert not entry.topics  # no later replay or resume selects it
    with pytest.raises(UnusableEntry):
        _ = entry.chunk
    assert reader.skipped == 1
    assert len([r for r in caplog.records if "1-1" in r.getMessage()]) == 1
