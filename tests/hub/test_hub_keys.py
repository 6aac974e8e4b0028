"""Every signing algorithm with real generated keys, key checks at start-up, and the
namespaced ``https://mercure.rocks/`` claim."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import time
from collections.abc import Callable
from typing import Any

import jwt
import pytest

from skipfilter.errors import SkipFilterError
from skipfilter.hub import HubSettings
from skipfilter.hub.auth.verify import AuthError
from tests.hub.hubtest import PUBLISHER_KEY, SUBSCRIBER_KEY, Server, Stream, token
from tests.hub.keytest import key_pair

BOOK = "https://example.com/books/1"
ASYMMETRIC = [
    "RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA",
]  # fmt: skip
#: For each algorithm, another one its key could be mistaken for (same key, other check).
_SIBLING = {"RS256": "PS256", "PS256": "RS256", "RS512": "PS512", "PS384": "RS384"}


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def hmac_forgery(secret: str, **mercure: Any) -> str:
    """An HS256 token whose secret is ``secret`` (a public PEM: the HS/RS confusion attack).

    Built by hand because PyJWT rightly refuses to sign with a PEM as an HMAC secret.
    """
    header = _b64(json.dumps({"alg": "HS256", "typ": "JWT"}).encode())
    payload = _b64(json.dumps({"mercure": mercure, "exp": int(time.time()) + 60}).encode())
    signature = hmac.new(secret.encode(), f"{header}.{payload}".encode(), hashlib.sha256)
    return f"{header}.{payload}.{_b64(signature.digest())}"


def _settings(settings: HubSettings, alg: str, publisher_key: str) -> HubSettings:
    return settings.with_changes(publisher_key=publisher_key, publisher_alg=alg)


@pytest.mark.parametrize("alg", ASYMMETRIC)
def test_asymmetric_publishers_accepted_and_impostors_refused(
    make_server: Callable[..., Server], settings: HubSettings, alg: str
) -> None:
    pair, other = key_pair(alg), key_pair(alg)
    server = make_server(_settings(settings, alg, pair.public_pem))
    assert server.publish(BOOK, auth=pair.sign(publish=["*"]), id="ok").status_code == 200
    refusals = {
        "bad signature": other.sign(publish=["*"]),
        f"algorithm 'HS256' is not {alg!r}": hmac_forgery(pair.public_pem, publish=["*"]),
        "alg 'none'": jwt.encode({"mercure": {"publish": ["*"]}}, "", algorithm="none"),
        "expired": pair.sign(exp=-10, publish=["*"]),
    }
    if alg in _SIBLING:
        refusals[f"algorithm {_SIBLING[alg]!r}"] = pair.sign(_SIBLING[alg], publish=["*"])
    for reason, bad in refusals.items():
        response = server.publish(BOOK, auth=bad)
        assert response.status_code == 401, reason
        assert reason in response.text
    assert server.hub.ring.head == 1


@pytest.mark.parametrize("alg", ["HS256", "HS384", "HS512"])
def test_hmac_publishers_refuse_other_algorithms(
    make_server: Callable[..., Server], settings: HubSettings, alg: str
) -> None:
    secret = PUBLISHER_KEY * 2  # 64 bytes and more, as RFC 7518 asks of HS512
    server = make_server(_settings(settings, alg, secret))
    assert server.publish(BOOK, auth=token(secret, alg, publish=["*"])).status_code == 200
    other_hs = "HS512" if alg != "HS512" else "HS256"
    response = server.publish(BOOK, auth=token(secret, other_hs, publish=["*"]))
    assert response.status_code == 401 and f"{other_hs!r} is not {alg!r}" in response.text
    rsa = key_pair("RS256").sign(publish=["*"])
    response = server.publish(BOOK, auth=rsa)
    assert response.status_code == 401 and f"'RS256' is not {alg!r}" in response.text
    assert server.hub.ring.head == 1


@pytest.mark.parametrize("alg", ["ES512", "EdDSA", "PS384"])
def test_asymmetric_subscribers_receive_private_updates(
    make_server: Callable[..., Server],
    settings: HubSettings,
    streams: Callable[..., Stream],
    alg: str,
) -> None:
    pair = key_pair(alg)
    server = make_server(settings.with_changes(subscriber_key=pair.public_pem, subscriber_alg=alg))
    allowed = streams(server, [BOOK], params={"authorization": pair.sign(subscribe=[BOOK])})
    forged = streams(server, [BOOK], params={"authorization": key_pair(alg).sign(subscribe=["*"])})
    assert forged.response is not None and forged.response.status_code == 401
    server.publish(BOOK, private="on", id="secret")
    assert allowed.event().id == "secret"


def test_keys_are_checked_when_the_hub_is_configured() -> None:
    rsa, p256, p384, p521 = (key_pair(a) for a in ("RS256", "ES256", "ES384", "ES512"))
    cases: list[tuple[dict[str, Any], str]] = [
        ({"publisher_key": rsa.public_pem, "publisher_alg": "HS256"}, "asymmetric"),
        ({"publisher_key": p256.public_pem, "publisher_alg": "RS256"}, "cannot check RS256"),
        ({"publisher_key": p384.public_pem, "publisher_alg": "ES256"}, r"fits ES384\)"),
        ({"publisher_key": p256.public_pem, "publisher_alg": "ES512"}, "EC P-256 key"),
        ({"subscriber_key": rsa.private_pem, "subscriber_alg": "RS256"}, "private key"),
        ({"subscriber_key": "not a key", "subscriber_alg": "EdDSA"}, "not a PEM public key"),
        ({"publisher_key": "k" * 32, "publisher_alg": "ES521"}, "publisher_alg 'ES521'"),
        ({"publisher_jwks_url": "ftp://idp.example/keys.json"}, "must be an http"),
    ]
    for fields, message in cases:
        with pytest.raises(ValueError, match=message):
            HubSettings(anonymous=True, **fields)
    # what fits is accepted, including ES512 on P-521
    issuer = ("https://issuer.example",)
    HubSettings(
        anonymous=True, publisher_key=p521.public_pem, publisher_alg="ES512", trusted_issuers=issuer
    )
    HubSettings(
        anonymous=True, publisher_key=rsa.public_pem, publisher_alg="PS512", trusted_issuers=issuer
    )


def test_auth_errors_are_skipfilter_errors() -> None:
    error = AuthError(403, "no")
    assert isinstance(error, SkipFilterError)
    assert (error.status, error.reason, str(error)) == (403, "no", "no")


NS = "https://mercure.rocks/"


@pytest.mark.parametrize(
    ("claims", "status", "reason"),
    [
        ({NS: {"publish": [BOOK]}}, 200, ""),
        ({"mercure": {"publish": ["*"]}, NS: {"publish": ["https://example.com/other"]}}, 403, ""),
        ({"mercure": {"subscribe": ["*"]}, NS: {"publish": ["*"]}}, 200, ""),
        ({"mercure": {"publish": ["*"]}, NS: None}, 200, ""),
        ({"mercure": {"publish": ["*"]}, NS: "everything"}, 401, f"the {NS!r} claim"),
        ({NS: {"publish": BOOK}}, 401, f"'publish' in {NS!r} must be a list"),
    ],
    ids=["alone", "wins-over-mercure", "replaces-not-merges", "null-ignored", "not-object", "bad"],
)
def test_namespaced_claim_as_in_the_go_hub(
    server: Server, claims: dict[str, Any], status: int, reason: str
) -> None:
    signed = jwt.encode({**claims, "exp": int(time.time()) + 60}, PUBLISHER_KEY, "HS256")
    response = server.publish(BOOK, auth=signed)
    assert response.status_code == status
    assert reason in response.text


def test_namespaced_subscribe_claim_and_payload(
    make_server: Callable[..., Server], settings: HubSettings, streams: Callable[..., Stream]
) -> None:
    server = make_server(settings.with_changes(subscriptions=True))

    def namespaced(*topics: str, **extra: Any) -> str:
        claims = {NS: {"subscribe": list(topics), **extra}, "exp": int(time.time()) + 60}
        return jwt.encode(claims, SUBSCRIBER_KEY, "HS256")

    stream = streams(
        server, [BOOK], params={"authorization": namespaced(BOOK, payload={"user": "ann"})}
    )
    server.publish(BOOK, private="on", id="secret")
    assert stream.event().id == "secret"
    subs = "/.well-known/mercure/subscriptions"
    with server.client() as client:
        listing = client.get(subs, headers={"Authorization": f"Bearer {namespaced(subs)}"})
        refused = client.get(subs, headers={"Authorization": f"Bearer {namespaced(BOOK)}"})
    assert listing.status_code == 200 and refused.status_code == 403
    assert [d.get("payload") for d in listing.json()["subscriptions"]] == [{"user": "ann"}]
