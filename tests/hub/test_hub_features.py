"""Subscription events and API, CORS, heartbeats, cleanup, metrics, and bad input."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from urllib.parse import quote

import pytest

from skipfilter.hub import HubSettings
from tests.hub.hubtest import HUB, Server, Stream, pub_token, sub_token

BOOK = "https://example.com/books/1"
SUBS = "/.well-known/mercure/subscriptions"


@pytest.fixture
def subs_server(make_server: Callable[..., Server], settings: HubSettings) -> Server:
    return make_server(settings.with_changes(subscriptions=True))


def test_subscription_events_announce_connect_and_disconnect(
    subs_server: Server, streams: Callable[..., Stream]
) -> None:
    watcher_token = sub_token(SUBS + "/{topic}/{subscriber}")
    watcher = streams(
        subs_server,
        [SUBS + "/{topic}/{subscriber}"],
        headers={"Authorization": f"Bearer {watcher_token}"},
    )
    watcher.event()  # its own subscription, announced to itself
    payload_token = sub_token(BOOK, exp=600, payload={"user": "alice"})
    book = streams(subs_server, [BOOK], headers={"Authorization": f"Bearer {payload_token}"})
    event = watcher.event()
    doc = json.loads(event.data)
    assert doc["@context"] == "https://mercure.rocks/"
    assert doc["type"] == "Subscription"
    assert doc["topic"] == BOOK and doc["active"] is True
    assert doc["subscriber"].startswith("urn:uuid:")
    assert doc["payload"] == {"user": "alice"}
    assert doc["id"] == f"{SUBS}/{quote(BOOK, safe='')}/{quote(doc['subscriber'], safe='')}"
    anonymous = streams(subs_server, ["*"])  # not authorized: never sees subscription events
    watcher.event()
    book.close()
    gone = json.loads(watcher.event().data)
    assert (gone["subscriber"], gone["active"]) == (doc["subscriber"], False)
    anonymous.nothing()


def test_subscriptions_api(subs_server: Server, streams: Callable[..., Stream]) -> None:
    streams(subs_server, [BOOK, "https://example.com/users/{id}"])
    streams(subs_server, [BOOK])
    deadline = time.monotonic() + 5  # subscription events are stored in the background
    while subs_server.hub.ring.head < 3:
        assert time.monotonic() < deadline
        time.sleep(0.01)
    allowed = {
        "Authorization": f"Bearer {sub_token(SUBS, SUBS + '/{topic}', SUBS + '/{topic}/{s}')}"
    }
    with subs_server.client() as client:
        assert client.get(SUBS).status_code == 401
        narrow = {"Authorization": f"Bearer {sub_token(BOOK)}"}
        assert client.get(SUBS, headers=narrow).status_code == 403
        # compatibility mode: the whole collection is 1.0's (JSON; 0.x's subscriptions with
        # their 'topic'), with 0.x's 'lastEventID' kept in the body for 0.x clients
        r = client.get(SUBS, headers=allowed)
        assert r.status_code == 200
        assert r.headers["content-type"] == "application/json"
        body = r.json()
        assert body["type"] == "subscriptions" and body["id"] == SUBS
        assert body["lastEventID"] == subs_server.hub.last_id
        assert len(body["subscriptions"]) == 3
        r = client.get(f"{SUBS}/{quote(BOOK, safe='')}", headers=allowed)  # 0.x's route
        assert r.headers["content-type"] == "application/ld+json"
        assert r.json()["type"] == "Subscriptions"
        assert r.json()["lastEventID"] == subs_server.hub.last_id
        by_topic = r.json()["subscriptions"]
        assert len(by_topic) == 2 and {s["topic"] for s in by_topic} == {BOOK}
        one = by_topic[0]
        r = client.get(one["id"], headers=allowed)
        assert r.status_code == 200
        assert r.json()["subscriber"] == one["subscriber"]
        assert r.json()["@context"] == "https://mercure.rocks/"
        missing = f"{SUBS}/{quote(BOOK, safe='')}/{quote('urn:uuid:nope', safe='')}"
        assert client.get(missing, headers=allowed).status_code == 404


def test_subscriptions_api_disabled_by_default(server: Server) -> None:
    with server.client() as client:
        assert client.get(SUBS).status_code == 404


def test_cors_with_credentials(
    make_server: Callable[..., Server], settings: HubSettings, streams: Callable[..., Stream]
) -> None:
    server = make_server(settings.with_changes(cors_origins=("https://app.example",)))
    with server.client() as client:
        preflight = client.options(
            HUB,
            headers={
                "Origin": "https://app.example",
                "Access-Control-Request-Method": "POST",
                "Access-Control-Request-Headers": "authorization",
            },
        )
        assert preflight.status_code == 200
        assert preflight.headers["access-control-allow-origin"] == "https://app.example"
        assert preflight.headers["access-control-allow-credentials"] == "true"
        denied = client.options(
            HUB,
            headers={"Origin": "https://evil.example", "Access-Control-Request-Method": "POST"},
        )
        assert "access-control-allow-origin" not in denied.headers
    stream = streams(server, [BOOK], headers={"Origin": "https://app.example"})
    assert stream.response is not None
    assert stream.response.headers["access-control-allow-origin"] == "https://app.example"
    assert stream.response.headers["access-control-allow-credentials"] == "true"
    assert "last-event-id" in stream.response.headers["access-control-expose-headers"].lower()


def test_heartbeat_comments_on_idle_streams(
    make_server: Callable[..., Server], settings: HubSettings, streams: Callable[..., Stream]
) -> None:
    server = make_server(settings.with_changes(heartbeat=0.2))
    stream = streams(server, [BOOK], raw=True)
    lines = [stream.next(2) for _ in range(6)]
    assert lines.count(":") >= 3  # the opening comment plus heartbeats, nothing else
    assert all(line in (":", "") for line in lines)


def test_disconnect_cleanup(server: Server, streams: Callable[..., Stream]) -> None:
    opened = [streams(server, [BOOK, f"https://example.com/users/{i}"]) for i in range(5)]
    assert len(server.hub.index) == 5 and len(server.hub) == 5
    for stream in opened:
        stream.close()
    server.wait_subscribers(0)
    assert len(server.hub.index) == 0
    assert server.publish(BOOK).status_code == 200
    assert server.hub.metrics.deliveries == 0


def test_metrics_only_on_the_metrics_address(
    make_server: Callable[..., Server], settings: HubSettings, streams: Callable[..., Stream]
) -> None:
    server = make_server(settings, metrics=True)
    stream = streams(server, [BOOK])
    server.publish(BOOK)
    stream.event()
    server.publish(BOOK, auth="bad")
    with server.client() as client:
        hidden = client.get("/metrics")
        r = client.get(server.metrics_url)
    assert hidden.status_code == 404 and "--metrics-addr" in hidden.text
    assert r.status_code == 200
    assert r.headers["content-type"].startswith("text/plain")
    values = {
        line.split(" ")[0]: float(line.split(" ")[1])
        for line in r.text.splitlines()
        if line and not line.startswith("#")
    }
    assert values["skipfilter_hub_subscribers"] == 1
    assert values["skipfilter_hub_updates_total"] == 1
    assert values["skipfilter_hub_deliveries_total"] == 1
    assert values["skipfilter_hub_match_seconds_count"] == 1
    assert values['skipfilter_hub_rejected_total{endpoint="publish",status="401"}'] == 1
    assert "# TYPE skipfilter_hub_match_seconds histogram" in r.text


@pytest.mark.parametrize(
    ("fields", "status", "names"),
    [
        ({"id": "a\nb"}, 400, "'id'"),
        ({"id": "a\rb"}, 400, "'id'"),
        ({"id": "#fragment"}, 400, "'id'"),
        ({"type": "t\r\nid: forged"}, 400, "'type'"),
        ({"retry": "12ms"}, 400, "'retry'"),
        ({"retry": "-1"}, 400, "'retry'"),
    ],
)
def test_bad_publish_input_changes_nothing(
    server: Server,
    streams: Callable[..., Stream],
    fields: dict[str, str],
    status: int,
    names: str,
) -> None:
    stream = streams(server, [BOOK])
    before = (len(server.hub.index), server.hub.ring.head, server.stored())
    response = server.publish(BOOK, **fields)
    assert response.status_code == status
    assert names in response.text
    assert (len(server.hub.index), server.hub.ring.head, server.stored()) == before
    assert server.publish(BOOK, id="fine").status_code == 200
    assert stream.event().id == "fine"  # other subscribers unaffected


def test_oversized_and_duplicated_fields(server: Server) -> None:
    r = server.publish(BOOK, data="x" * (2 << 20))
    assert r.status_code == 413
    with server.client() as client:
        r = client.post(
            HUB,
            content=b"topic=a&data=1&data=2",
            headers={
                "Authorization": f"Bearer {pub_token()}",
                "Content-Type": "application/x-www-form-urlencoded",
            },
        )
        assert r.status_code == 400 and "'data'" in r.text
    assert server.hub.ring.head == 0


def test_unparsable_selector_is_refused_or_exact_and_never_breaks_others(
    server: Server, streams: Callable[..., Stream]
) -> None:
    keep = streams(server, [BOOK])
    odd = streams(server, [BOOK, "https://example.com/{+}"])
    assert odd.response is not None
    if odd.response.status_code == 400:  # the index refused it (InvalidSelector), naming it
        assert "{" in odd.response.text
        assert len(server.hub.index) == 1
    else:  # Mercure: a selector that is not a valid template is matched as a raw string
        assert len(server.hub.index) == 2
        server.publish("https://example.com/{+}", id="raw")
        assert odd.event().id == "raw"
    server.publish(BOOK, id="still")
    assert keep.event().id == "still"


def test_home_without_demo(server: Server) -> None:
    with server.client() as client:
        r = client.get("/")
    assert r.status_code == 200 and HUB in r.text


def test_chunked_oversized_body_and_bad_encoding(server: Server) -> None:
    headers = {
        "Authorization": f"Bearer {pub_token()}",
        "Content-Type": "application/x-www-form-urlencoded",
    }

    def chunks() -> Iterator[bytes]:  # no Content-Length: the hub must count as it reads
        yield b"topic=a&data="
        for _ in range(40):
            yield b"x" * 65536

    with server.client() as client:
        r = client.post(HUB, content=chunks(), headers=headers)
        assert r.status_code == 413
        r = client.post(HUB, content=b"topic=a&data=%ff%fe", headers=headers)
        assert r.status_code == 400 and "UTF-8" in r.text
        r = client.post(HUB, content=b"{}", headers={**headers, "Content-Type": "application/json"})
        assert r.status_code == 400 and "content type" in r.text
        r = client.post(
            HUB,
            files={"topic": (None, "a"), "data": (None, "multi\npart")},
            headers={"Authorization": headers["Authorization"]},
        )
        assert r.status_code == 200
    assert server.hub.ring.head == 1


@pytest.mark.parametrize(
    ("selectors", "names"),
    [
        ([f"https://example.com/{i}" for i in range(101)], "too many topic selectors: 101 > 100"),
        (["https://example.com/" + "x" * 4100], "longer than 4096 characters"),
        (["https://example.com/" + "{+a:2}{+b:2}/" * 7], "more than 12 template variables"),
    ],
)
def test_selectors_beyond_the_limits_are_refused_and_change_nothing(
    server: Server, streams: Callable[..., Stream], selectors: list[str], names: str
) -> None:
    keep = streams(server, [BOOK])
    with server.client() as client:
        refused = client.get(HUB, params=[("topic", s) for s in selectors])
    assert refused.status_code == 400
    assert names in refused.text
    assert len(server.hub.index) == 1
    server.publish(BOOK, id="after")
    assert keep.event().id == "after"


def test_health_while_draining_speaks_for_the_port(server: Server) -> None:
    """A draining process says 503 (take me out), unless it is a worker whose siblings
    serve the same port (a SIGHUP replacement): then the port is healthy."""
    with server.client() as client:
        assert client.get("/healthz").status_code == 200
        server.hub.stopping = True
        try:
            alone = client.get("/healthz")
            assert alone.status_code == 503 and "shutting down" in alone.text
            server.hub.others_serve = lambda: True
            replaced = client.get("/healthz")
            assert replaced.status_code == 200 and "the others serve" in replaced.text
        finally:
            server.hub.stopping = False
            server.hub.others_serve = lambda: False
