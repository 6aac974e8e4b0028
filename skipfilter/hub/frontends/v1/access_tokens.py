"""Mercure 1.0 access tokens minted with the hub's own checks: what ``skipfilter token``, the
demo page and the tests sign, so a token minted here is one the hub accepts.

The token is an RFC 9068 JWT access token (``typ: at+jwt``) carrying every claim RFC 9068 asks
issuers for (``iss aud sub client_id iat exp jti``) and an ``authorization_details`` claim with
one ``publish`` and one ``subscribe`` Mercure detail, each matcher checked as the hub checks it;
``skipfilter.tokens`` signs it with an HMAC secret or a PEM private key.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from skipfilter.hub.frontends.v1.matchers import (
    TopicMatcher,
    UrlPatternCheck,
    matcher_problem,
)
from skipfilter.hub.paths import HUB_PATH
from skipfilter.hub.settings import DEMO_ISSUER
from skipfilter.tokens.mint import MintError, sign_access_token, sign_legacy_token

__all__ = [
    "DEV_AUDIENCE",
    "DEV_ISSUER",
    "DEV_KEY_ENV",
    "MintError",
    "mint_access_token",
    "mint_legacy_token",
]

DEV_ISSUER = DEMO_ISSUER  # what a --demo hub (``make run``) trusts without --issuer
DEV_AUDIENCE = f"http://localhost:3000{HUB_PATH}"
DEV_KEY_ENV = "MERCURE_PUBLISHER_JWT_KEY"


def mint_access_token(
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
    """A signed access token granting ``publish``/``subscribe`` on ``(match, match_type)``
    matchers, ``payload`` attached to the subscribe grant, each matcher checked as the hub
    will check it (``skipfilter.tokens`` signs). Raises MintError naming the problem.
    """
    if not issuer or not audience:
        raise MintError("an issuer and an audience are required")
    check = UrlPatternCheck()
    for value, match_type in (*publish, *subscribe):
        problem = matcher_problem(value, match_type, audience, check)
        if problem is not None:
            raise MintError(f"matcher {value[:80]!r} ({match_type}): {problem}")
    return sign_access_token(
        issuer,
        audience,
        key,
        publish=publish,
        subscribe=subscribe,
        payload=payload,
        algorithm=algorithm,
        kid=kid,
        subject=subject,
        client_id=client_id,
        ttl=ttl,
        now=now,
    )


#: A Mercure 0.x token (the ``mercure`` claim) for a hub in compatibility mode: its topics and
#: URI templates need no check a 1.0 matcher needs, so the shared signer serves as it is.
mint_legacy_token = sign_legacy_token
