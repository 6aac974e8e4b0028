"""The authorization matrix: token sources, HS256/RS256, scopes, private updates, expiry."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import jwt
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from skipfilter.hub import HubSettings
from tests.hub.hubtest import (
    HUB,
    PUBLISHER_KEY,
    SUBSCRIBER_KEY,
    Server,
    Stream,
    pub_token,
    sub_token,
    token,
)

BOOK = "https://example.com/books/1"


def _rsa_pair() -> tuple[str, str]:
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    private = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    ).decode()
    public = (
        key.public_key()
        .public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
        .decode()
    )
    return private, public


def test_publish_requires_a_token(server: Server) -> None:
    with server.client() as client:
        response = client.post(HUB, data={"topic": BOOK, "data": "x"})
    assert response.status_code == 401
    assert "missing token" in response.text
    assert response.headers["www-authenticate"].startswith("Bearer")
    assert server.hub.ring.head == 0


@pytest.mark.parametrize(
    ("make", "reason"),
    [
        (lambda: jwt.encode({"mercure": {"publish": ["*"]}}, "", algorithm="none"), "alg 'none'"),
        (lambda: pub_token(exp=-10), "expired"),
        (lambda: token("wrong-key-wrong-key-wrong-key-wrong-key", publish=["*"]), "signature"),
        (lambda: token(SUBSCRIBER_KEY, publish=["*"]), "signature"),  # subscriber key: wrong role
        (lambda: "not.a.jwt", "malformed"),
    ],
    ids=["alg-none", "expired", "bad-signature", "other-role-key", "garbage"],
)
def test_bad_publisher_tokens_are_rejected_with_a_reason(
    server: Server, make: Callable[[], str], reason: str
) -> None:
    response = server.publish(BOOK, auth=make())
    assert response.status_code == 401
    assert reason in response.text
    assert 'error="invalid_token"' in response.headers["www-authenticate"]
    assert server.hub.ring.head == 0


def test_publish_claim_must_cover_every_topic(
    server: Server, streams: Callable[..., Stream]
) -> None:
    stream = streams(server, ["*"])
    scoped = pub_token("https://example.com/books/{id}")
    response = server.publish([BOOK, "https://example.com/users/1"], auth=scoped)
    assert response.status_code == 403
    assert "https://example.com/users/1" in response.text
    assert 'error="insufficient_scope"' in response.headers["www-authenticate"]
    no_claim = token(PUBLISHER_KEY, subscribe=["*"])
    assert server.publish(BOOK, auth=no_claim).status_code == 403
    assert server.publish(BOOK, auth=scoped, id="ok").status_code == 200
    assert stream.event().id == "ok"  # the refused updates never reached anyone
    assert server.hub.ring.head == 1


def test_token_sources_in_order_header_query_cookie(server: Server) -> None:
    good, bad = pub_token(), "bad.token.value"
    form = {"topic": BOOK, "data": "x"}
    with server.client() as client:
        # header wins over a bad query parameter and cookie
        client.cookies.set("mercureAuthorization", bad)
        r = client.post(
            HUB,
            data=form,
            params={"authorization": bad},
            headers={"Authorization": f"Bearer {good}"},
        )
        assert r.status_code == 200
        # query parameter wins over a bad cookie
        r = client.post(HUB, data=form, params={"authorization": good})
        assert r.status_code == 200
        r = client.post(HUB, data=form, params={"authorization": bad})
        assert r.status_code == 401
        # cookie alone (with an allowed origin, see the origin test)
        client.cookies.set("mercureAuthorization", good)
        r = client.post(HUB, data=form, headers={"Origin": "https://app.example"})
        assert r.status_code == 403  # no publish origins configured
        # a malformed Authorization header is an error, not a fall-through
        r = client.post(HUB, data=form, headers={"Authorization": "Basic abc"})
        assert r.status_code == 401 and "Bearer" in r.text


def test_cookie_publish_checks_origin_and_referer(
    make_server: Callable[..., Server], settings: HubSettings
) -> None:
    server = make_server(settings.with_changes(publish_origins=("https://app.example",)))
    form = {"topic": BOOK, "data": "x"}
    with server.client() as client:
        client.cookies.set("mercureAuthorization", pub_token())
        assert (
            client.post(HUB, data=form, headers={"Origin": "https://app.example"}).status_code
            == 200
        )
        r = client.post(HUB, data=form, headers={"Origin": "https://evil.example"})
        assert r.status_code == 403 and "evil.example" in r.text
        r = client.post(HUB, data=form, headers={"Referer": "https://app.example/page?x=1"})
        assert r.status_code == 200
        r = client.post(HUB, data=form, headers={"Referer": "https://evil.example/page"})
        assert r.status_code == 403
        r = client.post(HUB, data=form)
        assert r.status_code == 401 and "Origin" in r.text
    assert server.hub.ring.head == 2


def test_private_updates_only_reach_authorized_subscribers(
    server: Server, streams: Callable[..., Stream]
) -> None:
    authorized = streams(
        server,
        [BOOK],
        headers={"Authorization": f"Bearer {sub_token('https://example.com/books/{id}')}"},
    )
    other_scope = streams(
        server,
        [BOOK],
        headers={"Authorization": f"Bearer {sub_token('https://example.com/users/{id}')}"},
    )
    anonymous = streams(server, [BOOK])
    # authorized for a *different* topic of the same update: delivered
    via_other_topic = streams(
        server, [BOOK], params={"authorization": sub_token("https://example.com/shelves/1")}
    )
    server.publish([BOOK, "https://example.com/shelves/1"], private="on", id="secret")
    server.publish(BOOK, id="public")
    assert authorized.event().id == "secret"
    assert authorized.event().id == "public"
    assert via_other_topic.event().id == "secret"
    assert other_scope.event().id == "public"
    assert anonymous.event().id == "public"
    other_scope.nothing()
    anonymous.nothing()


def test_private_flag_is_presence_not_value(server: Server, streams: Callable[..., Stream]) -> None:
    anonymous = streams(server, [BOOK])
    server.publish(BOOK, private="", id="p1")
    server.publish(BOOK, id="public")
    assert anonymous.event().id == "public"


def test_anonymous_subscribers_only_when_configured(
    make_server: Callable[..., Server], settings: HubSettings, streams: Callable[..., Stream]
) -> None:
    server = make_server(settings.with_changes(anonymous=False))
    with server.client() as client:
        r = client.get(HUB, params={"topic": BOOK})
        assert r.status_code == 401 and "anonymous" in r.text
        r = client.get(HUB, params={"topic": BOOK, "authorization": sub_token(exp=-5)})
        assert r.status_code == 401 and "expired" in r.text
    stream = streams(server, [BOOK], headers={"Authorization": f"Bearer {sub_token()}"})
    assert stream.response is not None and stream.response.status_code == 200
    with pytest.raises(ValueError, match="anonymous"):
        HubSettings(subscriber_key=None, anonymous=False)


def test_invalid_subscriber_token_is_refused_even_when_anonymous_allowed(
    server: Server, streams: Callable[..., Stream]
) -> None:
    unsigned = jwt.encode({"mercure": {"subscribe": ["*"]}}, "", algorithm="none")
    stream = streams(server, [BOOK], headers={"Authorization": f"Bearer {unsigned}"})
    assert stream.response is not None and stream.response.status_code == 401
    assert len(server.hub.index) == 0


def test_stream_closes_when_the_token_expires(
    server: Server, streams: Callable[..., Stream]
) -> None:
    stream = streams(
        server, [BOOK], raw=True, headers={"Authorization": f"Bearer {sub_token(exp=2)}"}
    )
    started = time.monotonic()
    assert stream.ended.wait(6)
    assert 0.5 < time.monotonic() - started < 5
    lines = []
    while not stream.items.empty():
        lines.append(stream.items.get())
    assert any("token expired" in line for line in lines)
    server.wait_subscribers(0)
    assert len(server.hub.index) == 0


def test_rs256_publishers_and_subscribers(
    make_server: Callable[..., Server], tmp_path: Path, streams: Callable[..., Stream]
) -> None:
    pub_private, pub_public = _rsa_pair()
    sub_private, sub_public = _rsa_pair()
    settings = HubSettings(
        publisher_key=pub_public,
        publisher_alg="RS256",
        subscriber_key=sub_public,
        subscriber_alg="RS256",
        history_path=str(tmp_path / "rs.sqlite3"),
        heartbeat=0,
        protocol_version_compatibility=8,
    )
    server = make_server(settings)
    subscriber = token(sub_private, "RS256", subscribe=[BOOK])
    stream = streams(server, [BOOK], headers={"Authorization": f"Bearer {subscriber}"})
    assert (
        server.publish(
            BOOK, auth=token(pub_private, "RS256", publish=[BOOK]), private="on"
        ).status_code
        == 200
    )
    assert stream.event().data == "hello"
    # an HS256 token signed with the public key text (algorithm confusion) is refused
    confused = jwt.encode({"mercure": {"publish": ["*"]}}, "x" * 32, algorithm="HS256")
    r = server.publish(BOOK, auth=confused)
    assert r.status_code == 401 and "HS256" in r.text
    assert server.publish(BOOK, auth=token(sub_private, "RS256", publish=["*"])).status_code == 401
