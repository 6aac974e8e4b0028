"""Signed Mercure tokens: a 1.0 access token (RFC 9068, ``authorization_details``) or a 0.x
token (the ``mercure`` claim), from an HMAC secret or a PEM private key.

Nothing here checks matchers against a hub's rules: the hub's ``skipfilter token`` does that
before calling :func:`sign_access_token`; a publisher that mints its own grants sends them to a
hub that checks them anyway.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Sequence
from typing import Any, Final

import jwt
from cryptography.hazmat.primitives.serialization import load_pem_private_key

from skipfilter.errors import SkipFilterError
from skipfilter.tokens.algorithms import (
    ALGORITHMS,
    HMAC_ALGORITHMS,
    hmac_secret_problem,
    key_algorithms,
)

#: The ``typ`` header of an RFC 9068 access token.
AT_JWT: Final = "at+jwt"
#: The ``type`` of a Mercure entry in ``authorization_details`` (draft-08 §6.4).
MERCURE_DETAIL: Final = "https://mercure.rocks/authorization-detail"
#: One topic matcher, as granted: ``(value, match_type)``, match_type ``exact`` or
#: ``urlpattern`` (the hub's too; not ``skipfilter.Matcher``, the index interface).
TopicMatcher = tuple[str, str]
#: The preferred algorithm of each kind of private key.
_KEY_DEFAULTS = {"RS256", "ES256", "ES384", "ES512", "EdDSA"}


class MintError(SkipFilterError, ValueError):
    """A token that cannot be minted as asked; the message says why."""


def sign_access_token(
    issuer: str,
    audience: str,
    key: str,
    *,
    publish: Sequence[TopicMatcher] = (),
    subscribe: Sequence[TopicMatcher] = (),
    payload: dict[str, Any] | None = None,
    algorithm: str | None = None,
    kid: str | None = None,
    subject: str | None = None,
    client_id: str | None = None,
    ttl: float = 3600,
    now: float | None = None,
) -> str:
    """A Mercure 1.0 access token granting ``publish``/``subscribe`` on the matchers, with
    every claim RFC 9068 asks issuers for. Raises MintError naming the problem."""
    if not issuer or not audience:
        raise MintError("an issuer and an audience are required")
    if not publish and not subscribe:
        raise MintError("grant something: at least one publish or subscribe matcher")
    if payload is not None and not subscribe:
        raise MintError("a payload goes with a subscribe grant: add one")
    signer, alg = signing_key(key, algorithm)
    issued = int(time.time() if now is None else now)
    details = [
        _detail(action, matchers, payload if action == "subscribe" else None)
        for action, matchers in (("publish", publish), ("subscribe", subscribe))
        if matchers
    ]
    claims = {
        "iss": issuer,
        "aud": audience,
        "sub": subject or f"urn:uuid:{uuid.uuid4()}",
        "client_id": client_id or issuer,
        "iat": issued,
        "exp": issued + max(1, int(ttl)),
        "jti": f"urn:uuid:{uuid.uuid4()}",
        "authorization_details": details,
    }
    headers = {"typ": AT_JWT, **({"kid": kid} if kid else {})}
    return jwt.encode(claims, signer, algorithm=alg, headers=headers)


def sign_legacy_token(
    key: str,
    *,
    publish: Sequence[str] = (),
    subscribe: Sequence[str] = (),
    payload: Any = None,
    algorithm: str | None = None,
    ttl: float | None = 3600,
    now: float | None = None,
) -> str:
    """A Mercure 0.x token: ``{"mercure": {"publish": [...], "subscribe": [...]}}`` selectors,
    with an ``exp`` ``ttl`` seconds away (None: none, as 0.x allowed)."""
    if not publish and not subscribe:
        raise MintError("grant something: at least one publish or subscribe selector")
    signer, alg = signing_key(key, algorithm)
    mercure: dict[str, Any] = {}
    if publish:
        mercure["publish"] = list(publish)
    if subscribe:
        mercure["subscribe"] = list(subscribe)
    if payload is not None:
        mercure["payload"] = payload
    claims: dict[str, Any] = {"mercure": mercure}
    if ttl is not None:
        claims["exp"] = int(time.time() if now is None else now) + max(1, int(ttl))
    return jwt.encode(claims, signer, algorithm=alg)


def _detail(action: str, matchers: Sequence[TopicMatcher], payload: Any) -> dict[str, Any]:
    topics = [{"match": v} if t == "exact" else {"match": v, "match_type": t} for v, t in matchers]
    detail: dict[str, Any] = {"type": MERCURE_DETAIL, "actions": [action], "topics": topics}
    if payload is not None:
        detail["payload"] = payload
    return detail


def signing_key(text: str, algorithm: str | None = None) -> tuple[Any, str]:
    """The key to sign with and its algorithm: HS256 for a secret, the key's own otherwise."""
    if algorithm is not None and algorithm not in ALGORITHMS:
        raise MintError(f"algorithm {algorithm!r} is not one of {sorted(ALGORITHMS)}")
    if "-----BEGIN" not in text:
        alg = algorithm or "HS256"
        if alg not in HMAC_ALGORITHMS:
            raise MintError(f"{alg} needs a PEM private key; a secret signs HS256/384/512")
        problem = hmac_secret_problem(text)
        if problem is not None:
            raise MintError(problem)
        return text.encode(), alg
    try:
        private = load_pem_private_key(text.strip().encode(), password=None)
    except (ValueError, TypeError) as exc:
        raise MintError(f"not a PEM private key ({exc})") from None
    fits = key_algorithms(private.public_key())
    if algorithm is None:
        choices = sorted(fits & _KEY_DEFAULTS)
        if not choices:
            raise MintError("this kind of private key signs no supported algorithm")
        return private, choices[0]
    if algorithm not in fits:
        raise MintError(f"this key cannot sign {algorithm} (it fits {', '.join(sorted(fits))})")
    return private, algorithm
