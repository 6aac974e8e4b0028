"""RFC 9068 JWT access tokens, verified the way Mercure 1.0 asks (draft-08 §6.3, §6.4).

``AccessTokenVerifier.verify`` checks, in order: a compact JWS with a JSON header, ``alg`` not
``none``, no ``crit`` extension; ``typ`` is ``at+jwt`` (or ``application/at+jwt``, any case);
``iss`` names a configured issuer, whose keys for the endpoint's role check the signature with
an algorithm the issuer's key pins (never one the token picks, never a key the token carries);
``exp`` present and not passed, ``nbf`` (if any) reached; ``aud`` holds the hub's resource
identifier; ``iat``, ``sub``, ``client_id``, ``jti`` well typed when present; then the Mercure
``authorization_details`` become ``AuthorizationDetails``. Every failure is a 401
``invalid_token`` naming it (503 when a JWK Set cannot be fetched). Time claims get ``leeway``
seconds, 0 as in the Go hub.

``compatibility=True`` is the Go hub's ``protocol_version_compatibility 8``, for every token:
``typ`` unchecked, ``exp`` optional, ``aud`` unchecked, an unknown or missing ``iss`` falls back
to the sole issuer when only one is configured, and a token without ``authorization_details``
gets its rights from the 0.x ``mercure`` claim. The signature, the algorithm, ``nbf``, an
``exp`` that is present and the details are checked as strictly as ever.
"""

from __future__ import annotations

import base64
import binascii
import hmac
import json
import math
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import jwt
from cachetools import LRUCache
from jwt.algorithms import get_default_algorithms
from jwt.utils import base64url_decode

from skipfilter.hub.auth.verify import AuthError, TokenSource, read_mercure_claim
from skipfilter.hub.frontends.v1.errors import BearerError
from skipfilter.hub.frontends.v1.grants import (
    AuthorizationDetails,
    legacy_details,
    parse_authorization_details,
)
from skipfilter.hub.frontends.v1.issuers import Issuer, KeySource, Role
from skipfilter.hub.frontends.v1.matchers import PatternCheck, UrlPatternCheck
from skipfilter.tokens.mint import AT_JWT

#: Longest token read; a header or cookie cannot carry more anyway.
MAX_TOKEN_BYTES = 64 << 10


@dataclass(frozen=True, slots=True)
class AccessToken:
    """A verified access token: who issued it to whom, until when, and what it grants.

    ``expires_at`` is None only in compatibility mode, for a token without ``exp``; ``legacy``
    says the rights come from a 0.x ``mercure`` claim. ``claims`` holds every claim verified.
    """

    issuer: str
    subject: str | None
    client_id: str | None
    audience: tuple[str, ...]
    expires_at: float | None
    jwt_id: str | None
    grants: AuthorizationDetails
    legacy: bool
    claims: Mapping[str, Any]

    def seconds_left(self, now: float | None = None) -> float | None:
        """Seconds until expiry (None: never); the stream must end by then (draft-08 §6.6)."""
        if self.expires_at is None:
            return None
        return self.expires_at - (time.time() if now is None else now)


class AccessTokenVerifier:
    """Verifies access tokens against the configured issuers (see the module docstring).

    Verified tokens are kept in an LRU keyed by token, role, audience and base URL: a hit skips
    the signature and the details but still enforces ``exp``, and is dropped when the issuer's
    keys changed. Not thread-safe; call it from the event loop.
    """

    def __init__(
        self,
        issuers: Iterable[Issuer],
        *,
        compatibility: bool = False,
        leeway: float = 0.0,
        check: PatternCheck | None = None,
        cache_size: int = 4096,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.issuers = {issuer.identifier: issuer for issuer in issuers}
        if not self.issuers:
            raise ValueError("no trusted issuer: configure at least one")
        if not compatibility and "" in self.issuers:
            raise ValueError("an issuer needs an identifier (the exact 'iss' of its tokens)")
        if leeway < 0:
            raise ValueError(f"leeway must be non-negative, got {leeway}")
        self.compatibility = compatibility
        self.leeway = leeway
        self.check = check or UrlPatternCheck()
        self.clock = clock
        self._cache: LRUCache[tuple[str, str, str, str], tuple[AccessToken, KeySource, int]] = (
            LRUCache(cache_size)
        )

    @property
    def authorization_servers(self) -> tuple[str, ...]:
        """Issuers to advertise in the protected resource metadata."""
        return tuple(i.identifier for i in self.issuers.values() if i.authorization_server)

    async def verify(self, token: str, role: Role, audience: str, base_url: str) -> AccessToken:
        """The verified token, for an endpoint of ``role``, on the hub whose resource
        identifier is ``audience`` and whose URL (the base of relative patterns) is ``base_url``.

        Raises BearerError 401 ``invalid_token`` naming the problem, RequestError 503 when the
        issuer's JWK Set cannot be fetched.
        """
        key = (token, role, "" if self.compatibility else audience, base_url)
        cached = self._cache.get(key)
        if cached is not None:
            found, cached_keys, cached_generation = cached
            if cached_keys.generation == cached_generation:
                self._check_expiry(found.claims)
                return found
            del self._cache[key]
        header, claims = _unverified(token)
        alg = header.get("alg")
        if not isinstance(alg, str) or alg.lower() == "none":
            raise BearerError.invalid_token("unsigned tokens (alg 'none') are not accepted")
        if "crit" in header:
            raise BearerError.invalid_token("the 'crit' header names extensions this hub lacks")
        if not self.compatibility:
            _check_type(header.get("typ"))
        issuer = self._issuer(claims.get("iss"))
        source = issuer.keys(role)
        if source is None:
            raise BearerError.invalid_token(
                f"issuer {issuer.identifier!r} has no {role} key: it cannot sign {role} tokens"
            )
        generation = source.generation
        kid = header.get("kid")
        if kid is not None and not isinstance(kid, str):
            raise BearerError.invalid_token("the 'kid' header must be a string")
        verification_key = await source.key_for(kid, alg)
        try:
            _check_signature(token, header, alg, verification_key)
        except jwt.InvalidSignatureError as exc:
            raise BearerError.invalid_token("bad signature") from exc
        except (jwt.PyJWTError, ValueError, TypeError) as exc:
            raise BearerError.invalid_token(f"cannot be checked ({exc})") from exc
        found = self._read(claims, issuer, audience, base_url)
        if self._cache.maxsize:
            self._cache[key] = (found, source, generation)
        return found

    def _issuer(self, iss: object) -> Issuer:
        if iss is not None and not isinstance(iss, str):
            raise BearerError.invalid_token("the 'iss' claim must be a string")
        issuer = self.issuers.get(iss) if isinstance(iss, str) else None
        if issuer is not None:
            return issuer
        if self.compatibility and len(self.issuers) == 1:
            return next(iter(self.issuers.values()))
        if iss is None:
            raise BearerError.invalid_token("no 'iss' claim: the issuer must be named (RFC 9068)")
        raise BearerError.invalid_token(f"untrusted issuer {iss[:200]!r}")

    def _read(
        self, claims: dict[str, Any], issuer: Issuer, audience: str, base_url: str
    ) -> AccessToken:
        """Check the claims of a token whose signature holds; return what it grants."""
        expires_at = self._check_expiry(claims)
        _number(claims, "iat")
        audiences = _audiences(claims.get("aud"))
        if not self.compatibility and audience not in audiences:
            shown = ", ".join(repr(a[:200]) for a in audiences[:5]) or "none"
            raise BearerError.invalid_token(
                f"the 'aud' claim ({shown}) does not hold this hub's resource identifier "
                f"{audience!r}"
            )
        strings = {name: _string(claims, name) for name in ("sub", "client_id", "jti")}
        details = claims.get("authorization_details")
        # one token's patterns share one compile budget, as one request's do
        check = self.check.request() if isinstance(self.check, UrlPatternCheck) else self.check
        grants = parse_authorization_details(details, base_url, check)
        legacy = self.compatibility and not details
        if legacy:
            try:
                grants = legacy_details(read_mercure_claim(claims, TokenSource.HEADER))
            except AuthError as exc:
                raise BearerError.invalid_token(exc.reason.removeprefix("invalid token: ")) from exc
        return AccessToken(
            issuer=issuer.identifier,
            subject=strings["sub"],
            client_id=strings["client_id"],
            audience=audiences,
            expires_at=expires_at,
            jwt_id=strings["jti"],
            grants=grants,
            legacy=legacy,
            claims=claims,
        )

    def _check_expiry(self, claims: Mapping[str, Any]) -> float | None:
        """``exp`` (required unless in compatibility mode) not passed, ``nbf`` reached."""
        now = self.clock()
        exp = _number(claims, "exp")
        if exp is None and not self.compatibility:
            raise BearerError.invalid_token("no 'exp' claim: access tokens must expire (RFC 9068)")
        if exp is not None and now >= exp + self.leeway:
            raise BearerError.invalid_token("expired")
        nbf = _number(claims, "nbf")
        if nbf is not None and nbf > now + self.leeway:
            raise BearerError.invalid_token("not valid yet ('nbf' is in the future)")
        return exp


#: PyJWT's algorithms by name, made once (``PyJWS()`` builds them for every token).
_ALGORITHMS = get_default_algorithms()
#: The hash of each of PyJWT's HMAC algorithms, by name (what ``hmac.digest`` takes).
_HMAC_DIGESTS = {"HS256": "sha256", "HS384": "sha384", "HS512": "sha512"}


def _check_signature(token: str, header: Mapping[str, Any], alg: str, key: Any) -> None:
    """Check the JWS signature of ``token`` (already split and read by ``_unverified``) with
    ``key`` and ``alg`` through PyJWT's algorithm objects, without decoding the token again.
    Raises ``jwt.InvalidSignatureError``, or another PyJWTError/ValueError saying why it
    cannot be checked. A header with ``b64`` (RFC 7797) takes PyJWT's full path."""
    algorithm = _ALGORITHMS.get(alg)
    if algorithm is None or "b64" in header:
        jwt.PyJWS().decode_complete(token, key, algorithms=[alg])
        return
    signing_input, _, signature = token.rpartition(".")
    digest = _HMAC_DIGESTS.get(alg)
    if digest is not None and isinstance(key, bytes):
        # StaticKey prepared the key once (``keys.load_key``); hmac.digest is the one-shot C
        # HMAC that PyJWT's ``hmac.new(...).digest()`` is, without the object per token
        expected = hmac.digest(key, signing_input.encode(), digest)
        if not hmac.compare_digest(base64url_decode(signature), expected):
            raise jwt.InvalidSignatureError("Signature verification failed")
        return
    prepared = algorithm.prepare_key(key)
    if not algorithm.verify(signing_input.encode(), prepared, base64url_decode(signature)):
        raise jwt.InvalidSignatureError("Signature verification failed")


def _unverified(token: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """The JOSE header and the claims of a compact JWS, not yet trusted."""
    if not isinstance(token, str) or len(token) > MAX_TOKEN_BYTES:
        raise BearerError.invalid_token(f"not a JWT of at most {MAX_TOKEN_BYTES} bytes")
    segments = token.split(".")
    if len(segments) != 3:
        raise BearerError.invalid_token("malformed JWT: not three dot-separated segments")
    return _segment(segments[0], "header"), _segment(segments[1], "claims")


def _segment(text: str, name: str) -> dict[str, Any]:
    """One base64url segment holding a JSON object (NaN and Infinity refused)."""
    try:
        raw = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
        value = _JSON.decode(raw.decode("utf-8"))
    except (binascii.Error, ValueError, RecursionError) as exc:
        raise BearerError.invalid_token(f"malformed JWT {name} ({str(exc)[:120]})") from exc
    if not isinstance(value, dict):
        raise BearerError.invalid_token(f"malformed JWT: the {name} is not a JSON object")
    return value


def _no_constant(name: str) -> None:
    raise ValueError(f"{name} is not JSON")


#: One decoder for every segment (``json.loads`` with an option builds one per call). A
#: segment is UTF-8 JSON (RFC 7519 §7.2): other encodings are malformed.
_JSON = json.JSONDecoder(parse_constant=_no_constant)


def is_access_token_type(typ: object) -> bool:
    """RFC 9068 §4: ``typ`` is ``at+jwt``, ``application/`` prefix optional, any case."""
    return isinstance(typ, str) and typ.lower().removeprefix("application/") == AT_JWT


def _check_type(typ: object) -> None:
    if not is_access_token_type(typ):
        raise BearerError.invalid_token(
            f"the 'typ' header must be 'at+jwt' (an RFC 9068 access token), got {typ!r}"[:200]
        )


def _number(claims: Mapping[str, Any], name: str) -> float | None:
    """A NumericDate claim (a finite JSON number), or None when absent."""
    value = claims.get(name)
    if value is None:
        return None
    try:
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise TypeError
        seconds = float(value)
        if not math.isfinite(seconds):
            raise OverflowError
    except (TypeError, OverflowError):
        raise BearerError.invalid_token(f"the {name!r} claim must be a number of seconds") from None
    return seconds


def _audiences(value: object) -> tuple[str, ...]:
    """``aud``: one string or an array of strings (RFC 7519 §4.1.3)."""
    if value is None:
        return ()
    if isinstance(value, str):
        return (value,)
    if isinstance(value, list) and all(isinstance(a, str) for a in value):
        return tuple(value)
    raise BearerError.invalid_token("the 'aud' claim must be a string or an array of strings")


def _string(claims: Mapping[str, Any], name: str) -> str | None:
    value = claims.get(name)
    if value is not None and not isinstance(value, str):
        raise BearerError.invalid_token(f"the {name!r} claim must be a string")
    return value
