"""Mercure 1.0 subscription events and the subscriptions API (draft-08 §8), and the 0.x ones
compatibility mode keeps: the documents and records first, then a real hub on loopback."""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote

import httpx
import jwt
import pytest
from hypothesis import given
from hypothesis import strategies as st

from skipfilter.hub import HubSettings
from skipfilter.hub.frontends.v1.grants import MERCURE_DETAIL
from skipfilter.hub.frontends.v1.matchers import LEGACY
from skipfilter.hub.frontends.v1.subscription_events import (
    Subscription,
    SubscriptionBook,
    read_record,
)
from skipfilter.hub.frontends.v1.subscriptions import etag
from skipfilter.hub.update import Update
from skipfilter.selectors import TypedSelector
from tests.hub.hubtest import PUBLISHER_KEY, SUBSCRIBER_KEY, HubProcess, Server, Stream, sub_token
from tests.hub.test_hub_nodes import nodes, redis_server  # noqa: F401  (fixtures)

SUBS = "/.well-known/mercure/subscriptions"

# -- documents, events and records (no server) ------------------------------------------

matchers = st.tuples(st.text(min_size=1), st.sampled_from(["exact", "urlpattern", LEGACY]))
payloads = st.none() | st.dictionaries(st.text(max_size=5), st.integers(), max_size=3)


@given(matchers, st.text(min_size=1), payloads, st.booleans())
def test_a_record_reads_back_as_the_subscription_it_describes(
    matcher: tuple[str, str], subscriber: str, payload: Any, active: bool
) -> None:
    subscription = Subscription(matcher, subscriber, payload)
    assert read_record(subscription.document(active)) == subscription
    if subscription.legacy:  # what older nodes recorded: the 0.x document
        assert read_record(subscription.legacy_document(active, context=False)) == subscription


def test_a_record_no_hub_wrote_is_refused() -> None:
    good = Subscription(("https://e.com/:id", "urlpattern"), "urn:uuid:1", {"a": 1}).document()
    for forged in (
        {**good, "id": "https://example.com/not-a-subscription"},
        {**good, "id": SUBS + "/exact/https%3A%2F%2Fe.com%2F%3Aid/urn%3Auuid%3A1"},  # wrong type
        {**good, "match_type": "regex"},
        {**good, "match_type": "URLPATTERN"},
        {**good, "match": 3},
        {**good, "subscriber": None},
        {**good, "payload": "not an object"},
        {k: v for k, v in good.items() if k != "match_type"},
    ):
        with pytest.raises(ValueError):
            read_record(forged)


def test_a_1_0_event_is_private_typed_mercure_with_the_listed_members() -> None:
    matcher = ("https://example.com/books/:id", "urlpattern")
    update = Subscription(matcher, "urn:uuid:a b", {"user": "ann"}).event("urn:uuid:e", False)
    topic = SUBS + "/urlpattern/https%3A%2F%2Fexample.com%2Fbooks%2F%3Aid/urn%3Auuid%3Aa%20b"
    assert (update.id, update.topics, update.private, update.type) == (
        "urn:uuid:e",
        (topic,),
        True,
        "mercure",
    )
    assert b"event: mercure\n" in update.encode()
    assert json.loads(update.data) == {
        "id": topic,
        "type": "subscription",
        "match_type": "urlpattern",
        "match": "https://example.com/books/:id",
        "subscriber": "urn:uuid:a b",
        "active": False,
        "payload": {"user": "ann"},
    }


def test_a_0_x_event_keeps_the_0_x_topic_and_json_ld_document() -> None:
    update = Subscription(("https://e.com/{id}", LEGACY), "urn:uuid:1").event("e", True)
    assert update.type is None and update.private  # a 0.x page's onmessage gets it
    topic = SUBS + "/https%3A%2F%2Fe.com%2F%7Bid%7D/urn%3Auuid%3A1"
    assert update.topics == (topic,)
    assert json.loads(update.data) == {
        "@context": "https://mercure.rocks/",
        "id": topic,
        "type": "Subscription",
        "subscriber": "urn:uuid:1",
        "topic": "https://e.com/{id}",
        "active": True,
    }


@dataclass
class _Grants:
    payloads: dict[str, Any]

    def payload_for(self, selector: TypedSelector) -> Any:
        return self.payloads.get(selector.text)


@dataclass
class _Stream:
    id: str
    selectors: tuple[TypedSelector, ...]
    grants: _Grants | None = None


@dataclass
class _Presence:
    records: dict[str, dict[str, Any]] = field(default_factory=dict)

    def add(self, key: str, doc: dict[str, Any]) -> None:
        self.records[key] = doc

    def remove(self, key: str) -> None:
        del self.records[key]


def test_the_book_announces_one_event_per_matcher_and_subscriber_and_records_them() -> None:
    published: list[Update] = []
    ids = iter(range(1000))
    book = SubscriptionBook(published.extend, lambda: f"urn:uuid:{next(ids)}")
    presence = book.presence = _Presence()
    a = _Stream(
        "urn:uuid:a",
        (TypedSelector("https://e.com/:x", "urlpattern"), TypedSelector("https://e.com/1")),
        _Grants({"https://e.com/1": {"p": 1}}),
    )
    b = _Stream("urn:uuid:b", (TypedSelector("https://e.com/1"),))
    book.opened(a)
    book.opened(b)
    docs = [json.loads(u.data) for u in published]
    assert [(d["match"], d["subscriber"], d.get("payload")) for d in docs] == [
        ("https://e.com/:x", "urn:uuid:a", None),
        ("https://e.com/1", "urn:uuid:a", {"p": 1}),
        ("https://e.com/1", "urn:uuid:b", None),
    ]
    assert len({u.id for u in published}) == 3 and len(book) == 3
    assert sorted(presence.records) == sorted(d["id"] for d in docs)
    assert [s.subscriber for _, s in book.held()] == ["urn:uuid:a", "urn:uuid:a", "urn:uuid:b"]
    ((position, _),) = list(book.held())[2:]
    assert [s.subscriber for _, s in book.held(position)] == ["urn:uuid:b"]
    assert book.find(docs[1]["id"], "urn:uuid:a") == read_record(docs[1])
    published.clear()
    book.closed(a)
    book.closed(a)  # once only
    ended = [json.loads(u.data) for u in published]
    assert [(d["match"], d["active"], d.get("payload")) for d in ended] == [
        ("https://e.com/:x", False, None),
        ("https://e.com/1", False, {"p": 1}),  # the end carries the payload the start did
    ]
    assert list(presence.records) == [docs[2]["id"]] and len(book) == 1
    assert book.find(docs[1]["id"], "urn:uuid:a") is None
    revived = book.recorded_update({**docs[2], "active": False})
    assert json.loads(revived.data)["active"] is False and revived.type == "mercure"


# -- a real hub on loopback: Mercure 1.0 ----------------------------------------------------

ISSUER = "https://issuer.test"
AUDIENCE = "https://hub.test/.well-known/mercure"
WATCH = SUBS + "/*"  # a URL Pattern, relative: resolved against the hub's URL
BOOK = "https://example.com/books/1"
BOOKS = "https://example.com/books/:id"
USER = "https://example.com/users/1"


def grant(*matchers: str | tuple[str, str], payload: Any = None) -> dict[str, Any]:
    """A Mercure authorization detail granting ``subscribe`` (a string is an exact match)."""
    topics = [
        {"match": m} if isinstance(m, str) else {"match": m[0], "match_type": m[1]}
        for m in matchers
    ]
    detail = {"type": MERCURE_DETAIL, "actions": ["subscribe"], "topics": topics}
    if payload is not None:
        detail["payload"] = payload
    return detail


def publish_all() -> str:
    """A 1.0 publisher token for every topic."""
    detail = {"type": MERCURE_DETAIL, "actions": ["publish"], "topics": [{"match": "*"}]}
    return access_token(detail, key=PUBLISHER_KEY)


def access_token(*details: dict[str, Any], key: str = SUBSCRIBER_KEY, sub: str = "u1") -> str:
    """A 1.0 access token (RFC 9068) of ``ISSUER`` for the hub, with these details."""
    now = int(time.time())
    claims = {
        "iss": ISSUER,
        "aud": AUDIENCE,
        "sub": sub,
        "iat": now,
        "exp": now + 86400,  # module-level tokens outlive the whole suite
        "authorization_details": list(details),
    }
    return jwt.encode(claims, key, algorithm="HS256", headers={"typ": "at+jwt"})


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


#: What a client watching every subscription holds: the events' namespace and the API's.
WATCHER_TOKEN = access_token(grant((WATCH, "urlpattern"), SUBS))
WATCHER = bearer(WATCHER_TOKEN)


@pytest.fixture
def v1_settings(settings: HubSettings) -> HubSettings:
    return settings.with_changes(
        protocol_version_compatibility=None,
        trusted_issuers=(ISSUER,),
        resource_identifier=AUDIENCE,
        subscriptions=True,
    )


@pytest.fixture
def v1_server(make_server: Callable[..., Server], v1_settings: HubSettings) -> Server:
    return make_server(v1_settings)


def subscribe(
    open_stream: Callable[..., Stream],
    server: Server,
    token: str | None = None,
    **params: str,
) -> Stream:
    """A 1.0 subscriber: ``match=``, ``match_urlpattern=`` (one each, as keyword arguments)."""
    headers = bearer(token) if token else {}
    return open_stream(server, [], params=params, headers=headers)


def documents(watcher: Stream, count: int) -> list[dict[str, Any]]:
    """The next ``count`` subscription events: SSE type ``mercure``, an id, JSON bodies."""
    found = []
    for _ in range(count):
        event = watcher.event(10)
        assert event.event == "mercure" and event.id, event
        found.append(json.loads(event.data))
    return found


def test_an_event_per_subscription_created_and_ended_private_typed_with_its_payload(
    v1_server: Server, streams: Callable[..., Stream]
) -> None:
    watcher = subscribe(streams, v1_server, WATCHER_TOKEN, match_urlpattern=WATCH)
    (own,) = documents(watcher, 1)  # its own subscription, announced to itself
    assert (own["match_type"], own["match"], own["active"]) == ("urlpattern", WATCH, True)
    # allowed on books only: subscription events are private
    blind = subscribe(streams, v1_server, access_token(grant(BOOK)), match_urlpattern=WATCH)
    documents(watcher, 1)
    token = access_token(
        grant((BOOKS, "urlpattern"), payload={"books": True}),
        grant(("https://example.com/*", "urlpattern"), payload={"other": 1}),
    )
    reader = subscribe(streams, v1_server, token, match=USER, match_urlpattern=BOOKS)
    created = sorted(documents(watcher, 2), key=lambda d: d["match_type"])
    subscriber = created[0]["subscriber"]
    assert subscriber.startswith("urn:uuid:") and subscriber != own["subscriber"]
    expected = [("exact", USER, {"other": 1}), ("urlpattern", BOOKS, {"books": True})]
    for doc, (match_type, match, payload) in zip(created, expected, strict=True):
        assert doc == {
            "id": f"{SUBS}/{match_type}/{quote(match, safe='')}/{quote(subscriber, safe='')}",
            "type": "subscription",
            "match_type": match_type,
            "match": match,
            "subscriber": subscriber,  # one id per connection, across its subscriptions
            "active": True,
            "payload": payload,  # the first grant matching the matcher taken as a topic
        }
    reader.close()
    ended = sorted(documents(watcher, 2), key=lambda d: d["match_type"])
    assert ended == [{**doc, "active": False} for doc in created]
    blind.nothing()


def test_subscriber_ids_are_the_hubs_own_one_per_connection(
    v1_server: Server, streams: Callable[..., Stream]
) -> None:
    watcher = subscribe(streams, v1_server, WATCHER_TOKEN, match_urlpattern=WATCH)
    documents(watcher, 1)
    forged = "urn:uuid:00000000-0000-0000-0000-000000000000"
    token = access_token(grant(BOOK), sub=forged)
    for _ in range(2):  # one token on two connections (two tabs): two subscribers
        streams(
            v1_server,
            [],
            params={"match": BOOK, "subscriber": forged, "match_urlpattern": BOOKS},
            headers={**bearer(token), "Mercure-Subscriber": forged},
        )
    docs = documents(watcher, 4)
    ids = [d["subscriber"] for d in docs]
    assert ids[0] == ids[1] != ids[2] == ids[3]  # shared by a connection's subscriptions
    assert all(i.startswith("urn:uuid:") and forged not in i for i in ids)
    assert all(d["id"].endswith("/" + quote(d["subscriber"], safe="")) for d in docs)


def wait_events(server: Server, count: int) -> None:
    """Wait until ``count`` updates (subscription events are stored in the background) have
    been delivered: the API's cursor then names the last one."""
    deadline = time.monotonic() + 10
    while server.hub.ring.head < count:
        assert time.monotonic() < deadline, server.hub.ring.head
        time.sleep(0.01)


def link_cursor(response: httpx.Response) -> str:
    """The ``last-event-id`` of the response's ``rel="mercure"`` link, checking the link."""
    (link,) = [v for v in response.headers["link"].split(", <") if 'rel="mercure"' in v]
    assert link.lstrip("<").startswith("/.well-known/mercure>"), link
    assert '; type="mercure"' in link and '; content-type="application/json"' in link
    cursors: list[str] = re.findall(r'; last-event-id="([^"]*)"', link)
    (cursor,) = cursors
    return cursor


def test_the_api_lists_collections_and_single_subscriptions_as_plain_json(
    v1_server: Server, streams: Callable[..., Stream]
) -> None:
    token = access_token(grant((BOOKS, "urlpattern"), payload={"p": 1}))
    subscribe(streams, v1_server, token, match=BOOK, match_urlpattern=BOOKS)
    subscribe(streams, v1_server, match=BOOK)
    wait_events(v1_server, 3)
    with v1_server.client(headers=WATCHER) as client:
        every = client.get(SUBS)
        assert every.status_code == 200, every.text
        assert every.headers["content-type"] == "application/json"
        assert link_cursor(every) == v1_server.hub.last_id
        body = every.json()
        assert (body["id"], body["type"]) == (SUBS, "subscriptions")
        assert sorted((d["match_type"], d["match"]) for d in body["subscriptions"]) == [
            ("exact", BOOK),
            ("exact", BOOK),
            ("urlpattern", BOOKS),
        ]
        path = f"{SUBS}/exact/{quote(BOOK, safe='')}"
        by_matcher = client.get(path)
        assert by_matcher.json()["id"] == path and by_matcher.json()["type"] == "subscriptions"
        docs = by_matcher.json()["subscriptions"]
        assert len(docs) == 2 and {d["match"] for d in docs} == {BOOK}
        (paid,) = [d for d in docs if "payload" in d]
        one = client.get(paid["id"])
        assert one.status_code == 200 and one.headers["content-type"] == "application/json"
        assert one.json() == paid == {**paid, "payload": {"p": 1}, "active": True}
        assert link_cursor(one) == v1_server.hub.last_id
        unknown = paid["id"].rsplit("/", 1)[0] + "/" + quote("urn:uuid:nobody", safe="")
        assert client.get(unknown).status_code == 404
        assert client.get(f"{SUBS}/exact/{quote(USER, safe='')}").json()["subscriptions"] == []
        for kind in ("regex", "EXACT", "mercure"):
            refused = client.get(f"{SUBS}/{kind}/{quote(BOOK, safe='')}")
            assert refused.status_code == 400 and kind in refused.text
        assert client.get(f"{SUBS}/regex/{quote(BOOK, safe='')}/x").status_code == 400


def test_the_api_needs_a_subscribe_grant_on_the_escaped_request_path(
    v1_server: Server, streams: Callable[..., Stream]
) -> None:
    subscribe(streams, v1_server, match=BOOK)
    wait_events(v1_server, 1)
    path = f"{SUBS}/exact/{quote(BOOK, safe='')}"
    with v1_server.client() as client:
        missing = client.get(SUBS)
        assert missing.status_code == 401
        assert missing.headers["www-authenticate"].startswith("Bearer ")
        narrow = client.get(SUBS, headers=bearer(access_token(grant(BOOK))))
        assert narrow.status_code == 403
        assert 'error="insufficient_scope"' in narrow.headers["www-authenticate"]
        exact = bearer(access_token(grant(path)))  # byte for byte the escaped path
        assert client.get(path, headers=exact).status_code == 200
        assert client.get(path + "?last_event_id=x", headers=exact).status_code == 200
        assert client.get(SUBS, headers=exact).status_code == 403
        unescaped = bearer(access_token(grant(f"{SUBS}/exact/{BOOK}")))
        assert client.get(path, headers=unescaped).status_code == 403
        pattern = bearer(access_token(grant((SUBS + "/exact/*", "urlpattern"))))
        assert client.get(path, headers=pattern).status_code == 200
        assert client.get(SUBS, headers=pattern).status_code == 403


def test_the_api_revalidates_with_an_etag_of_the_cursor(
    v1_server: Server, streams: Callable[..., Stream]
) -> None:
    subscribe(streams, v1_server, match=BOOK)
    wait_events(v1_server, 1)
    with v1_server.client(headers=WATCHER) as client:
        first = client.get(SUBS)
        tag = first.headers["etag"]
        assert tag == f'"{v1_server.hub.last_id}"'
        assert first.headers["cache-control"] == "must-revalidate"
        again = client.get(SUBS, headers={"If-None-Match": tag})
        assert again.status_code == 304 and again.headers["etag"] == tag and not again.content
        assert client.get(SUBS, headers={"If-None-Match": '"other"'}).status_code == 200
        subscribe(streams, v1_server, match=USER)  # a change: a new event, a new cursor
        wait_events(v1_server, 2)
        fresh = client.get(SUBS, headers={"If-None-Match": tag})
        assert fresh.status_code == 200 and fresh.headers["etag"] != tag
        assert len(fresh.json()["subscriptions"]) == 2


def test_an_id_a_header_cannot_carry_leaves_an_older_cursor_never_a_500(
    v1_server: Server, streams: Callable[..., Stream]
) -> None:
    assert v1_server.publish(BOOK, auth=publish_all(), id="plain-1").status_code == 200
    with v1_server.client(headers=WATCHER) as client:
        assert link_cursor(client.get(SUBS)) == "plain-1"
        for odd in ("日本-2", "ünï-3"):  # refused at publish; a history kept from before holds them
            assert v1_server.publish(BOOK, auth=publish_all(), id=odd).status_code == 400
            v1_server.call(v1_server.hub.publish(Update(odd, (BOOK,), "", False, None, None)))
            wait_events(v1_server, 3 if odd.startswith("ü") else 2)
            listing = client.get(SUBS)
            assert listing.status_code == 200
            assert link_cursor(listing) == "plain-1"  # resuming there replays a little more
            assert listing.headers["etag"] == etag(odd)  # the tag still changes with the id
            again = client.get(SUBS, headers={"If-None-Match": listing.headers["etag"]})
            assert again.status_code == 304


def test_the_cursor_resumes_the_events_the_listing_does_not_show(
    v1_server: Server, streams: Callable[..., Stream]
) -> None:
    first = subscribe(streams, v1_server, match=BOOK)
    wait_events(v1_server, 1)
    with v1_server.client(headers=WATCHER) as client:
        listing = client.get(SUBS)
    (listed,) = listing.json()["subscriptions"]
    first.close()  # ended after the listing: only the events say so
    wait_events(v1_server, 2)  # the hub saw the end before the next subscription began
    subscribe(streams, v1_server, match=USER)
    wait_events(v1_server, 3)
    watcher = subscribe(
        streams,
        v1_server,
        WATCHER_TOKEN,
        match_urlpattern=WATCH,
        last_event_id=link_cursor(listing),
    )
    seen = documents(watcher, 3)  # the end, the new one, the watcher's own
    assert {**listed, "active": False} == seen[0]
    assert (seen[1]["match"], seen[1]["active"]) == (USER, True)


def test_cross_origin_clients_can_read_the_link_header(
    make_server: Callable[..., Server], v1_settings: HubSettings
) -> None:
    server = make_server(v1_settings.with_changes(cors_origins=("https://app.example",)))
    with server.client(headers={**WATCHER, "Origin": "https://app.example"}) as client:
        response = client.get(SUBS)
    assert response.status_code == 200
    exposed = response.headers["access-control-expose-headers"].lower().replace(" ", "")
    assert "link" in exposed.split(",")


def test_the_collections_come_in_bounded_pages(
    make_server: Callable[..., Server], v1_settings: HubSettings, streams: Callable[..., Stream]
) -> None:
    server = make_server(v1_settings.with_changes(subscriptions_page=2))
    for i in range(5):
        subscribe(streams, server, match=f"{BOOK}/{i}")
    wait_events(server, 5)
    seen: list[str] = []
    url: str | None = SUBS
    with server.client(headers=WATCHER) as client:
        while url is not None:
            page = client.get(url)
            assert page.status_code == 200 and page.json()["id"] == SUBS
            assert len(page.json()["subscriptions"]) <= 2
            seen += [d["match"] for d in page.json()["subscriptions"]]
            url = page.json().get("next")
            assert (url is None) == ('rel="next"' not in page.headers["link"])
    assert sorted(seen) == [f"{BOOK}/{i}" for i in range(5)]


FORGED_CURSORS = ["l\u00b2:0", "l0:\u0663", "l" + "9" * 5000, "l1:" + "9" * 21, "l:0", "x1:0"]


def test_a_forged_cursor_is_a_400_naming_it_never_a_503(v1_server: Server) -> None:
    """A cursor the hub never handed out (non-ASCII digits, past what ``int`` reads) is the
    client's mistake: 400 naming it; the next request with a real one still answers."""
    with v1_server.client(headers=WATCHER) as client:
        for cursor in FORGED_CURSORS:
            bad = client.get(SUBS, params={"after": cursor})
            assert bad.status_code == 400, (cursor, bad.text)
            assert f"invalid 'after' cursor {cursor[:80]!r}" in bad.text
            assert client.get(SUBS, params={"after": "l0:0"}).status_code == 200


def test_a_forged_shared_cursor_is_refused_before_any_read() -> None:
    from skipfilter.hub.http.subscriptions_api import InvalidCursor, _presence_cursor

    assert _presence_cursor("r12:node-a") == ("node-a", 12)
    for cursor in ("r\u00b2:node", "r" + "9" * 5000 + ":node", "r1:", "l1:node"):
        with pytest.raises(InvalidCursor, match="invalid 'after' cursor"):
            _presence_cursor(cursor)


# -- several nodes over a real redis-server ---------------------------------------------------


def test_every_node_lists_and_a_dead_nodes_subscriptions_are_announced_ended(
    nodes: Callable[..., HubProcess],  # noqa: F811
) -> None:
    flags = ("--subscriptions", "--node-ttl", "1", "--issuer", ISSUER)
    a = nodes(*flags, "--resource-identifier", AUDIENCE)
    b = nodes(*flags, "--resource-identifier", AUDIENCE)
    watcher = Stream(b, [], params={"match_urlpattern": WATCH}, headers=WATCHER)
    documents(watcher, 1)
    token = access_token(grant((BOOKS, "urlpattern"), payload={"on": "a"}))
    on_a = Stream(a, [], params={"match": BOOK}, headers=bearer(token))
    (created,) = documents(watcher, 1)
    assert (created["match"], created["payload"], created["active"]) == (BOOK, {"on": "a"}, True)
    deadline = time.monotonic() + 10
    while True:
        listed = httpx.get(b.url + SUBS, headers=WATCHER, timeout=10).json()["subscriptions"]
        if created in listed:
            break
        assert time.monotonic() < deadline, listed
        time.sleep(0.1)
    one = httpx.get(b.url + created["id"], headers=WATCHER, timeout=10)
    assert one.status_code == 200 and one.json() == created  # found on the node that holds it
    a.kill()
    ended = documents(watcher, 1)  # b reaps a, and says so in 1.0's words
    assert ended == [{**created, "active": False}]
    assert httpx.get(b.url + created["id"], headers=WATCHER, timeout=10).status_code == 404
    for stream in (watcher, on_a):
        stream.close()


# -- compatibility mode: 0.x subscriptions keep 0.x's events and API ----------------------------

LEGACY_EVENTS = SUBS + "/{topic}/{subscriber}"


def test_compatibility_mode_keeps_0_x_subscriptions_0_x_shaped_beside_1_0_ones(
    make_server: Callable[..., Server], v1_settings: HubSettings, streams: Callable[..., Stream]
) -> None:
    server = make_server(v1_settings.with_changes(protocol_version_compatibility=8))
    old_token = sub_token(SUBS, SUBS + "/{topic}", LEGACY_EVENTS)
    old_watcher = streams(server, [LEGACY_EVENTS], headers=bearer(old_token))
    own = json.loads(old_watcher.event(10).data)
    assert (own["type"], own["topic"]) == ("Subscription", LEGACY_EVENTS)
    new_watcher = subscribe(streams, server, WATCHER_TOKEN, match_urlpattern=WATCH)
    documents(new_watcher, 1)
    streams(server, [BOOK], headers=bearer(sub_token(BOOK, payload={"user": "ann"})))
    event = old_watcher.event(10)
    assert event.event == "message"  # no SSE type: a 0.x page's onmessage gets it
    legacy = json.loads(event.data)
    subscriber = legacy["subscriber"]
    legacy_id = f"{SUBS}/{quote(BOOK, safe='')}/{quote(subscriber, safe='')}"
    assert legacy == {
        "@context": "https://mercure.rocks/",
        "id": legacy_id,
        "type": "Subscription",
        "subscriber": subscriber,
        "topic": BOOK,
        "active": True,
        "payload": {"user": "ann"},
    }
    assert json.loads(new_watcher.event(10).data) == legacy  # in its namespace too
    subscribe(streams, server, match=BOOK)
    (modern,) = documents(new_watcher, 1)
    assert modern["match_type"] == "exact" and "topic" not in modern
    old_watcher.nothing()  # a 1.0 subscription's topic is not of 0.x's shape
    wait_events(server, 4)
    with server.client(headers=bearer(old_token)) as client:
        by_topic = client.get(f"{SUBS}/{quote(BOOK, safe='')}")  # 0.x's route, 0.x's answer
        assert by_topic.headers["content-type"] == "application/ld+json"
        body = by_topic.json()
        assert body["@context"] == "https://mercure.rocks/" and body["type"] == "Subscriptions"
        assert body["lastEventID"] == server.hub.last_id
        assert body["subscriptions"] == [{k: v for k, v in legacy.items() if k != "@context"}]
        one = client.get(legacy_id).json()
        assert one == {**legacy, "lastEventID": server.hub.last_id}
        missing = f"{SUBS}/{quote(BOOK, safe='')}/{quote('urn:uuid:nope', safe='')}"
        assert client.get(missing).status_code == 404
    with server.client(headers=WATCHER) as client:
        by_matcher = client.get(f"{SUBS}/exact/{quote(BOOK, safe='')}")  # 1.0's, not a topic
        assert by_matcher.headers["content-type"] == "application/json"
        assert by_matcher.json()["subscriptions"] == [modern]
        every = client.get(SUBS).json()
        assert every["type"] == "subscriptions" and every["lastEventID"] == server.hub.last_id
        listed = {d["id"]: d for d in every["subscriptions"]}
        assert listed[modern["id"]] == modern
        assert listed[legacy_id]["topic"] == BOOK  # 0.x's member, in the 1.0 collection
