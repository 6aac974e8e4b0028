"""JWT authorization the way Mercure hubs do it: find the token, verify it, read its claims.

The token comes from the ``Authorization: Bearer`` header, else the ``authorization`` query
parameter, else the cookie (``mercureAuthorization`` unless configured). Its rights are in the
``mercure`` claim or, in newer tokens, the ``https://mercure.rocks/`` claim, which wins when
both are present (as in the Go hub). Failures carry an HTTP status and a reason that the app
sends back verbatim, so a client always learns why it was refused. Keys fetched from a JWK
Set URL live in ``skipfilter.hub.auth.jwks``.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, replace
from enum import Enum
from functools import lru_cache
from typing import Any, Protocol
from urllib.parse import urlsplit

import jwt

from skipfilter.errors import InvalidSelector
from skipfilter.hub.keys import load_key
from skipfilter.hub.origins import OriginPolicy
from skipfilter.hub.refusal import INSUFFICIENT_SCOPE, INVALID_TOKEN, HubRefusal
from skipfilter.selectors import TypedSelector

#: A selector a ``SelectorCover`` takes: a 0.x Mercure selector, or a typed one.
SelectorInput = str | TypedSelector

TOPIC_WILDCARD = "*"
#: The claim Mercure tokens carry their rights in, and its namespaced (newer) spelling.
MERCURE_CLAIM = "mercure"
NAMESPACED_CLAIM = "https://mercure.rocks/"


class TokenSource(Enum):
    """Where a token was found; cookies need the extra CSRF check on publish."""

    HEADER = "header"
    QUERY = "query"
    COOKIE = "cookie"


class AuthError(HubRefusal):
    """A refused request: ``status`` is 401 (no or bad token), 403 (the token lacks the
    right) or 503 (the keys to check it could not be fetched); always answered with a Bearer
    challenge: ``insufficient_scope`` for a 403, ``invalid_token`` when the reason names the
    token, else bare (as 0.x hubs answer)."""

    challenged = True

    def __init__(self, status: int, reason: str) -> None:
        super().__init__(reason)
        self.status = status
        self.reason = reason
        if status == 403:
            self.error = INSUFFICIENT_SCOPE
        elif "token" in reason:
            self.error = INVALID_TOKEN


@dataclass(frozen=True, slots=True)
class Claims:
    """The Mercure part of a verified token. ``None`` selectors mean the claim was absent."""

    publish: tuple[str, ...] | None
    subscribe: tuple[str, ...] | None
    payload: Any
    expires_at: float | None
    source: TokenSource


def find_token(
    headers: Mapping[str, str], query: Mapping[str, str], cookies: Mapping[str, str], cookie: str
) -> tuple[str, TokenSource] | None:
    """Return the token and its source by Mercure's precedence, or None when there is none.

    Raises AuthError (401) for an ``Authorization`` header that is not ``Bearer <token>``.
    """
    header = headers.get("authorization")
    if header is not None:
        scheme, _, token = header.partition(" ")
        if scheme.lower() != "bearer" or not token.strip():
            raise AuthError(401, "invalid token: Authorization header must be 'Bearer <token>'")
        return token.strip(), TokenSource.HEADER
    if query.get("authorization"):
        return query["authorization"], TokenSource.QUERY
    if cookies.get(cookie):
        return cookies[cookie], TokenSource.COOKIE
    return None


def unverified_header(token: str) -> dict[str, Any]:
    """The token's JOSE header, refusing malformed tokens and ``alg: none`` (401)."""
    try:
        header = jwt.get_unverified_header(token)
    except jwt.PyJWTError as exc:
        raise AuthError(401, f"invalid token: malformed JWT ({exc})") from exc
    alg = header.get("alg")
    if not isinstance(alg, str) or alg.lower() == "none":
        raise AuthError(401, "invalid token: unsigned tokens (alg 'none') are not accepted")
    return header


def decode_claims(token: str, key: Any, algorithm: str, source: TokenSource) -> Claims:
    """Check the signature with ``key`` for ``algorithm`` only, then expiry; read the claims."""
    try:
        decoded = jwt.decode(token, key, algorithms=[algorithm], options={"verify_aud": False})
    except jwt.ExpiredSignatureError as exc:
        raise AuthError(401, "invalid token: expired") from exc
    except jwt.ImmatureSignatureError as exc:
        raise AuthError(401, "invalid token: not valid yet (nbf/iat in the future)") from exc
    except jwt.InvalidSignatureError as exc:
        raise AuthError(401, "invalid token: bad signature") from exc
    except (jwt.PyJWTError, ValueError, TypeError) as exc:
        raise AuthError(401, f"invalid token: {exc}") from exc
    return read_mercure_claim(decoded, source)


def read_mercure_claim(decoded: Mapping[str, Any], source: TokenSource) -> Claims:
    """The Mercure rights of verified claims (also read by 1.0's compatibility mode)."""
    name, mercure = MERCURE_CLAIM, decoded.get(MERCURE_CLAIM, {})
    if decoded.get(NAMESPACED_CLAIM) is not None:
        # As in the Go hub, the namespaced claim replaces the plain one whole, never merged.
        name, mercure = NAMESPACED_CLAIM, decoded[NAMESPACED_CLAIM]
    if not isinstance(mercure, dict):
        raise AuthError(401, f"invalid token: the {name!r} claim must be an object")
    exp = decoded.get("exp")
    return Claims(
        publish=_selectors(mercure, name, "publish"),
        subscribe=_selectors(mercure, name, "subscribe"),
        payload=mercure.get("payload"),
        expires_at=float(exp) if isinstance(exp, int | float) else None,
        source=source,
    )


def verify(token: str, key: Any, algorithm: str, source: TokenSource) -> Claims:
    """Check signature, algorithm and expiry; return the Mercure claims.

    The algorithm is fixed by configuration, never taken from the token (no ``alg: none``,
    no HS/RS confusion). ``key`` is a secret, a PEM text or a key from ``load_key``.
    Raises AuthError(401) with the reason on any failure.
    """
    alg = unverified_header(token)["alg"]
    if alg != algorithm:
        raise AuthError(401, f"invalid token: algorithm {alg!r} is not {algorithm!r}")
    return decode_claims(token, key, algorithm, source)


class TokenVerifier(Protocol):
    """What the app asks of a role's verifier (a static key, or a JWK Set)."""

    async def claims(self, token: str, source: TokenSource) -> Claims:
        """Verified claims of ``token``; raises AuthError."""
        ...


class TokenCache:
    """An LRU of tokens already verified: the signature check is the costly part.

    Publishers and reconnecting subscribers present the same token again and again; a hit
    skips the signature but still enforces ``exp``.
    """

    def __init__(self, size: int = 4096) -> None:
        self._size = size
        self._cache: OrderedDict[str, Claims] = OrderedDict()

    def get(self, token: str, source: TokenSource) -> Claims | None:
        """The cached claims (re-labelled with ``source``), None on a miss; 401 once expired."""
        claims = self._cache.get(token)
        if claims is None:
            return None
        self._cache.move_to_end(token)
        if claims.expires_at is not None and claims.expires_at <= time.time():
            del self._cache[token]
            raise AuthError(401, "invalid token: expired")
        return claims if claims.source is source else replace(claims, source=source)

    def put(self, token: str, claims: Claims) -> None:
        """Remember verified claims, evicting the least recently used beyond the size."""
        self._cache[token] = claims
        if len(self._cache) > self._size:
            self._cache.popitem(last=False)

    def clear(self) -> None:
        """Forget everything (the keys changed)."""
        self._cache.clear()


class Verifier:
    """``verify`` for one configured key and algorithm, with a ``TokenCache``.

    The key is loaded once here (``load_key``): a bad key raises ValueError at start-up.
    """

    def __init__(self, key: str, algorithm: str, size: int = 4096) -> None:
        self.key = load_key(key, algorithm)
        self.algorithm = algorithm
        self._cache = TokenCache(size)

    def __call__(self, token: str, source: TokenSource) -> Claims:
        """Verified claims of ``token`` (see ``verify``); raises AuthError(401)."""
        claims = self._cache.get(token, source)
        if claims is None:
            claims = verify(token, self.key, self.algorithm, source)
            self._cache.put(token, claims)
        return claims

    async def claims(self, token: str, source: TokenSource) -> Claims:
        """``TokenVerifier`` interface: the same check (nothing to await)."""
        return self(token, source)


def _selectors(mercure: Mapping[str, Any], claim: str, name: str) -> tuple[str, ...] | None:
    value = mercure.get(name)
    if value is None:
        return None
    if not isinstance(value, list) or not all(isinstance(s, str) for s in value):
        where = f"'mercure.{name}'" if claim == MERCURE_CLAIM else f"{name!r} in {claim!r}"
        raise AuthError(401, f"invalid token: {where} must be a list of strings")
    return tuple(value)


@lru_cache(maxsize=16)
def _origin_policy(allowed: tuple[str, ...]) -> OriginPolicy:
    return OriginPolicy(allowed)


def check_origin(headers: Mapping[str, str], allowed: Iterable[str]) -> None:
    """CSRF guard for cookie-authenticated publishes: Origin (or Referer) must be allowed.

    ``allowed`` holds exact origins, ``*``, ``null`` or ``scheme://*.domain`` wildcards
    (see ``skipfilter.hub.origins``); scheme and port must match exactly.
    """
    origin = headers.get("origin")
    shown = origin
    if not origin:
        referer = headers.get("referer")
        if not referer:
            raise AuthError(401, "cookie authentication requires an Origin or Referer header")
        origin = referer
        parts = urlsplit(referer)
        shown = f"{parts.scheme}://{parts.netloc}"
    if not _origin_policy(tuple(allowed)).allows(origin):
        raise AuthError(403, f"origin {shown!r} is not allowed to publish with a cookie")


class SelectorCover:
    """Answers "does some selector of this token match this topic?" through the TopicIndex.

    Each distinct selector list becomes one subscriber of a private index, so repeated tokens
    reuse its cached per-topic bitmaps. Runtime: O(1) for ``*`` and exact hits, else one
    index lookup per topic. LRU-bounded; not thread-safe (call it from the event loop).
    """

    def __init__(self, index_factory: Callable[[], Any], size: int = 1024) -> None:
        self._index = index_factory()
        self._size = size
        self._sids: OrderedDict[tuple[SelectorInput, ...], int] = OrderedDict()

    def covers(self, selectors: tuple[SelectorInput, ...], topic: str) -> bool:
        """True when one of ``selectors`` matches ``topic``: plain strings are 0.x Mercure
        selectors, ``TypedSelector`` values say their type (``*`` matches every topic)."""
        if _obviously_covers(selectors, topic):
            return True
        if all(_plainly_exact(s) for s in selectors):
            return False
        sid = self._sids.get(selectors)
        if sid is None:
            try:
                sid = self._index.subscribe(selectors)
            except InvalidSelector as exc:
                raise AuthError(401, f"invalid token: bad selector ({exc})") from exc
            self._sids[selectors] = sid
            if len(self._sids) > self._size:
                _, old = self._sids.popitem(last=False)
                self._index.unsubscribe(old)
        else:
            self._sids.move_to_end(selectors)
        return sid in self._index.match([topic])

    def covers_all(self, selectors: tuple[SelectorInput, ...], topics: Iterable[str]) -> str | None:
        """Return the first topic no selector covers, or None when all are covered."""
        for topic in topics:
            if not self.covers(selectors, topic):
                return topic
        return None


def _obviously_covers(selectors: Iterable[SelectorInput], topic: str) -> bool:
    """``*`` among the selectors, or one equal to the topic that is no URL Pattern."""
    for s in selectors:
        if isinstance(s, str):
            if s in (TOPIC_WILDCARD, topic):
                return True
        elif s.text == TOPIC_WILDCARD or (s.text == topic and s.syntax != "urlpattern"):
            return True
    return False


def _plainly_exact(selector: SelectorInput) -> bool:
    """A selector that matches only the topic equal to it (no index needed)."""
    if isinstance(selector, str):
        return "{" not in selector
    if selector.syntax == "exact":
        return True
    return selector.syntax == "mercure" and "{" not in selector.text


def seconds_left(claims: Claims | None) -> float | None:
    """Seconds until the token expires (None: never)."""
    if claims is None or claims.expires_at is None:
        return None
    return claims.expires_at - time.time()
