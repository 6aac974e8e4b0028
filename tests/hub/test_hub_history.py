"""Reconnection and history: Last-Event-ID, earliest, no loss across reconnects, the ring."""

from __future__ import annotations

import time
from collections.abc import Callable

import httpx

from skipfilter.hub import HubSettings
from tests.hub.hubtest import HUB, Server, Stream, sub_token

BOOK = "https://example.com/books/1"


def test_last_event_id_header_replays_what_followed(
    server: Server, streams: Callable[..., Stream]
) -> None:
    ids = [server.publish(BOOK, data=str(i)).text for i in range(5)]
    server.publish("https://example.com/other", id="not-for-us")
    stream = streams(server, [BOOK], headers={"Last-Event-ID": ids[1]})
    assert [stream.event().id for _ in range(3)] == ids[2:]
    stream.nothing()
    assert stream.response is not None
    # the header names the event the stream resumes after, not the hub's newest one
    assert stream.response.headers["last-event-id"] == ids[1]
    fresh = streams(server, [BOOK])
    assert fresh.response is not None
    assert fresh.response.headers["last-event-id"] == "not-for-us"


def test_last_event_id_query_parameter_and_header_precedence(
    server: Server, streams: Callable[..., Stream]
) -> None:
    ids = [server.publish(BOOK, data=str(i)).text for i in range(4)]
    by_query = streams(server, [BOOK], params={"lastEventID": ids[2]})
    assert by_query.event().id == ids[3]
    both = streams(
        server, [BOOK], params={"lastEventID": ids[2]}, headers={"Last-Event-ID": ids[0]}
    )
    assert [both.event().id for _ in range(3)] == ids[1:]


def test_earliest_replays_all_history_and_response_header(
    server: Server, streams: Callable[..., Stream]
) -> None:
    fresh = streams(server, [BOOK], params={"lastEventID": "earliest"})
    assert fresh.response is not None
    assert fresh.response.headers["last-event-id"] == "earliest"
    fresh.nothing(0.1)
    ids = [server.publish(BOOK, data=str(i)).text for i in range(3)]
    assert [fresh.event().id for _ in ids] == ids
    late = streams(server, [BOOK], params={"lastEventID": "earliest"})
    assert [late.event().id for _ in ids] == ids
    # nothing precedes the first event of a replay from the start
    assert late.response is not None and late.response.headers["last-event-id"] == "earliest"


def test_private_updates_are_not_replayed_to_unauthorized(
    server: Server, streams: Callable[..., Stream]
) -> None:
    server.publish(BOOK, private="on", id="secret")
    server.publish(BOOK, id="public")
    anonymous = streams(server, [BOOK], params={"lastEventID": "earliest"})
    allowed = streams(
        server,
        [BOOK],
        params={"lastEventID": "earliest"},
        headers={"Authorization": f"Bearer {sub_token(BOOK)}"},
    )
    assert anonymous.event().id == "public"
    assert [allowed.event().id, allowed.event().id] == ["secret", "public"]


def test_updates_published_while_reconnecting_are_not_lost(
    server: Server, streams: Callable[..., Stream]
) -> None:
    first = streams(server, [BOOK])
    received = [first.event().id for _ in [server.publish(BOOK, data="a")]]
    first.close()
    server.wait_subscribers(0)
    missed = [server.publish(BOOK, data=f"m{i}").text for i in range(5)]
    second = streams(server, [BOOK], headers={"Last-Event-ID": received[-1]})
    after = server.publish(BOOK, data="after").text
    assert [second.event().id for _ in range(6)] == [*missed, after]
    second.nothing()


def test_replay_and_live_publishes_interleave_without_gap_or_duplicate(
    make_server: Callable[..., Server], settings: HubSettings, streams: Callable[..., Stream]
) -> None:
    server = make_server(settings.with_changes(ring_size=16, history_size=2000))
    ids = [server.publish(BOOK, data=str(i)).text for i in range(1200)]  # beyond the ring
    stream = streams(server, [BOOK], params={"lastEventID": ids[0]})
    live = [server.publish(BOOK, data=f"live{i}").text for i in range(5)]
    got = [stream.event(10).id for _ in range(len(ids) - 1 + len(live))]
    assert got == ids[1:] + live
    stream.nothing(0.2)


def test_unknown_last_event_id_starts_live(server: Server, streams: Callable[..., Stream]) -> None:
    server.publish(BOOK, id="old")
    stream = streams(server, [BOOK], headers={"Last-Event-ID": "urn:uuid:never-seen"})
    stream.nothing(0.2)
    assert server.publish(BOOK, id="new").status_code == 200
    assert stream.event().id == "new"


def test_slow_subscriber_behind_the_ring_is_disconnected_with_a_reason(
    make_server: Callable[..., Server], settings: HubSettings
) -> None:
    server = make_server(settings.with_changes(ring_size=4, history_size=100, dispatch_timeout=30))
    big = "x" * 200_000
    lines: list[str] = []
    with (
        httpx.Client(base_url=server.url, timeout=30) as client,
        client.stream("GET", HUB, params={"topic": BOOK}) as response,
    ):
        # the client reads nothing: socket buffers fill, the hub's write blocks, the ring moves on
        ids = [server.publish(BOOK, data=big).text for _ in range(60)]
        deadline = time.monotonic() + 20
        for line in response.iter_lines():
            lines.append(line[:200])
            if time.monotonic() > deadline:
                break
    reason = [line for line in lines if "fell behind" in line]
    assert reason, lines[-5:]
    assert "Last-Event-ID" in reason[0]
    got = [line[4:] for line in lines if line.startswith("id: ")]
    assert got == ids[: len(got)] and len(got) < len(ids)
    server.wait_subscribers(0)
    assert server.hub.metrics.disconnects["fell behind"] == 1
    # resuming from the last id received gets the rest from SQLite
    with (
        httpx.Client(base_url=server.url, timeout=30) as client,
        client.stream("GET", HUB, params={"topic": BOOK, "lastEventID": got[-1]}) as response,
    ):
        rest: list[str] = []
        for line in response.iter_lines():
            if line.startswith("id: "):
                rest.append(line[4:])
                if len(rest) == len(ids) - len(got):
                    break
    assert got + rest == ids
