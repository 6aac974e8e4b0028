"""What Redis holds is input too: entries another program wrote into the shared stream
(``XADD`` by hand, a bug elsewhere, an attacker with Redis access) must not stop delivery
on any node, nor forge SSE fields, nor make publishing fail silently. Two hub nodes on a
real redis-server; every bad entry sits between two good updates."""

from __future__ import annotations

import json
import logging
import time
import uuid
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest
import redis
from hypothesis import given, settings
from hypothesis import strategies as st
from redis.typing import EncodableT, FieldT

from tests.hub.hubtest import Server, Stream
from tests.hub.redis_server import RedisServer

TOPIC = "https://example.com/t"
STREAM = "skipfilter:updates"


#: An entry's fields as XADD takes them.
Fields = dict[FieldT, EncodableT]


def _update(*fields: object) -> Fields:
    return {"u": json.dumps(list(fields)), "i": "x"}


#: Entries no hub could have written: each must be skipped, once, with a warning.
BAD_ENTRIES: dict[str, Fields] = {
    "data null": _update("x", [TOPIC], None, False, None, None),
    "integer topics": _update("x", [1, 2], "d", False, None, None),
    "topics a string": _update("x", TOPIC, "d", False, None, None),
    "no topics": _update("x", [], "d", False, None, None),
    "wrong arity": _update("x", [TOPIC]),
    "an object": {"u": json.dumps({"id": "x", "topics": [TOPIC]})},
    "id not a string": _update(7, [TOPIC], "d", False, None, None),
    "private not a boolean": _update("x", [TOPIC], "d", "yes", None, None),
    "retry a string": _update("x", [TOPIC], "d", False, None, "5"),
    "retry negative": _update("x", [TOPIC], "d", False, None, -1),
    "retry too large": _update("x", [TOPIC], "d", False, None, 2**64),
    "retry a boolean": _update("x", [TOPIC], "d", False, None, True),
    "type a number": _update("x", [TOPIC], "d", False, 3, None),
    "not JSON": {"u": "{broken"},
    "missing field": {"note": "not an update"},
    "not UTF-8": {"u": b"\xff\xfe[\x80"},
    "binary field name": {b"\xff": b"\xfe"},
    "id injects a field": _update("x\nevent: forged", [TOPIC], "d", False, None, None),
    "type injects a field": _update("x", [TOPIC], "d", False, "t\nevent: forged", None),
    "retry injects a field": _update("x", [TOPIC], "d", False, None, "1\nevent: forged"),
    "id with a control character": _update("x\x07", [TOPIC], "d", False, None, None),
    "topic with a control character": _update("x", ["a\nb"], "d", False, None, None),
}


def _raw_events(stream: Stream, count: int, timeout: float = 15) -> list[dict[str, str]]:
    """The next ``count`` events of a raw stream, as field dicts (every line kept)."""
    events: list[dict[str, str]] = []
    fields: dict[str, str] = {}
    deadline = time.monotonic() + timeout
    while len(events) < count:
        line = stream.next(max(0.1, deadline - time.monotonic()))
        if line == "":
            if fields:
                events.append(fields)
            fields = {}
        elif not line.startswith(":"):
            name, _, value = line.partition(": ")
            assert name not in fields, f"a repeated field {name!r}: {line!r}"
            fields[name] = value
    return events


@pytest.mark.parametrize("bad", list(BAD_ENTRIES), ids=list(BAD_ENTRIES))
def test_an_entry_no_hub_could_write_is_skipped_on_every_node_live_and_in_replay(
    redis_hub: Callable[..., Server],
    redis_server: RedisServer,
    caplog: pytest.LogCaptureFixture,
    bad: str,
) -> None:
    caplog.set_level(logging.WARNING, logger="skipfilter.hub")
    a, b = redis_hub(), redis_hub()
    live = [Stream(node, [TOPIC], raw=True) for node in (a, b)]
    assert a.publish(TOPIC, id="before").status_code == 200
    sid = redis.Redis.from_url(redis_server.url).xadd(STREAM, BAD_ENTRIES[bad])
    assert isinstance(sid, bytes)  # the client does not decode its answers
    assert b.publish(TOPIC, id="after").status_code == 200
    for stream in live:
        assert [e["id"] for e in _raw_events(stream, 2)] == ["before", "after"]
    for node in (a, b):  # a node that never saw it live reads across it too
        replay = Stream(node, [TOPIC], params={"lastEventID": "earliest"}, raw=True)
        assert [e.get("id") for e in _raw_events(replay, 2)] == ["before", "after"]
        replay.close()
    assert a.publish(TOPIC, id="later").status_code == 200
    for stream in live:
        assert [e["id"] for e in _raw_events(stream, 1)] == ["later"]
        stream.close()
    name = sid.decode()
    warned = [r for r in caplog.records if name in r.getMessage()]
    assert 1 <= len(warned) <= 2, [r.getMessage() for r in warned]  # once per node at most
    assert "skipped" in warned[0].getMessage()
    for node in (a, b):
        assert httpx.get(node.url + "/healthz").status_code == 200


MAX_ID = f"{2**64 - 1}-{2**64 - 1}"


def test_an_entry_with_the_largest_id_makes_publishes_503_naming_the_cause(
    redis_hub: Callable[..., Server], redis_server: RedisServer
) -> None:
    a, b = redis_hub(), redis_hub()
    live = Stream(b, [TOPIC])
    assert a.publish(TOPIC, id="before").status_code == 200
    assert live.event().id == "before"
    stray = redis.Redis.from_url(redis_server.url)
    stray.xadd(STREAM, {"note": "stray"}, id=MAX_ID)
    for node in (a, b):  # health says so before anyone publishes
        _wait_health(node, 503, "largest possible id")
    stray.xdel(STREAM, MAX_ID)  # deleting it does not help: Redis still refuses
    for node in (a, b):
        response = node.publish(TOPIC, id=f"refused-{node.port}")
        assert response.status_code == 503
        assert f"{STREAM} has used the largest possible id {MAX_ID}" in response.text
        assert "XSETID" in response.text  # and how to repair it
        assert "refused-" not in response.text
        health = httpx.get(node.url + "/healthz")
        assert health.status_code == 503 and "largest possible id" in health.text
    c = redis_hub()  # a node starting meanwhile knows it too
    _wait_health(c, 503, "largest possible id")
    found = stray.xrevrange(STREAM, "+", "-", count=1)
    assert found is not None  # typed optional by redis-py; a synchronous XREVRANGE answers
    newest = found[0][0]
    # the repair the message names; redis-py leaves execute_command unannotated
    stray.execute_command("XSETID", STREAM, newest)  # type: ignore[no-untyped-call]
    for node in (a, b, c):
        _wait_health(node, 200, "ok")
    assert a.publish(TOPIC, id="after").status_code == 200
    assert c.publish(TOPIC, id="from-c").status_code == 200
    assert [live.event().id, live.event().id] == ["after", "from-c"]
    live.close()


def _wait_health(node: Server, status: int, text: str, timeout: float = 10) -> None:
    deadline = time.monotonic() + timeout
    while True:
        response = httpx.get(node.url + "/healthz", timeout=10)
        if response.status_code == status and text in response.text:
            return
        assert time.monotonic() < deadline, (response.status_code, response.text)
        time.sleep(0.05)


def test_a_refused_publish_never_names_another_publishers_update(
    redis_hub: Callable[..., Server], redis_server: RedisServer
) -> None:
    node = redis_hub()
    redis.Redis.from_url(redis_server.url).xadd(STREAM, {"note": "stray"}, id=MAX_ID)
    ids = [f"u{i:02d}" for i in range(24)]  # short: Redis errors quote ~100 characters
    with ThreadPoolExecutor(len(ids)) as pool:  # many at once: they share pipelines
        bodies = list(pool.map(lambda i: node.publish(TOPIC, id=i), ids))
    assert {r.status_code for r in bodies} == {503}
    for update_id, response in zip(ids, bodies, strict=True):
        others = [i for i in ids if i != update_id and i in response.text]
        assert not others, f"{update_id}'s 503 names {others}: {response.text}"


def test_a_stuck_fan_out_is_reported_and_publishes_are_refused_not_acknowledged(
    redis_hub: Callable[..., Server], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("skipfilter.hub.core.hub.DELIVERY_TIMEOUT", 3.0, raising=False)
    a, b = redis_hub(), redis_hub()

    def broken(*args: object, **kwargs: object) -> None:
        raise RuntimeError("a bug in matching")

    a.hub.index.match = broken  # a fault this node cannot recover from by itself
    first = a.publish(TOPIC, id="first")
    assert first.status_code == 503, first.text  # stored, but never confirmed delivered
    assert "no confirmation within 3 s" in first.text and "may still be delivered" in first.text
    _wait_health(a, 503, "fan-out failed (RuntimeError: a bug in matching)")
    second = a.publish(TOPIC, id="second")
    assert second.status_code == 503
    assert "fan-out failed" in second.text and "not stored" in second.text
    assert httpx.get(b.url + "/healthz").status_code == 200  # the other node is fine
    assert b.publish(TOPIC, id="third").status_code == 200


_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner),
    max_leaves=8,
)
#: Each of the six values of an encoded update: a valid one, or anything JSON can hold.
_SLOTS = [
    st.sampled_from(["x", "earliest", "#x", " x", "x\nevent: forged"]) | _JSON,
    st.sampled_from([[TOPIC], [TOPIC, "a\nb"], []]) | _JSON,
    st.sampled_from(["d", "line\nevent: forged", ""]) | _JSON,
    st.booleans() | _JSON,
    st.sampled_from([None, "t", "t\r\nid: forged"]) | _JSON,
    st.sampled_from([None, 0, 2**64 - 1, 2**64]) | _JSON,
]
_VALUES = (
    st.binary(max_size=24)
    | st.text(max_size=24).map(str.encode)
    | st.lists(_JSON, max_size=7).map(lambda v: json.dumps(v).encode())
    | st.tuples(*_SLOTS).map(lambda v: json.dumps(list(v)).encode())
)
_FIELDS = st.dictionaries(
    st.sampled_from([b"u", b"i", b"k", b"n"]) | st.binary(min_size=1, max_size=4),
    _VALUES,
    min_size=1,
    max_size=4,
)
_KNOWN = {"id", "event", "retry", "data"}


def _ours(events: list[dict[str, str]], ours: set[str]) -> list[str]:
    """The ids of our updates among ``events``, after checking every event is well formed."""
    for event in events:
        assert set(event) <= _KNOWN, event  # no forged or unknown field
        assert "\x00" not in event.get("id", "")
    return [e["id"] for e in events if e.get("id") in ours]


def test_arbitrary_entries_never_stop_delivery_of_the_updates_around_them(
    redis_hub: Callable[..., Server], redis_server: RedisServer
) -> None:
    a, b = redis_hub(), redis_hub()
    live = Stream(b, [TOPIC], raw=True)
    stray = redis.Redis.from_url(redis_server.url)
    published: list[str] = []
    received: list[dict[str, str]] = []

    @settings(max_examples=40, deadline=None, database=None)
    @given(strays=st.lists(_FIELDS, min_size=1, max_size=3))
    def one_round(strays: list[Fields]) -> None:
        first, last = f"v-{uuid.uuid4()}", f"v-{uuid.uuid4()}"
        assert a.publish(TOPIC, id=first).status_code == 200
        for fields in strays:
            stray.xadd(STREAM, fields)
        assert b.publish(TOPIC, id=last).status_code == 200
        published.extend([first, last])
        while last not in {e.get("id") for e in received}:
            received.extend(_raw_events(live, 1))
        assert _ours(received, set(published)) == published  # all of ours, in order

    one_round()
    assert httpx.get(a.url + "/healthz").status_code == 200
    for node in (a, b):  # and replay reads across every one of them
        replay = Stream(node, [TOPIC], params={"lastEventID": "earliest"}, raw=True)
        replayed: list[dict[str, str]] = []
        while published[-1] not in {e.get("id") for e in replayed}:
            replayed.extend(_raw_events(replay, 1))
        assert _ours(replayed, set(published)) == published
        replay.close()
    live.close()
