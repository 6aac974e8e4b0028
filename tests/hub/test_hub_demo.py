"""The demo page's tokens and cookie: what ``make run`` hands a browser must be what a
Mercure 1.0 hub accepts, and must never put a token in a URL."""

from __future__ import annotations

import asyncio

import pytest

from skipfilter.hub import HubSettings
from skipfilter.hub.demo import demo_cookie, demo_issuer, demo_response, demo_tokens
from skipfilter.hub.protocol.errors import BearerError
from skipfilter.hub.protocol.issuers import Issuer, StaticKey
from skipfilter.hub.protocol.tokens import AccessTokenVerifier
from tests.hub.hubtest import PUBLISHER_KEY, SUBSCRIBER_KEY

AUDIENCE = "http://127.0.0.1:3000/.well-known/mercure"


def _settings(**changes: object) -> HubSettings:
    return HubSettings(
        publisher_key=PUBLISHER_KEY,
        subscriber_key=SUBSCRIBER_KEY,
        anonymous=True,
        demo=True,
        history_path=":memory:",
    ).with_changes(**changes)


def _verifier(settings: HubSettings) -> AccessTokenVerifier:
    """A strict 1.0 verifier trusting the demo's issuer with the hub's two keys."""
    issuer = Issuer(
        demo_issuer(settings),
        publisher=StaticKey(PUBLISHER_KEY, "HS256"),
        subscriber=StaticKey(SUBSCRIBER_KEY, "HS256"),
    )
    return AccessTokenVerifier([issuer])


def test_demo_tokens_are_accepted_by_a_strict_1_0_verifier_for_their_role_only() -> None:
    settings = _settings()
    tokens = demo_tokens(settings, demo_issuer(settings), AUDIENCE)
    verifier = _verifier(settings)
    publisher = asyncio.run(verifier.verify(tokens.publisher, "publisher", AUDIENCE, AUDIENCE))
    assert publisher.grants.matchers("publish") == (("*", "exact"),)
    assert publisher.grants.matchers("subscribe") == ()
    subscriber = asyncio.run(verifier.verify(tokens.subscriber, "subscriber", AUDIENCE, AUDIENCE))
    assert subscriber.grants.matchers("subscribe") == (("*", "exact"),)
    assert subscriber.expires_at is not None
    # each signed with its role's key: neither passes for the other role
    with pytest.raises(BearerError):
        asyncio.run(verifier.verify(tokens.publisher, "subscriber", AUDIENCE, AUDIENCE))
    # minted for the page's origin: another origin's hub refuses them
    other = "http://localhost:3000/.well-known/mercure"
    with pytest.raises(BearerError):
        asyncio.run(verifier.verify(tokens.subscriber, "subscriber", other, other))


def test_no_token_without_an_hmac_secret_to_sign_it() -> None:
    tokens = demo_tokens(_settings(subscriber_key=None), "https://localhost", AUDIENCE)
    assert tokens.publisher and tokens.subscriber == ""
    response = demo_response(_settings(subscriber_key=None), AUDIENCE, secure=False)
    assert "set-cookie" not in response.headers


@pytest.mark.parametrize(
    ("name", "secure", "expect_secure"),
    [
        ("mercure_access_token", False, False),
        ("mercure_access_token", True, True),
        ("__Secure-mercure_access_token", False, True),
        ("__Host-mercure", False, True),
    ],
)
def test_cookie_is_http_only_strict_scoped_and_secure_when_it_can_be(
    name: str, secure: bool, expect_secure: bool
) -> None:
    attributes = demo_cookie(name, "TOKEN", secure).split("; ")
    assert attributes[0] == f"{name}=TOKEN"
    assert {"HttpOnly", "SameSite=Strict", "Path=/.well-known/mercure"} <= set(attributes)
    assert ("Secure" in attributes) is expect_secure


def test_page_subscribes_with_match_parameters_and_sets_the_subscriber_cookie() -> None:
    settings = _settings(cookie_name="__Secure-mercure_access_token")
    response = demo_response(settings, AUDIENCE, secure=False)
    page = bytes(response.body).decode()
    cookie = response.headers["set-cookie"]
    assert cookie.startswith("__Secure-mercure_access_token=")
    subscriber = cookie.split(";")[0].split("=", 1)[1]
    assert subscriber not in page  # HttpOnly: the page never holds the subscriber token
    assert 'value="match_urlpattern"' in page and 'value="match"' in page
    script = page[page.index("<script>") :]
    assert 'url.searchParams.append($("match-type").value' in script
    assert 'searchParams.append("topic"' not in script and "authorization=" not in script
    assert '"typ": "at+jwt"' in page.replace("&quot;", '"')
    assert response.headers["cache-control"] == "no-store"
