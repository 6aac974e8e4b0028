"""Cookie-authenticated publishing: wildcard publish origins with exact scheme and port, and
the configurable cookie name."""

from __future__ import annotations

import argparse
from collections.abc import Callable

import pytest

from skipfilter.hub import HubSettings
from skipfilter.hub.origins import OriginPolicy
from skipfilter.hub.server.cli import add_arguments, settings_from_args
from tests.hub.hubtest import HUB, Server, Stream, pub_token, sub_token

BOOK = "https://example.com/books/1"
ORIGINS = ("https://*.example.com", "http://localhost:3000", "https://app.example.net:8443")

ALLOWED = [
    "https://app.example.com",
    "https://a.b.example.com",
    "https://APP.Example.COM",
    "https://app.example.com:443",  # the default port, spelled out
    "http://localhost:3000",
    "https://app.example.net:8443",
]
REFUSED = [
    "https://example.com",  # the wildcard needs at least one label
    "https://.example.com",
    "https://evil-example.com",
    "https://evilexample.com",
    "https://example.com.evil.net",
    "https://app.example.com.evil.net",
    "http://app.example.com",  # other scheme
    "wss://app.example.com",
    "https://app.example.com:8443",  # other port
    "http://localhost:3001",
    "https://localhost:3000",
    "http://localhost",
    "https://app.example.net",  # 443, not the 8443 configured
    "null",
    "https://app.example.com%2e.evil.net",
]


def test_origin_policy_matches_whole_labels_scheme_and_port() -> None:
    policy = OriginPolicy(ORIGINS)
    assert [o for o in ALLOWED if not policy.allows(o)] == []
    assert [o for o in REFUSED if policy.allows(o)] == []
    assert OriginPolicy(["null"]).allows("null")
    assert OriginPolicy(["*"]).allows("https://anything.example")


@pytest.mark.parametrize(
    "bad",
    [
        "example.com",
        "*.example.com",
        "https://*",
        "https://*example.com",
        "https://a.*.example.com",
        "https://app.example.com/",
        "https://app.example.com/path",
        "http://localhost:*",
        "https://user@app.example.com",
        "https://app.example.com:99999",
    ],
)
def test_malformed_publish_origins_are_refused_at_configuration(bad: str) -> None:
    with pytest.raises(ValueError, match="publish origin"):
        HubSettings(anonymous=True, publish_origins=(bad,))


def test_wildcard_origins_on_a_real_hub(
    make_server: Callable[..., Server], settings: HubSettings
) -> None:
    server = make_server(settings.with_changes(publish_origins=ORIGINS))
    form = {"topic": BOOK, "data": "x"}
    statuses: dict[str, int] = {}
    with server.client() as client:
        client.cookies.set("mercureAuthorization", pub_token())
        for origin in ALLOWED + REFUSED:
            statuses[origin] = client.post(HUB, data=form, headers={"Origin": origin}).status_code
        by_referer = client.post(
            HUB, data=form, headers={"Referer": "https://shop.example.com/cart?x=1"}
        )
        near_miss = client.post(
            HUB,
            data=form,
            headers={"Referer": "https://example.com.evil.net/?https://a.example.com"},
        )
    assert {o: s for o, s in statuses.items() if o in ALLOWED} == dict.fromkeys(ALLOWED, 200)
    assert {o: s for o, s in statuses.items() if o in REFUSED} == dict.fromkeys(REFUSED, 403)
    assert by_referer.status_code == 200
    assert near_miss.status_code == 403 and "example.com.evil.net" in near_miss.text
    assert server.hub.ring.head == len(ALLOWED) + 1


def test_cookie_name_is_configurable(
    make_server: Callable[..., Server], settings: HubSettings, streams: Callable[..., Stream]
) -> None:
    server = make_server(
        settings.with_changes(cookie_name="hubToken", publish_origins=("https://app.example",))
    )
    form, origin = {"topic": BOOK, "data": "x"}, {"Origin": "https://app.example"}
    with server.client() as client:
        client.cookies.set("hubToken", "bad.token.value")
        response = client.post(HUB, data=form, headers=origin)
        assert response.status_code == 401  # the configured cookie is the one read
        client.cookies.set("hubToken", pub_token())
        assert client.post(HUB, data=form, headers=origin).status_code == 200
    named = streams(server, [BOOK], headers={"Cookie": f"hubToken={sub_token(BOOK)}"})
    # compatibility mode also reads 0.x's cookie when the configured one is absent, as the
    # Go hub's compatibility mode does (it was "just another cookie" in 0.x-only mode)
    legacy = streams(server, [BOOK], headers={"Cookie": f"mercureAuthorization={sub_token(BOOK)}"})
    both = streams(
        server,
        [BOOK],
        headers={"Cookie": f"hubToken={sub_token()}; mercureAuthorization={sub_token(BOOK)}"},
    )
    server.publish(BOOK, private="on", id="secret")
    server.publish(BOOK, id="public")
    assert named.event().id == "secret"
    assert legacy.event().id == "secret"
    assert both.event().id == "public"  # the configured cookie wins: no grant on BOOK


def test_cookie_name_flag() -> None:
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    args = parser.parse_args(["--anonymous", "--cookie-name", "__Host-mercure"])
    assert settings_from_args(args, {}).cookie_name == "__Host-mercure"
    assert settings_from_args(parser.parse_args(["--anonymous"]), {}).cookie_name == (
        "__Secure-mercure_access_token"  # Mercure 1.0's name (compatibility also reads 0.x's)
    )
    with pytest.raises(ValueError, match="cookie name"):
        settings_from_args(parser.parse_args(["--anonymous", "--cookie-name", "a b"]), {})
