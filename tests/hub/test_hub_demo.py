"""The demo page's tokens and cookie: what ``make run`` hands a browser must be what a
Mercure 1.0 hub accepts, and must never put a token in a URL."""

from __future__ import annotations

import argparse
import asyncio
import re
from pathlib import Path

import httpx
import pytest

from skipfilter.hub import HubSettings
from skipfilter.hub.frontends.v1.errors import BearerError
from skipfilter.hub.frontends.v1.issuers import Issuer, StaticKey
from skipfilter.hub.frontends.v1.tokens import AccessTokenVerifier
from skipfilter.hub.http.demo import demo_cookie, demo_issuer, demo_response, demo_tokens
from skipfilter.hub.server.cli import add_arguments, settings_from_args
from skipfilter.hub.settings import DEMO_COOKIE, DEMO_ISSUER
from tests.hub.hubtest import HUB, PUBLISHER_KEY, SUBSCRIBER_KEY, HubProcess

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


def _args(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    return parser.parse_args(list(argv))


def test_demo_flag_shares_the_secret_with_subscribers_and_names_a_plain_http_cookie() -> None:
    demo = settings_from_args(_args("--demo"), {})
    assert demo.subscriber_key == demo.publisher_key and demo.publisher_key
    assert demo.cookie_name == DEMO_COOKIE
    assert demo_issuer(demo) == DEMO_ISSUER
    given = settings_from_args(
        _args("--demo", "--cookie-name", "__Secure-mercure_access_token", "--issuer", "https://i"),
        {"MERCURE_PUBLISHER_JWT_KEY": PUBLISHER_KEY, "MERCURE_SUBSCRIBER_JWT_KEY": SUBSCRIBER_KEY},
    )
    assert (given.publisher_key, given.subscriber_key) == (PUBLISHER_KEY, SUBSCRIBER_KEY)
    assert given.cookie_name == "__Secure-mercure_access_token"
    assert demo_issuer(given) == "https://i"
    # subscribers' keys from a JWK Set: the demo does not hand them the publisher's secret
    jwks = settings_from_args(_args("--demo", "--subscriber-jwks-url", "https://i/jwks"), {})
    assert jwks.subscriber_key is None


def test_make_run_hub_page_cookie_receives_private_updates(tmp_path: Path) -> None:
    """What ``make run`` starts: the page's response sets the subscriber token in the cookie;
    a client presenting that cookie (as the page's EventSource does) gets a private update
    published with the token the hub printed, and a client without it does not."""
    hub = HubProcess("--demo", "--history", str(tmp_path / "d.sqlite3"), compatibility=False)
    try:
        host = {"Host": f"localhost:{hub.port}"}  # the origin the printed token is minted for
        page = httpx.get(hub.url + "/", headers=host)
        cookie = page.headers["set-cookie"].split(";")[0]
        assert cookie.startswith(f"{DEMO_COOKIE}=")
        printed = re.search(r"demo publisher access token for (\S+): (\S+)", hub.output())
        assert printed is not None and printed[1] == f"http://localhost:{hub.port}{HUB}"
        query = {"match_urlpattern": "https://example.com/books/:id"}
        with (
            httpx.Client(base_url=hub.url, timeout=20) as client,
            client.stream("GET", HUB, params=query, headers={**host, "Cookie": cookie}) as held,
            client.stream("GET", HUB, params=query, headers=host) as anonymous,
        ):
            assert held.status_code == anonymous.status_code == 200
            for data, private in (("secret", {"private": "on"}), ("public", {})):
                form = {"topic": "https://example.com/books/1", "data": data, **private}
                auth = {**host, "Authorization": f"Bearer {printed[2]}"}
                assert client.post(HUB, data=form, headers=auth).status_code == 200
            assert _data(held, 2) == ["secret", "public"]
            assert _data(anonymous, 1) == ["public"]
    finally:
        hub.proc.terminate()
        hub.proc.wait(10)


def _data(response: httpx.Response, count: int) -> list[str]:
    """The first ``count`` events' data of an open stream."""
    found: list[str] = []
    for line in response.iter_lines():
        if line.startswith("data: "):
            found.append(line.removeprefix("data: "))
            if len(found) == count:
                return found
    return found
