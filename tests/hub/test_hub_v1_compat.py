"""Compatibility mode (``protocol_version_compatibility=8``): Mercure 0.x and 1.0 clients on
one hub, on the same endpoints, with either kind of token; both stream paths."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from skipfilter.hub import HubSettings
from tests.hub.hubtest import HUB, Server, Stream, pub_token, sub_token
from tests.hub.v1test import ISSUER, bearer, publish, publisher, subscriber

BOOK = "https://example.com/books/1"
TEMPLATE = "https://example.com/books/{id}"
PATTERN = "https://example.com/books/:id"


@pytest.fixture
def hub(make_server: Callable[..., Server], settings: HubSettings) -> Server:
    assert settings.protocol_version_compatibility == 8  # the shared fixture's mode
    return make_server(settings.with_changes(trusted_issuers=(ISSUER,)))


def test_a_0x_client_and_a_1_0_client_share_the_hub(
    hub: Server, streams: Callable[..., Stream]
) -> None:
    """A 0.x subscriber (URI template, 0.x token) and a 1.0 one (URL Pattern, access token)
    get the same updates, private ones included, whichever kind of publisher sent them."""
    old = streams(hub, [TEMPLATE], headers=bearer(sub_token(TEMPLATE)))
    new = streams(
        hub,
        [],
        params=[("match_urlpattern", PATTERN)],
        headers=bearer(subscriber(hub, urlpatterns=(PATTERN,))),
    )
    assert old.response is not None and new.response is not None
    assert old.response.headers["last-event-id"] == "earliest"  # 0.x names it on every stream
    assert "mercure-last-event-id" not in new.response.headers  # 1.0: only when asked
    assert hub.publish(BOOK, auth=pub_token(), id="from-0x", private="on").status_code == 200
    assert publish(hub, BOOK, publisher(hub), id="from-1.0", private="").status_code == 200
    for stream in (old, new):
        assert [stream.event().id, stream.event().id] == ["from-0x", "from-1.0"]


def test_a_request_may_mix_topic_and_match(hub: Server, streams: Callable[..., Stream]) -> None:
    """``topic=`` (0.x: exact or URI template) beside ``match=`` and ``match_urlpattern=``:
    one subscription per parameter, each matching the way its type says."""
    mixed = streams(
        hub,
        ["https://example.com/authors/{name}"],
        params=[("match", "urn:isbn:1"), ("match_urlpattern", "/books/:id")],
    )
    token = publisher(hub)
    for topic, update_id in [
        ("https://example.com/authors/ada", "template"),
        ("urn:isbn:1", "exact"),
        ("/books/7", "pattern"),
        ("https://example.com/other", "none"),
    ]:
        assert publish(hub, topic, token, id=update_id).status_code == 200
    assert [mixed.event().id for _ in range(3)] == ["template", "exact", "pattern"]
    mixed.nothing()
    kinds = sorted(s.syntax for s in next(hub.hub.streams()).selectors)
    assert kinds == ["exact", "mercure", "urlpattern"]


def test_each_kind_of_token_works_with_each_kind_of_request(
    hub: Server, streams: Callable[..., Stream]
) -> None:
    """A 0.x token (no iss, aud nor typ; rights in ``mercure``) on a 1.0 request, and a 1.0
    access token on a 0.x-shaped one: each gets the private updates its grants cover."""
    legacy_on_modern = streams(hub, [], params=[("match", BOOK)], headers=bearer(sub_token(BOOK)))
    modern_on_legacy = streams(hub, [BOOK], headers=bearer(subscriber(hub, BOOK)))
    ungranted = streams(hub, [], params=[("match", BOOK)], headers=bearer(sub_token("/other")))
    assert hub.publish(BOOK, auth=pub_token(), id="secret", private="on").status_code == 200
    assert legacy_on_modern.event().id == "secret"
    assert modern_on_legacy.event().id == "secret"
    ungranted.nothing()
    # a 1.0 publisher token whose grant does not cover the topic is refused the 1.0 way
    refused = publish(hub, BOOK, publisher(hub, "https://example.com/x"))
    assert refused.status_code == 403
    assert 'error="insufficient_scope"' in refused.headers["www-authenticate"]
    assert "resource_metadata=" in refused.headers["www-authenticate"]


def test_0x_resume_parameter_and_header_are_kept(
    hub: Server, streams: Callable[..., Stream]
) -> None:
    """0.x's ``lastEventID`` parameter resumes a 1.0-shaped request too, and the response
    names the resume point under both names (the Go hub drops both in compatibility mode,
    so a 0.x client resuming by query would miss updates)."""
    for update_id in ("a", "b", "c"):
        hub.publish(BOOK, id=update_id)
    resumed = streams(hub, [], params=[("match", BOOK), ("lastEventID", "a")])
    assert resumed.response is not None
    assert resumed.response.headers["mercure-last-event-id"] == "a"
    assert resumed.response.headers["last-event-id"] == "a"
    assert [resumed.event().id, resumed.event().id] == ["b", "c"]
    old = streams(hub, [BOOK], params={"lastEventID": "b"})
    assert old.event().id == "c"


def test_0x_publishers_are_held_to_the_rules_1_0_subscribers_rely_on(
    hub: Server,
) -> None:
    """0.x refused topics containing the hub path; compatibility also refuses those that
    resolve into it (``%6D`` for ``m``), the ``*`` topic and the ``mercure`` event type, as
    1.0 does: no forged subscription events."""
    response = hub.publish("https://evil.example/.well-known/%6Dercure/subscriptions/x")
    assert response.status_code == 400 and "reserved namespace" in response.text
    assert hub.publish("https://example.com/.well-known/mercure/x").status_code == 403  # 0.x
    assert hub.publish("*").status_code == 400
    assert hub.publish(BOOK, type="mercure").status_code == 400
    assert hub.stored() == 0


def test_protected_resource_metadata_and_421(
    make_server: Callable[..., Server], settings: HubSettings
) -> None:
    """60 and the public URLs: the metadata is served at its RFC 9728 path (GET and HEAD,
    ``application/json``); a request for an origin outside ``public_urls`` gets 421 before
    routing, 0.x requests and the native stream path included."""
    server = make_server(settings.with_changes(public_urls=("http://localhost",)))
    with server.client() as client:
        for path in (HUB, "/", f"{HUB}/subscriptions"):
            assert client.get(path, params={"topic": BOOK}).status_code == 421
        assert client.get("/healthz").status_code == 200
        headers = {"Host": "localhost"}
        found = client.get(f"/.well-known/oauth-protected-resource{HUB}", headers=headers)
        assert found.status_code == 200
        assert found.headers["content-type"] == "application/json"
        document = found.json()
        assert document["resource"] == f"http://localhost{HUB}"
        assert document["bearer_methods_supported"] == ["header"]
        assert document["mercure_cookie"] == settings.cookie_name
        head = client.head(f"/.well-known/oauth-protected-resource{HUB}", headers=headers)
        assert head.status_code == 200 and head.content == b""
