"""Token presentation (draft-08 §6.1), the hub's identity and 421, RFC 9728 metadata, Link."""

from __future__ import annotations

import pytest

from skipfilter.hub.auth.verify import TokenSource
from skipfilter.hub.frontends.v1.discovery import (
    hub_link,
    protected_resource_metadata,
    subscriptions_link,
)
from skipfilter.hub.frontends.v1.errors import BearerError, RequestError
from skipfilter.hub.frontends.v1.identity import (
    HubIdentity,
    IdentityPolicy,
    check_resource_identifier,
    metadata_url,
    origin_of,
)
from skipfilter.hub.frontends.v1.presentation import (
    DEFAULT_COOKIE,
    KNOWN_HEADER_CHARS,
    PresentedToken,
    check_cookie_origin,
    present_token,
)

TOKEN = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJ4In0.c2lnbmF0dXJl"
OTHER = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJ5In0.b3RoZXI"


def test_the_header_wins_and_the_cookie_is_then_ignored() -> None:
    found = present_token([f"Bearer {TOKEN}"], {DEFAULT_COOKIE: OTHER})
    assert found == PresentedToken(TOKEN, TokenSource.HEADER)


def test_without_a_header_the_cookie_is_used() -> None:
    assert present_token([], {DEFAULT_COOKIE: OTHER}) == PresentedToken(OTHER, TokenSource.COOKIE)
    assert present_token([], {"mine": OTHER}, cookie_name="mine") == PresentedToken(
        OTHER, TokenSource.COOKIE
    )
    assert present_token([], {}) is None
    assert present_token([], {DEFAULT_COOKIE: ""}) is None


@pytest.mark.parametrize("header", [f"bearer {TOKEN}", f"BEARER  {TOKEN}", f"Bearer {TOKEN}  "])
def test_the_scheme_is_case_insensitive(header: str) -> None:
    assert present_token([header], {}) == PresentedToken(TOKEN, TokenSource.HEADER)


@pytest.mark.parametrize(
    "headers",
    [
        [f"Bearer {TOKEN}", f"Bearer {OTHER}"],
        [f"Basic {TOKEN}"],
        ["Bearer"],
        ["Bearer "],
        [TOKEN],
        ['Bearer "quoted"'],
        [f"Bearer {TOKEN} extra"],
        ["Bearer a,b"],
    ],
)
def test_a_malformed_authorization_header_is_invalid_request(headers: list[str]) -> None:
    with pytest.raises(BearerError) as caught:
        present_token(headers, {DEFAULT_COOKIE: OTHER})
    assert (caught.value.status, caught.value.error) == (400, "invalid_request")
    challenge = caught.value.www_authenticate("https://m")
    assert challenge is not None and challenge.startswith('Bearer error="invalid_request"')


@pytest.mark.parametrize("name", ["access_token", "authorization"])
def test_tokens_in_the_url_are_refused_in_1_0(name: str) -> None:
    with pytest.raises(BearerError, match="RFC 9700") as caught:
        present_token([], {DEFAULT_COOKIE: OTHER}, [(name, TOKEN), ("match", "x")])
    assert caught.value.status == 400
    # the header still wins: the query is not looked at
    assert present_token([f"Bearer {TOKEN}"], {}, [(name, OTHER)]).token == TOKEN  # type: ignore[union-attr]


def test_compatibility_adds_the_0x_query_parameter_and_cookie() -> None:
    query = [("authorization", TOKEN)]
    assert present_token([], {DEFAULT_COOKIE: OTHER}, query, compatibility=True) == (
        PresentedToken(TOKEN, TokenSource.QUERY)
    )
    assert present_token([], {"mercureAuthorization": OTHER}, compatibility=True) == (
        PresentedToken(OTHER, TokenSource.COOKIE)
    )
    both = {"mercureAuthorization": TOKEN, DEFAULT_COOKIE: OTHER}
    assert present_token([], both, compatibility=True).token == OTHER  # type: ignore[union-attr]
    assert present_token([], {"mercureAuthorization": OTHER}) is None
    assert present_token([], {}, [("access_token", TOKEN)], compatibility=True) is None


@pytest.mark.parametrize(
    ("headers", "reason"),
    [
        ({}, "Origin or Referer"),
        ({"origin": "https://evil.example"}, "evil.example"),
        ({"referer": "https://evil.example/page"}, "evil.example"),
    ],
)
def test_cookie_publishes_from_unlisted_origins_are_invalid_requests(
    headers: dict[str, str], reason: str
) -> None:
    with pytest.raises(BearerError, match=reason) as caught:
        check_cookie_origin(headers, ["https://app.example"])
    assert (caught.value.status, caught.value.error) == (400, "invalid_request")
    check_cookie_origin({"origin": "https://app.example"}, ["https://app.example"])
    check_cookie_origin({"referer": "https://app.example/x"}, ["https://app.example"])


# -- identity ---------------------------------------------------------------------------------


def test_the_identity_is_derived_from_the_requests_origin() -> None:
    identity = IdentityPolicy().for_request("https", "Hub.Example.com:443")
    assert identity == HubIdentity(
        "https://hub.example.com/.well-known/mercure",
        "https://hub.example.com/.well-known/mercure",
        "https://hub.example.com/.well-known/oauth-protected-resource/.well-known/mercure",
        "/.well-known/oauth-protected-resource/.well-known/mercure",
    )
    local = IdentityPolicy().for_request("http", "localhost:3000")
    assert local.resource == "http://localhost:3000/.well-known/mercure"


def test_local_origins_answer_as_themselves_and_any_other_host_as_the_first() -> None:
    """A loopback hub's own names: a forged Host never becomes the audience or the
    metadata URL (a token for another hub sharing the keys is not replayed by naming it)."""
    policy = IdentityPolicy(local_origins=("http://localhost:3000", "http://127.0.0.1:3000"))
    own = "http://localhost:3000/.well-known/mercure"
    assert policy.for_request("http", "LOCALHOST:3000").resource == own
    assert policy.for_request("http", "127.0.0.1:3000").resource == (
        "http://127.0.0.1:3000/.well-known/mercure"
    )
    for forged in ("hub-b.example", "hub-b.example:3000", "127.0.0.1", "localhost:3001"):
        identity = policy.for_request("http", forged)
        assert identity.resource == identity.hub_url == own
        assert identity.metadata_url.startswith("http://localhost:3000/")
    assert policy.for_request("https", "hub-b.example").resource == own


def test_a_pinned_identifier_wins_for_every_origin() -> None:
    policy = IdentityPolicy("https://hub.example.com/.well-known/mercure")
    assert policy.for_request("http", "127.0.0.1:3000").resource == (
        "https://hub.example.com/.well-known/mercure"
    )
    other = IdentityPolicy("https://api.example.com/mercure-hub").for_request("http", "x")
    assert (
        other.metadata_url
        == "https://api.example.com/.well-known/oauth-protected-resource/mercure-hub"
    )
    assert other.metadata_path == "/.well-known/oauth-protected-resource/mercure-hub"
    assert other.hub_url == "https://api.example.com/.well-known/mercure"


@pytest.mark.parametrize(
    "value", ["/.well-known/mercure", "ftp://x/y", "https://x/#f", "https:///x"]
)
def test_bad_resource_identifiers_are_refused_at_start(value: str) -> None:
    with pytest.raises(ValueError, match="resource identifier"):
        check_resource_identifier(value)


def test_public_urls_answer_421_to_other_origins() -> None:
    policy = IdentityPolicy(public_urls=["https://hub.example.com", "http://localhost:3000/"])
    assert policy.for_request("https", "HUB.example.com").resource.startswith("https://hub.")
    policy.for_request("http", "localhost:3000")
    for scheme, host in [
        ("http", "hub.example.com"),
        ("https", "evil.example"),
        ("https", "hub.example.com:8443"),
        ("http", "localhost:3001"),
    ]:
        with pytest.raises(RequestError) as caught:
            policy.for_request(scheme, host)
        assert caught.value.status == 421 and not isinstance(caught.value, BearerError)
    with pytest.raises(ValueError, match="public URL"):
        IdentityPolicy(public_urls=["hub.example.com"])


@pytest.mark.parametrize(
    "host", ['evil"host', "a b", "user@host", "host/path", "", "host:99999", "[zz]", "h:80:80"]
)
def test_forged_hosts_are_refused(host: str) -> None:
    with pytest.raises(RequestError) as caught:
        IdentityPolicy().for_request("https", host)
    assert caught.value.status == 400


def test_origins_are_normalized() -> None:
    assert origin_of("HTTP", "EXAMPLE.com:80") == "http://example.com"
    assert origin_of("https", "[::1]:8443") == "https://[::1]:8443"
    assert origin_of("https", "example.com:0443") == "https://example.com"


def test_metadata_urls_follow_rfc9728() -> None:
    assert metadata_url("https://h/.well-known/mercure") == (
        "https://h/.well-known/oauth-protected-resource/.well-known/mercure"
    )
    assert metadata_url("https://h") == "https://h/.well-known/oauth-protected-resource"
    assert metadata_url("https://h/a?x=1") == "https://h/.well-known/oauth-protected-resource/a?x=1"


# -- discovery --------------------------------------------------------------------------------


def test_protected_resource_metadata() -> None:
    identity = IdentityPolicy().for_request("https", "hub.example.com")
    assert protected_resource_metadata(identity, DEFAULT_COOKIE) == {
        "resource": "https://hub.example.com/.well-known/mercure",
        "bearer_methods_supported": ["header"],
        "authorization_details_types_supported": ["https://mercure.rocks/authorization-detail"],
        "mercure_cookie": "__Secure-mercure_access_token",
    }
    full = protected_resource_metadata(
        identity,
        None,
        ["https://auth.example.com"],
        subscriptions=True,
        matcher_types=["exact", "urlpattern", "regex"],
    )
    assert "mercure_cookie" not in full
    assert full["authorization_servers"] == ["https://auth.example.com"]
    assert full["mercure_subscriptions"] is True
    assert full["mercure_matcher_types_supported"] == ["exact", "urlpattern", "regex"]


def test_link_headers() -> None:
    assert hub_link("https://hub.example.com/.well-known/mercure") == (
        '<https://hub.example.com/.well-known/mercure>; rel="mercure"'
    )
    assert subscriptions_link("/.well-known/mercure", "urn:uuid:1") == (
        '</.well-known/mercure>; rel="mercure"; last-event-id="urn:uuid:1"; type="mercure"; '
        'content-type="application/json"'
    )
    assert 'last-event-id="a\\"b\\\\"' in subscriptions_link("/h", 'a"b\\')


def test_a_header_is_read_alike_whether_its_token_is_remembered_or_not() -> None:
    """Headers up to ``KNOWN_HEADER_CHARS`` are remembered, longer ones read each time:
    the same token either way, and a malformed header refused each time it comes."""
    long = "a" * KNOWN_HEADER_CHARS
    for token in (TOKEN, long):
        for _ in range(2):
            assert present_token([f"Bearer {token}"], {}) == PresentedToken(
                token, TokenSource.HEADER
            )
    for header in (f"Basic {TOKEN}", f"Basic {long}"):
        for _ in range(2):
            with pytest.raises(BearerError):
                present_token([header], {})
