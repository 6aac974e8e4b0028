"""Mercure 1.0 end to end: subscribe (draft-08 §3, §4), publish (§5, §6.5), private updates
(§6.6), errors (§6.2), on a real hub with real SSE clients, on both stream paths.

Each test names the MUST of the digest's checklist it covers (``mercure1-digest.md`` §14).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import httpx
import jwt
import pytest

from skipfilter.hub import HubSettings
from skipfilter.hub.frontends.v1.grants import MERCURE_DETAIL
from skipfilter.hub.update import EARLIEST, Update
from tests.hub.hubtest import HUB, SUBSCRIBER_KEY, Server, Stream
from tests.hub.v1test import (
    ISSUER,
    audience,
    bearer,
    publish,
    publisher,
    subscriber,
    v1_settings,
)

BOOK = "https://example.com/books/1"
BOOKS = "https://example.com/books/:id"


@pytest.fixture
def v1(tmp_path: Path) -> HubSettings:
    return v1_settings(tmp_path)


@pytest.fixture
def hub(make_server: Callable[..., Server], v1: HubSettings) -> Server:
    return make_server(v1)


def subscribe(
    streams: Callable[..., Stream], server: Server, *params: tuple[str, str], **kw: object
) -> Stream:
    return streams(server, [], params=list(params), **kw)


# -- subscribe --------------------------------------------------------------------------


def test_match_and_match_urlpattern_subscribe_with_get(
    hub: Server, streams: Callable[..., Stream]
) -> None:
    """1: a GET with ``match=`` (exact) and ``match_urlpattern=`` receives what they select."""
    exact = subscribe(streams, hub, ("match", BOOK))
    pattern = subscribe(streams, hub, ("match_urlpattern", BOOKS))
    also_exact = subscribe(streams, hub, ("match_exact", "https://example.com/books/2"))
    assert publish(hub, BOOK, publisher(hub), id="one").status_code == 200
    assert publish(hub, "https://example.com/books/2", publisher(hub), id="two").status_code == 200
    assert exact.event().id == "one"
    assert [pattern.event().id, pattern.event().id] == ["one", "two"]
    assert also_exact.event().id == "two"
    exact.nothing()


def test_query_method_unions_the_body_with_the_query(hub: Server) -> None:
    """1 (QUERY): the form body's matchers join the query string's; ``last_event_id`` of the
    query wins over the body's."""
    publish(hub, BOOK, publisher(hub), id="a")
    publish(hub, BOOK, publisher(hub), id="b")
    body = b"match_urlpattern=https%3A%2F%2Fexample.com%2Fbooks%2F%3Aid&last_event_id=earliest"
    headers = {"Content-Type": "application/x-www-form-urlencoded"}
    query = f"{HUB}?match=urn:x&last_event_id=a"
    with hub.client() as client, client.stream("QUERY", query, content=body, headers=headers) as r:
        assert r.status_code == 200
        assert r.headers["mercure-last-event-id"] == "a"
        lines = r.iter_lines()
        assert [next(lines) for _ in range(3)][1:] == ["id: b", "data: hello"]
        (stream,) = hub.hub.streams()
        assert [s.syntax for s in stream.selectors] == ["exact", "urlpattern"]


def test_topic_parameter_is_refused_naming_its_replacement(hub: Server) -> None:
    """The issue's first symptom, reversed: 1.0 mode answers ``topic=`` with a 400 that
    names ``match``, and ``match_urlpattern`` alone is a subscription."""
    with hub.client() as client:
        refused = client.get(HUB, params={"topic": BOOK})
        assert refused.status_code == 400 and "match" in refused.text
        assert client.get(HUB, params={"Match": BOOK}).status_code == 400


def test_wildcard_exact_bytes_relative_patterns_and_no_ignore_case(
    hub: Server, streams: Callable[..., Stream]
) -> None:
    """9: ``*`` of both types matches every topic (a non-URL one too); exact compares bytes
    (no resolution, no normalization); relative patterns and topics resolve against the
    hub's URL; a topic that is no URL matches no pattern; URL Patterns are case-sensitive."""
    star_exact = subscribe(streams, hub, ("match", "*"))
    star_pattern = subscribe(streams, hub, ("match_urlpattern", "*"))
    upper = subscribe(streams, hub, ("match", "https://EXAMPLE.com/books/1"))
    relative = subscribe(streams, hub, ("match_urlpattern", "/books/:id"))
    case = subscribe(streams, hub, ("match_urlpattern", "https://example.com/Books/:id"))
    any_host = subscribe(streams, hub, ("match_urlpattern", "https://*.example.com/*"))
    token = publisher(hub)
    for topic, update_id in [
        (BOOK, "absolute"),
        ("/books/7", "relative"),
        ("not a url", "no-url"),
        ("https://a.example.com/x", "sub-host"),
    ]:
        assert publish(hub, topic, token, id=update_id).status_code == 200
    expected = ["absolute", "relative", "no-url", "sub-host"]
    assert [star_exact.event().id for _ in expected] == expected
    assert [star_pattern.event().id for _ in expected] == expected
    assert relative.event().id == "relative"
    assert any_host.event().id == "sub-host"
    for stream in (upper, case, relative, any_host):
        stream.nothing()


def test_stream_is_event_stream_with_id_and_data_split_per_line(
    hub: Server, streams: Callable[..., Stream]
) -> None:
    """12: ``text/event-stream``, one ``data:`` line per line of data, an ``id`` on every
    event (generated ones included)."""
    raw = subscribe(streams, hub, ("match", BOOK), raw=True)
    assert raw.response is not None
    assert raw.response.headers["content-type"].startswith("text/event-stream")
    publish(hub, BOOK, publisher(hub), data="a\nb\r\nc\rd", id="multi")
    publish(hub, BOOK, publisher(hub), data="x")
    lines: list[str] = []
    while len([line for line in lines if line.startswith("id:")]) < 2:
        lines.append(raw.next())
    events = "\n".join(lines)
    assert "id: multi\ndata: a\ndata: b\ndata: c\ndata: d\n" in events
    assert events.count("id: urn:uuid:") == 1


def test_private_update_needs_a_subscribe_grant_whatever_the_matcher(
    hub: Server, streams: Callable[..., Stream]
) -> None:
    """11 (live): a private update reaches only subscribers whose token grants ``subscribe``
    on one of its topics, even when their matcher selects it."""
    granted = subscribe(
        streams, hub, ("match", "*"), headers=bearer(subscriber(hub, urlpatterns=(BOOKS,)))
    )
    other_grant = subscribe(
        streams,
        hub,
        ("match", "*"),
        headers=bearer(subscriber(hub, "https://example.com/users/1")),
    )
    anonymous = subscribe(streams, hub, ("match_urlpattern", BOOKS))
    assert publish(hub, BOOK, publisher(hub), private="", id="secret").status_code == 200
    assert publish(hub, BOOK, publisher(hub), id="public").status_code == 200
    assert [granted.event().id, granted.event().id] == ["secret", "public"]
    assert other_grant.event().id == "public"
    assert anonymous.event().id == "public"


def mixed_token(server: Server, *details: tuple[list[str], str]) -> str:
    """A subscriber's access token with one detail per ``(actions, exact topic)``."""
    now = int(time.time())
    claims = {
        "iss": ISSUER,
        "aud": audience(server),
        "iat": now,
        "exp": now + 3600,
        "authorization_details": [
            {"type": MERCURE_DETAIL, "actions": actions, "topics": [{"match": topic}]}
            for actions, topic in details
        ],
    }
    return jwt.encode(claims, SUBSCRIBER_KEY, algorithm="HS256", headers={"typ": "at+jwt"})


def test_a_publish_grant_never_lets_its_holder_read_private_updates(
    hub: Server, streams: Callable[..., Stream]
) -> None:
    """11 with a token of several details: only ``subscribe`` ones open private updates; a
    publish-only detail on a topic refuses them there, live and on replay."""
    user = "https://example.com/users/1"
    both = "https://example.com/books/2"
    token = mixed_token(
        hub, (["publish"], BOOK), (["subscribe"], user), (["publish", "subscribe"], both)
    )
    headers = bearer(token)
    live = subscribe(
        streams, hub, ("match", BOOK), ("match", user), ("match", both), headers=headers
    )
    publisher_token = publisher(hub)
    for topic, name in ((BOOK, "book"), (user, "user"), (both, "both")):
        assert publish(hub, topic, publisher_token, private="", id=name).status_code == 200
    assert publish(hub, BOOK, publisher_token, id="public-book").status_code == 200
    assert [live.event().id for _ in range(3)] == ["user", "both", "public-book"]
    live.nothing()
    replayed = subscribe(
        streams,
        hub,
        ("match", BOOK),
        ("match", user),
        headers={**headers, "Last-Event-ID": EARLIEST},
    )
    assert [replayed.event().id for _ in range(2)] == ["user", "public-book"]
    replayed.nothing()


def test_replay_rechecks_private_updates_with_the_reconnecting_token(
    hub: Server, streams: Callable[..., Stream]
) -> None:
    """11 (replay) and 37: on reconnection private updates are judged by the token presented
    now, not the one the update was published under."""
    publish(hub, BOOK, publisher(hub), private="on", id="secret")
    publish(hub, BOOK, publisher(hub), id="public")
    without = subscribe(
        streams,
        hub,
        ("match", BOOK),
        ("last_event_id", "earliest"),
        headers=bearer(subscriber(hub, "https://example.com/users/1")),
    )
    assert without.event().id == "public"
    without.nothing()
    with_grant = subscribe(
        streams,
        hub,
        ("match", BOOK),
        ("last_event_id", "earliest"),
        headers=bearer(subscriber(hub, BOOK)),
    )
    assert [with_grant.event().id, with_grant.event().id] == ["secret", "public"]


def test_credentialed_cors_never_allows_any_origin(
    make_server: Callable[..., Server], tmp_path: Path
) -> None:
    """10: an explicitly listed origin gets itself and credentials; an unlisted one nothing;
    ``*`` lets any origin read without credentials. On the stream (native or ASGI) and on
    the publish response (the CORS middleware)."""
    listed = make_server(v1_settings(tmp_path, cors_origins=("https://app.example",)))
    (tmp_path / "star").mkdir()
    star = make_server(v1_settings(tmp_path / "star", cors_origins=("*",)))

    def headers(server: Server, origin: str, method: str = "GET") -> httpx.Headers:
        with server.client() as client:
            if method == "GET":
                with client.stream(
                    "GET", HUB, params={"match": BOOK}, headers={"Origin": origin}
                ) as response:
                    assert response.status_code == 200
                    return response.headers
            response = client.post(
                HUB,
                data={"topic": BOOK, "data": "x"},
                headers={"Origin": origin, **bearer(publisher(server))},
            )
            assert response.status_code == 200
            return response.headers

    for method in ("GET", "POST"):
        ok = headers(listed, "https://app.example", method)
        assert ok["access-control-allow-origin"] == "https://app.example"
        assert ok["access-control-allow-credentials"] == "true"
        exposed = ok["access-control-expose-headers"].lower()
        assert "link" in exposed and "mercure-last-event-id" in exposed
        evil = headers(listed, "https://evil.example", method)
        assert "access-control-allow-origin" not in evil
        anyone = headers(star, "https://evil.example", method)
        assert anyone["access-control-allow-origin"] == "*"
        assert "access-control-allow-credentials" not in anyone


def test_subscribe_refusals_carry_cors_headers_for_a_listed_origin(
    make_server: Callable[..., Server], tmp_path: Path
) -> None:
    """10 on refusals: a cross-origin subscriber reads its 400 and its 401 (the challenge
    saying its token expired included), on both stream paths; an unlisted origin, nothing."""
    server = make_server(
        v1_settings(tmp_path, cors_origins=("https://app.example",), anonymous=False)
    )
    expired = subscriber(server, BOOK, now=time.time() - 7200)
    cases = [
        ({}, {"match": BOOK}, 401),  # no token
        (bearer(expired), {"match": BOOK}, 401),
        (bearer(subscriber(server, BOOK)), {}, 400),  # no matcher
        (bearer(subscriber(server, BOOK)), {"match_urlpattern": "https://e.com/(("}, 400),
    ]
    with server.client() as client:
        for headers, params, status in cases:
            listed = client.get(
                HUB, params=params, headers={"Origin": "https://app.example", **headers}
            )
            assert listed.status_code == status, listed.text
            assert listed.headers["access-control-allow-origin"] == "https://app.example"
            assert listed.headers["access-control-allow-credentials"] == "true"
            if status == 401:
                exposed = listed.headers["access-control-expose-headers"].lower()
                assert "www-authenticate" in exposed
                assert listed.headers["www-authenticate"].startswith("Bearer")
            evil = client.get(
                HUB, params=params, headers={"Origin": "https://evil.example", **headers}
            )
            assert evil.status_code == status
            assert "access-control-allow-origin" not in evil.headers


# -- publish ------------------------------------------------------------------------------


def test_publish_success_is_200_text_plain_with_the_id(
    hub: Server, streams: Callable[..., Stream]
) -> None:
    """22: 200, ``text/plain; charset=utf-8``, the body is the id; a generated id is an IRI."""
    stream = subscribe(streams, hub, ("match", BOOK))
    given = publish(hub, BOOK, publisher(hub), id="https://example.com/events/1")
    assert given.status_code == 200
    assert given.headers["content-type"] == "text/plain; charset=utf-8"
    assert given.text == "https://example.com/events/1"
    generated = publish(hub, BOOK, publisher(hub))
    assert generated.status_code == 200 and generated.text.startswith("urn:uuid:")
    assert [stream.event().id, stream.event().id] == [given.text, generated.text]


def test_publish_grant_must_cover_every_topic(hub: Server, streams: Callable[..., Stream]) -> None:
    """23: a token granting only some of the topics: 403 ``insufficient_scope``, nothing
    stored, nothing delivered."""
    stream = subscribe(streams, hub, ("match", "*"))
    token = publisher(hub, urlpatterns=(BOOKS,))
    refused = publish(hub, [BOOK, "https://example.com/users/1"], token)
    assert refused.status_code == 403
    assert "https://example.com/users/1" in refused.text
    assert 'error="insufficient_scope"' in refused.headers["www-authenticate"]
    subscribe_only = subscriber(hub, "*")
    from skipfilter.hub.frontends.v1.access_tokens import mint_access_token
    from tests.hub.hubtest import PUBLISHER_KEY

    no_publish = mint_access_token(
        "https://issuer.example", audience(hub), PUBLISHER_KEY, subscribe=[("*", "exact")]
    )
    assert publish(hub, BOOK, no_publish).status_code == 403
    assert publish(hub, BOOK, subscribe_only).status_code == 401  # signed with the other key
    assert hub.stored() == 0
    assert publish(hub, BOOK, token, id="ok").status_code == 200
    assert stream.event().id == "ok"


def test_publish_limits_are_413(make_server: Callable[..., Server], tmp_path: Path) -> None:
    """24 and 21: a body over the limit, and too many topics, are 413."""
    server = make_server(v1_settings(tmp_path, max_body=2000, max_topics=3))
    big = publish(server, BOOK, publisher(server), data="x" * 3000)
    assert big.status_code == 413 and "2000" in big.text
    many = publish(server, [f"https://example.com/{i}" for i in range(4)], publisher(server))
    assert many.status_code == 413
    assert server.stored() == 0


@pytest.mark.parametrize(
    "topic",
    [
        "/.well-known/mercure/subscriptions/exact/x/y",
        "https://any.host/.well-known/mercure/subscriptions/a",
        "/.well-known/%6Dercure/x",
        "*",
    ],
)
def test_reserved_topics_are_400_whatever_the_token(hub: Server, topic: str) -> None:
    """25: the reserved namespace (resolved against the hub's URL) and ``*`` are a 400 for a
    token holding ``{"match": "*"}`` and for one without the grant alike."""
    for token in (publisher(hub), publisher(hub, BOOK)):
        response = publish(hub, topic, token)
        assert response.status_code == 400, response.text
        assert "www-authenticate" not in response.headers
    assert hub.stored() == 0


# -- errors -------------------------------------------------------------------------------


def test_every_401_and_403_carries_a_bearer_challenge_with_resource_metadata(
    make_server: Callable[..., Server], tmp_path: Path
) -> None:
    """47: no token, a bad token, an expired one, another audience, insufficient scope, a
    closed hub without a token: each refusal names the protected resource metadata."""
    server = make_server(v1_settings(tmp_path, anonymous=False, subscriptions=True))
    metadata = f"{server.url}/.well-known/oauth-protected-resource{HUB}"
    form = {"topic": BOOK, "data": "x"}
    with server.client() as client:
        responses = {
            "publish, no token": client.post(HUB, data=form),
            "publish, garbage": client.post(HUB, data=form, headers=bearer("a.b.c")),
            "publish, expired": client.post(
                HUB, data=form, headers=bearer(publisher(server, ttl=1, now=0))
            ),
            "publish, other audience": client.post(
                HUB, data=form, headers=bearer(publisher(server, audience="https://other/x"))
            ),
            "publish, scope": client.post(
                HUB, data=form, headers=bearer(publisher(server, "https://example.com/x"))
            ),
            "subscribe, no token": client.get(HUB, params={"match": BOOK}),
            "subscribe, bad token": client.get(
                HUB, params={"match": BOOK}, headers=bearer(publisher(server))
            ),
            "subscriptions, no token": client.get(f"{HUB}/subscriptions"),
            "subscriptions, scope": client.get(
                f"{HUB}/subscriptions", headers=bearer(subscriber(server, BOOK))
            ),
        }
    for what, response in responses.items():
        assert response.status_code in (401, 403), (what, response.status_code, response.text)
        challenge = response.headers["www-authenticate"]
        assert challenge.startswith("Bearer"), what
        assert f'resource_metadata="{metadata}"' in challenge, (what, challenge)
        if response.status_code == 403:
            assert 'error="insufficient_scope"' in challenge
        elif "no token" in what:
            assert "error=" not in challenge  # a bare challenge when no token was presented
        else:
            assert 'error="invalid_token"' in challenge
        assert response.text.strip(), what  # the body names the problem


def test_malformed_presentation_is_400_invalid_request(hub: Server) -> None:
    """A token in the URL, or an ``Authorization`` header that is not Bearer, is a 400
    ``invalid_request`` (never silently anonymous)."""
    with hub.client() as client:
        in_url = client.get(HUB, params={"match": BOOK, "access_token": publisher(hub)})
        basic = client.get(HUB, params={"match": BOOK}, headers={"Authorization": "Basic x"})
    for response in (in_url, basic):
        assert response.status_code == 400
        assert 'error="invalid_request"' in response.headers["www-authenticate"]
    assert "RFC 9700" in in_url.text


# -- reconnection -------------------------------------------------------------------------


def resume_header(server: Server, *params: tuple[str, str], **headers: str) -> str | None:
    query = (("match", BOOK), *params)
    with server.client() as client, client.stream("GET", HUB, params=query, headers=headers) as r:
        assert r.status_code == 200
        assert "last-event-id" not in r.headers  # 0.x's header: only in compatibility mode
        resumed: str | None = r.headers.get("mercure-last-event-id")
        return resumed


def test_mercure_last_event_id_only_when_asked(hub: Server) -> None:
    """50: set when ``Last-Event-ID`` or ``last_event_id`` is present (even empty): the id
    preceding the first event sent, or ``earliest`` (empty history, ``earliest`` asked, an
    unknown id); never set otherwise."""
    assert resume_header(hub) is None
    assert resume_header(hub, ("last_event_id", "")) == "earliest"  # nothing stored yet
    for update_id in ("a", "b"):
        publish(hub, BOOK, publisher(hub), id=update_id)
    assert resume_header(hub) is None
    assert resume_header(hub, ("last_event_id", "a")) == "a"
    assert resume_header(hub, ("last_event_id", "")) == "b"
    assert resume_header(hub, ("last_event_id", "earliest")) == "earliest"
    assert resume_header(hub, ("last_event_id", "unknown")) == "earliest"
    assert resume_header(hub, **{"Last-Event-ID": "b"}) == "b"
    # the header wins over the parameter
    assert resume_header(hub, ("last_event_id", "a"), **{"Last-Event-ID": "b"}) == "b"


def test_non_ascii_ids_are_refused_at_publish_and_stored_ones_sent_as_utf8(hub: Server) -> None:
    """An id travels back in a ``Last-Event-ID`` header, so a publish naming a non-ASCII one
    is a 400 naming it (nothing stored); one already in a history kept from before is still
    named in ``Mercure-Last-Event-ID`` as its UTF-8 bytes (as the Go hub sends it)."""
    iri = "https://example.com/événements/1"
    refused = publish(hub, BOOK, publisher(hub), id=iri)
    assert refused.status_code == 400
    assert "id" in refused.text and "'é'" in refused.text
    assert hub.call(hub.hub.transport.lookup(iri)) is None
    hub.call(hub.hub.publish(Update(iri, (BOOK,), "", False, None, None)))
    with hub.client() as client:
        params = {"match": BOOK, "last_event_id": iri}
        with client.stream("GET", HUB, params=params) as response:
            raw = dict(response.headers.raw)[b"mercure-last-event-id"]
    assert raw == iri.encode("utf-8")


def test_a_reused_id_resumes_after_its_earliest_occurrence(
    hub: Server, streams: Callable[..., Stream]
) -> None:
    """51: resuming from an id two updates bear sends everything after the first of them."""
    token = publisher(hub)
    for update_id in ("dup", "middle", "dup", "last"):
        assert publish(hub, BOOK, token, id=update_id).status_code == 200
    stream = subscribe(streams, hub, ("match", BOOK), ("last_event_id", "dup"))
    assert [stream.event().id for _ in range(3)] == ["middle", "dup", "last"]
    stream.nothing()


def test_stream_closes_by_the_token_expiry(hub: Server, streams: Callable[..., Stream]) -> None:
    """61: a stream opened with a token ends no later than the token's ``exp``."""
    stream = subscribe(streams, hub, ("match", BOOK), headers=bearer(subscriber(hub, BOOK, ttl=2)))
    assert stream.ended.wait(10), "the stream outlived its token"
    assert hub.hub.metrics.disconnects["token expired"] == 1


def test_protected_resource_metadata_only_with_tokens(
    make_server: Callable[..., Server], tmp_path: Path
) -> None:
    """60: served at the RFC 9728 path derived from the identifier (pinned or not) with
    ``application/json``; a hub with no token keys has none (and none is named)."""
    pinned = "https://hub.example.com/mercure-hub"
    server = make_server(v1_settings(tmp_path, resource_identifier=pinned))
    with server.client() as client:
        found = client.get("/.well-known/oauth-protected-resource/mercure-hub")
        assert found.status_code == 200
        assert found.headers["content-type"] == "application/json"
        assert found.json()["resource"] == pinned
        assert client.get(f"/.well-known/oauth-protected-resource{HUB}").status_code == 404
    (tmp_path / "open").mkdir()
    keyless = make_server(
        v1_settings(tmp_path / "open", publisher_key=None, subscriber_key=None, trusted_issuers=())
    )
    with keyless.client() as client:
        assert client.get(f"/.well-known/oauth-protected-resource{HUB}").status_code == 404
        refused = client.post(HUB, data={"topic": BOOK})
        assert refused.status_code == 401
        assert refused.headers["www-authenticate"] == "Bearer"


def test_a_publish_through_a_proxy_on_loopback_is_read_with_its_forwarded_scheme(
    hub: Server,
) -> None:
    """A publish carrying ``X-Forwarded-Proto`` (a proxy on loopback, which uvicorn trusts)
    takes the app with uvicorn's proxy-headers middleware, not the lean publish path: the
    hub's identity is then the https one, and so is the audience its token must name."""
    token = publisher(hub, audience=audience(hub).replace("http://", "https://", 1))
    form = b"topic=https%3A%2F%2Fexample.com%2Fbooks%2F1&data=hello"
    headers = {**bearer(token), "Content-Type": "application/x-www-form-urlencoded"}
    with hub.client() as client:
        proxied = client.post(HUB, content=form, headers={**headers, "X-Forwarded-Proto": "https"})
        direct = client.post(HUB, content=form, headers=headers)
    assert proxied.status_code == 200, proxied.text
    assert direct.status_code == 401 and "aud" in direct.text


@pytest.mark.parametrize(
    ("content_type", "status"),
    [
        (None, 200),  # no Content-Type: read as the form
        ("application/x-www-form-urlencoded; charset=utf-8", 200),
        ("Application/X-WWW-Form-Urlencoded", 200),
        ("", 400),
        ("text/plain", 400),
        ("multipart/form-data; boundary=x", 400),
    ],
)
def test_a_publish_is_a_form_by_its_content_type(
    hub: Server, content_type: str | None, status: int
) -> None:
    """draft-08 §5: the body is a form; a publish without Content-Type is read as one, any
    other type (an empty one too) is a 400 naming it."""
    headers = bearer(publisher(hub))
    if content_type is not None:
        headers["Content-Type"] = content_type
    form = b"topic=https%3A%2F%2Fexample.com%2Fbooks%2F1&data=hello"
    with hub.client() as client:
        request = client.build_request("POST", HUB, content=form, headers=headers)
        assert request.headers.get("Content-Type") == content_type
        response = client.send(request)
    assert response.status_code == status, response.text
    if status == 400:
        assert content_type is not None  # a publish without one is read as a form
        assert f"unsupported content type {content_type.split(';')[0].lower()!r}" in response.text
