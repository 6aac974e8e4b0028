"""RFC 9068 access tokens (draft-08 §6.3) and what compatibility mode relaxes, with real keys."""

from __future__ import annotations

import asyncio
import base64
import hashlib
import hmac
import json
import time
from collections.abc import Iterator
from typing import Any

import jwt
import pytest

from skipfilter.hub.auth.jwks import JwksKeys
from skipfilter.hub.frontends.v1.errors import BearerError, RequestError
from skipfilter.hub.frontends.v1.grants import MERCURE_DETAIL
from skipfilter.hub.frontends.v1.issuers import (
    Issuer,
    JwksKeySource,
    Role,
    StaticKey,
    key_source,
)
from skipfilter.hub.frontends.v1.matchers import LEGACY, UrlPatternCheck
from skipfilter.hub.frontends.v1.tokens import AccessToken, AccessTokenVerifier
from tests.hub.keytest import JwksServer, KeyPair, key_pair

HUB = "https://hub.example.com/.well-known/mercure"
ISS = "https://example.com"
PUB_SECRET = "publisher-secret-of-at-least-32-bytes!"
SUB_SECRET = "subscriber-secret-of-at-least-32-bytes"
NOW = 1_800_000_000.0
ALL = [{"type": MERCURE_DETAIL, "actions": ["publish", "subscribe"], "topics": [{"match": "*"}]}]


class Clock:
    def __init__(self) -> None:
        self.now = NOW

    def __call__(self) -> float:
        return self.now


def claims(**changes: Any) -> dict[str, Any]:
    body = {
        "iss": ISS,
        "aud": HUB,
        "sub": "urn:uuid:s",
        "client_id": ISS,
        "iat": int(NOW),
        "exp": int(NOW) + 600,
        "jti": "urn:uuid:j",
        "authorization_details": ALL,
    }
    body.update(changes)
    return {k: v for k, v in body.items() if v is not ...}


def sign(body: dict[str, Any], key: Any = PUB_SECRET, alg: str = "HS256", **header: Any) -> str:
    """A token of any claims (PyJWT's encode would refuse some we need to test)."""
    headers = {"typ": "at+jwt", **header}
    headers = {k: v for k, v in headers.items() if v is not ...}
    return jwt.api_jws.PyJWS().encode(json.dumps(body).encode(), key, alg, headers)


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def issuer(identifier: str = ISS, **keys: Any) -> Issuer:
    keys.setdefault("publisher", StaticKey(PUB_SECRET, "HS256"))
    keys.setdefault("subscriber", StaticKey(SUB_SECRET, "HS256"))
    return Issuer(identifier, **keys)


@pytest.fixture
def clock() -> Clock:
    return Clock()


def verifier(clock: Clock, *issuers: Issuer, **kw: Any) -> AccessTokenVerifier:
    return AccessTokenVerifier(issuers or (issuer(),), clock=clock, **kw)


def verify(v: AccessTokenVerifier, token: str, role: Role = "publisher") -> AccessToken:
    return asyncio.run(v.verify(token, role, HUB, HUB))


def refused(v: AccessTokenVerifier, token: str, role: Role = "publisher") -> str:
    with pytest.raises(BearerError) as caught:
        verify(v, token, role)
    assert (caught.value.status, caught.value.error) == (401, "invalid_token")
    return caught.value.description


def test_a_valid_token_and_what_it_carries(clock: Clock) -> None:
    token = verify(verifier(clock), sign(claims()))
    assert (token.issuer, token.subject, token.client_id, token.jwt_id) == (
        ISS,
        "urn:uuid:s",
        ISS,
        "urn:uuid:j",
    )
    assert token.audience == (HUB,)
    assert token.expires_at == NOW + 600
    assert token.seconds_left(NOW + 100) == 500
    assert token.grants.matchers("publish") == (("*", "exact"),)
    assert not token.legacy


@pytest.mark.parametrize("typ", ["at+jwt", "AT+JWT", "application/at+jwt", "Application/At+JWT"])
def test_typ_at_jwt_in_any_spelling(clock: Clock, typ: str) -> None:
    verify(verifier(clock), sign(claims(), typ=typ))


@pytest.mark.parametrize("typ", ["JWT", "jwt", ..., "at+jwt+x", "application/jwt", 1])
def test_other_token_types_are_refused(clock: Clock, typ: Any) -> None:
    assert "typ" in refused(verifier(clock), sign(claims(), typ=typ))


def _unsigned(body: dict[str, Any], alg: str = "none") -> str:
    header = {"alg": alg, "typ": "at+jwt"}
    return f"{_b64(json.dumps(header).encode())}.{_b64(json.dumps(body).encode())}."


@pytest.mark.parametrize("alg", ["none", "None", "NONE"])
def test_unsigned_tokens_are_refused(clock: Clock, alg: str) -> None:
    assert "none" in refused(verifier(clock), _unsigned(claims(), alg))


def test_only_the_issuers_algorithm_is_accepted(clock: Clock) -> None:
    secret = PUB_SECRET + "-long-enough-for-hs384"
    v = verifier(clock, issuer(publisher=StaticKey(secret, "HS256")))
    assert "HS256" in refused(v, sign(claims(), secret, alg="HS384"))


def test_an_hmac_token_keyed_with_the_public_rsa_key_is_refused(clock: Clock) -> None:
    pair = key_pair("RS256")
    v = verifier(clock, issuer(publisher=StaticKey(pair.public_pem, "RS256")))
    verify(v, sign(claims(), pair.private, "RS256"))
    head = _b64(json.dumps({"alg": "HS256", "typ": "at+jwt"}).encode())
    signing_input = f"{head}.{_b64(json.dumps(claims()).encode())}"
    mac = hmac.new(pair.public_pem.encode(), signing_input.encode(), hashlib.sha256).digest()
    assert "RS256" in refused(v, f"{signing_input}.{_b64(mac)}")


def test_keys_carried_by_the_token_are_never_used(clock: Clock) -> None:
    trusted, attacker = key_pair("RS256"), key_pair("RS256")
    v = verifier(clock, issuer(publisher=StaticKey(trusted.public_pem, "RS256")))
    token = sign(claims(), attacker.private, "RS256", jwk=attacker.jwk(None), jku="https://evil/")
    assert "signature" in refused(v, token)


def test_each_issuer_verifies_with_its_own_keys_only(clock: Clock) -> None:
    a, b = key_pair("ES256"), key_pair("ES256")
    v = verifier(
        clock,
        issuer("https://a", publisher=StaticKey(a.public_pem, "ES256")),
        issuer("https://b", publisher=StaticKey(b.public_pem, "ES256")),
    )
    assert verify(v, sign(claims(iss="https://a"), a.private, "ES256")).issuer == "https://a"
    assert verify(v, sign(claims(iss="https://b"), b.private, "ES256")).issuer == "https://b"
    assert "signature" in refused(v, sign(claims(iss="https://b"), a.private, "ES256"))


def test_publisher_keys_do_not_verify_subscriber_tokens(clock: Clock) -> None:
    v = verifier(clock)
    verify(v, sign(claims(), SUB_SECRET), "subscriber")
    assert "signature" in refused(v, sign(claims(), PUB_SECRET), "subscriber")
    closed = verifier(clock, Issuer(ISS, publisher=StaticKey(PUB_SECRET, "HS256")))
    assert "no subscriber key" in refused(closed, sign(claims(), SUB_SECRET), "subscriber")


@pytest.mark.parametrize(
    ("changes", "reason"),
    [
        ({"exp": ...}, "no 'exp'"),
        ({"exp": int(NOW)}, "expired"),
        ({"exp": int(NOW) - 1}, "expired"),
        ({"exp": "9999999999"}, "'exp'"),
        ({"exp": True}, "'exp'"),
        ({"exp": 10**400}, "'exp'"),
        ({"nbf": int(NOW) + 1}, "not valid yet"),
        ({"nbf": "0"}, "'nbf'"),
        ({"iat": "now"}, "'iat'"),
        ({"aud": ...}, "'aud'"),
        ({"aud": "https://other.example.com/.well-known/mercure"}, "'aud'"),
        ({"aud": ["https://a", "https://b"]}, "'aud'"),
        ({"aud": [HUB, 3]}, "'aud'"),
        ({"aud": HUB.upper()}, "'aud'"),
        ({"iss": ...}, "no 'iss'"),
        ({"iss": "https://example.com/"}, "untrusted issuer"),
        ({"iss": ["https://example.com"]}, "'iss'"),
        ({"sub": 42}, "'sub'"),
        ({"client_id": {}}, "'client_id'"),
        ({"jti": 1}, "'jti'"),
        ({"authorization_details": [{"type": MERCURE_DETAIL}]}, "authorization_details"),
    ],
)
def test_claims_are_checked(clock: Clock, changes: dict[str, Any], reason: str) -> None:
    assert reason in refused(verifier(clock), sign(claims(**changes)))


def test_aud_may_be_an_array_holding_the_identifier(clock: Clock) -> None:
    token = verify(verifier(clock), sign(claims(aud=["https://other", HUB])))
    assert token.audience == ("https://other", HUB)


def test_iat_in_the_future_is_accepted_as_by_the_go_hub(clock: Clock) -> None:
    verify(verifier(clock), sign(claims(iat=int(NOW) + 3600)))


def test_leeway_applies_to_exp_and_nbf(clock: Clock) -> None:
    v = verifier(clock, leeway=30)
    verify(v, sign(claims(exp=int(NOW) - 29, nbf=int(NOW) + 29)))
    refused(v, sign(claims(exp=int(NOW) - 31)))
    refused(v, sign(claims(nbf=int(NOW) + 31)))


@pytest.mark.parametrize(
    "token",
    [
        "",
        "abc",
        "a.b",
        "a.b.c.d",
        "!!.!!.!!",
        _unsigned({"iss": ISS})[:-1] + "x" * 5,
        "eyJhbGciOiJIUzI1NiJ9.bm90IGpzb24.c2ln",
        "W10.e30.c2ln",
        "x" * 70000,
    ],
)
def test_malformed_tokens_are_invalid_tokens(clock: Clock, token: str) -> None:
    refused(verifier(clock), token)


def test_critical_extensions_are_refused(clock: Clock) -> None:
    assert "crit" in refused(verifier(clock), sign(claims(), crit=["exp"], exp=1))


def test_nan_in_the_claims_is_malformed(clock: Clock) -> None:
    assert "malformed" in refused(verifier(clock), sign(claims(exp=float("nan"))))


# -- compatibility mode: the Go hub's protocol_version_compatibility 8 -----------------------


def test_compatibility_relaxes_typ_exp_aud_and_the_sole_issuer(clock: Clock) -> None:
    v = verifier(clock, compatibility=True)
    token = verify(v, sign(claims(exp=..., aud="https://elsewhere", iss=...), typ="JWT"))
    assert token.expires_at is None and token.issuer == ISS
    verify(v, sign(claims(iss="https://unknown"), typ=...))


def test_compatibility_keeps_the_signature_nbf_exp_and_details(clock: Clock) -> None:
    v = verifier(clock, compatibility=True)
    refused(v, sign(claims(), "another-secret-of-at-least-32-bytes!!"))
    refused(v, sign(claims(), PUB_SECRET * 2, alg="HS512"))
    refused(v, _unsigned(claims()))
    refused(v, sign(claims(exp=int(NOW) - 1)))
    refused(v, sign(claims(nbf=int(NOW) + 5)))
    refused(v, sign(claims(authorization_details=[{"type": MERCURE_DETAIL, "actions": []}])))
    refused(v, sign(claims(aud=3)))


def test_compatibility_with_several_issuers_still_needs_a_matching_iss(clock: Clock) -> None:
    v = verifier(clock, issuer("https://a"), issuer("https://b"), compatibility=True)
    verify(v, sign(claims(iss="https://a")))
    assert "untrusted" in refused(v, sign(claims(iss="https://c")))
    assert "no 'iss'" in refused(v, sign(claims(iss=...)))


def test_compatibility_reads_the_0x_claim_only_without_authorization_details(clock: Clock) -> None:
    v = verifier(clock, compatibility=True)
    legacy = {
        "publish": ["https://example.com/books/{id}"],
        "subscribe": ["*"],
        "payload": {"a": 1},
    }
    token = verify(v, sign(claims(authorization_details=..., mercure=legacy)))
    assert token.legacy
    assert token.grants.matchers("publish") == (("https://example.com/books/{id}", LEGACY),)
    assert token.grants.fallback_payload == {"a": 1}
    namespaced = verify(
        v,
        sign(
            claims(
                authorization_details=[],
                mercure=legacy,
                **{"https://mercure.rocks/": {"publish": ["x"]}},
            )
        ),
    )
    assert namespaced.grants.matchers("publish") == (("x", LEGACY),)
    both = verify(v, sign(claims(mercure=legacy)))
    assert not both.legacy and both.grants.matchers("publish") == (("*", "exact"),)
    only_other = verify(v, sign(claims(authorization_details=[{"type": "x"}], mercure=legacy)))
    assert not only_other.legacy and not only_other.grants
    assert "list of strings" in refused(
        v, sign(claims(authorization_details=..., mercure={"publish": "*"}))
    )


def test_the_0x_claim_grants_nothing_in_modern_mode(clock: Clock) -> None:
    token = verify(
        verifier(clock), sign(claims(authorization_details=..., mercure={"publish": ["*"]}))
    )
    assert not token.grants and not token.legacy


def test_an_issuer_without_identifier_is_compatibility_only(clock: Clock) -> None:
    with pytest.raises(ValueError, match="identifier"):
        AccessTokenVerifier([issuer("")])
    v = AccessTokenVerifier([issuer("")], compatibility=True, clock=clock)
    assert verify(v, sign(claims(iss=...))).issuer == ""


def test_configuration_errors_are_named() -> None:
    with pytest.raises(ValueError, match="no trusted issuer"):
        AccessTokenVerifier([])
    with pytest.raises(ValueError, match="neither publisher nor subscriber"):
        Issuer(ISS)
    with pytest.raises(ValueError, match="private key"):
        StaticKey(key_pair("ES256").private_pem, "ES256")
    assert key_source() is None
    assert isinstance(key_source(PUB_SECRET), StaticKey)
    assert isinstance(key_source(PUB_SECRET, jwks_url="http://127.0.0.1:1/jwks"), JwksKeySource)


# -- the cache of verified tokens -------------------------------------------------------------


class CountingKeys:
    def __init__(self, secret: str) -> None:
        self.inner = StaticKey(secret, "HS256")
        self.calls = 0
        self.generation = 0

    async def key_for(self, kid: str | None, algorithm: str) -> Any:
        self.calls += 1
        return await self.inner.key_for(kid, algorithm)


def test_a_cached_token_skips_the_signature_but_not_expiry(clock: Clock) -> None:
    keys = CountingKeys(PUB_SECRET)
    v = verifier(clock, Issuer(ISS, publisher=keys))
    token = sign(claims())
    verify(v, token)
    verify(v, token)
    assert keys.calls == 1
    refused(v, token, "subscriber")  # another role: not from the cache
    clock.now = NOW + 600
    assert "expired" in refused(v, token)


def test_a_cached_token_is_not_reused_for_another_audience(clock: Clock) -> None:
    v = verifier(clock)
    token = sign(claims())
    verify(v, token)
    with pytest.raises(BearerError):
        asyncio.run(v.verify(token, "publisher", "https://other/.well-known/mercure", HUB))


def test_changed_keys_drop_cached_tokens(clock: Clock) -> None:
    keys = CountingKeys(PUB_SECRET)
    v = verifier(clock, Issuer(ISS, publisher=keys))
    token = sign(claims())
    verify(v, token)
    keys.generation += 1
    keys.inner = StaticKey("a-new-secret-of-at-least-32-bytes-long", "HS256")
    assert "signature" in refused(v, token)


# -- JWK Sets ---------------------------------------------------------------------------------


@pytest.fixture
def jwks() -> Iterator[JwksServer]:
    server = JwksServer()
    yield server
    server.close()


def jwks_verifier(url: str) -> AccessTokenVerifier:
    source = JwksKeySource(JwksKeys(url, min_refresh=0, timeout=2))
    return AccessTokenVerifier([Issuer(ISS, publisher=source)])


def _real(body: dict[str, Any]) -> dict[str, Any]:
    return {**body, "iat": int(time.time()), "exp": int(time.time()) + 600}


def test_a_jwk_set_issuer_picks_its_key_by_kid(jwks: JwksServer) -> None:
    rsa, ec = key_pair("RS256"), key_pair("ES256")
    jwks.publish([rsa.jwk("r"), ec.jwk("e")])

    async def go() -> None:
        v = jwks_verifier(jwks.url)
        for pair, kid in ((rsa, "r"), (ec, "e")):
            token = sign(_real(claims()), pair.private, pair.alg, kid=kid)
            assert (await v.verify(token, "publisher", HUB, HUB)).issuer == ISS
        for token, reason in (
            (sign(_real(claims()), rsa.private, "RS256", kid="unknown"), "unknown key id"),
            (sign(_real(claims()), PUB_SECRET, "HS256", kid="r"), "not accepted with a JWK Set"),
            (sign(_real(claims()), rsa.private, "RS256", kid="e"), "does not fit"),
        ):
            with pytest.raises(BearerError, match=reason):
                await v.verify(token, "publisher", HUB, HUB)

    asyncio.run(go())


def test_a_jwk_set_that_cannot_be_fetched_is_a_503(jwks: JwksServer) -> None:
    pair: KeyPair = key_pair("RS256")
    jwks.serve(b"down", status=500)

    async def go() -> None:
        v = jwks_verifier(jwks.url)
        with pytest.raises(RequestError) as caught:
            await v.verify(
                sign(_real(claims()), pair.private, "RS256", kid="k"), "publisher", HUB, HUB
            )
        assert caught.value.status == 503 and not isinstance(caught.value, BearerError)

    asyncio.run(go())


def test_a_cache_of_size_zero_verifies_every_time(clock: Clock) -> None:
    keys = CountingKeys(PUB_SECRET)
    v = verifier(clock, Issuer(ISS, publisher=keys), cache_size=0, check=UrlPatternCheck(0))
    token = sign(
        claims(
            authorization_details=[
                {
                    "type": MERCURE_DETAIL,
                    "actions": ["publish"],
                    "topics": [{"match": "/books/:id", "match_type": "urlpattern"}],
                }
            ]
        )
    )
    verify(v, token)
    verify(v, token)
    assert keys.calls == 2


def test_a_tokens_url_patterns_are_bounded_in_compile_cost(clock: Clock) -> None:
    """A token's patterns, each past the per-pattern limit or together past a request's, are
    an invalid token naming the limit (compiling them held the loop for seconds); under
    both, it is accepted."""

    def token(*patterns: str) -> str:
        topics = [{"match": p, "match_type": "urlpattern"} for p in patterns]
        detail = {"type": MERCURE_DETAIL, "actions": ["subscribe"], "topics": topics}
        return sign(claims(authorization_details=[detail]), SUB_SECRET)

    v = verifier(clock, cache_size=0)
    one = refused(v, token(r"https://e.com/:id(\p{L}{150})"), "subscriber")
    assert "PATTERN_COST_LIMIT" in one
    wide = [rf"https://e.com/{i}/:id(.{{200}})" for i in range(6)]
    assert "SUBSCRIPTION_COST_LIMIT" in refused(v, token(*wide), "subscriber")
    accepted = verify(v, token(*wide[:3]), "subscriber")
    assert len(accepted.grants.matchers("subscribe")) == 3
