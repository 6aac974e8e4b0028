"""Where a 1.0 access token comes from: the ``Authorization`` header, else the cookie.

draft-08 §6.1: ``Authorization: Bearer <token>`` (scheme in any case) wins and any cookie is
then ignored; without the header, the cookie (``__Secure-mercure_access_token`` unless
configured) is used. Tokens in the URL are never accepted (RFC 9700): in 1.0 mode an
``access_token`` or ``authorization`` query parameter is refused with a 400 that says so, where
the Go hub silently ignores it. ``compatibility=True`` adds 0.x's ways, in the Go hub's order:
the ``authorization`` query parameter after the header, and the ``mercureAuthorization`` cookie
when the configured one is absent. A publish authenticated by the cookie must come from an
allowed origin (CSRF, §13), answered like the Go hub: 400 ``invalid_request``.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from skipfilter.hub.auth.verify import AuthError, TokenSource, check_origin
from skipfilter.hub.frontends.v1.errors import BearerError

DEFAULT_COOKIE = "__Secure-mercure_access_token"
LEGACY_COOKIE = "mercureAuthorization"
LEGACY_QUERY = "authorization"
#: Query parameters that would carry a token in the URL (RFC 6750 §2.3, and 0.x's).
URL_TOKEN_PARAMETERS = ("access_token", LEGACY_QUERY)

#: RFC 6750 §2.1: ``Bearer`` 1*SP b64token.
_BEARER = re.compile(r"([A-Za-z]+) +([A-Za-z0-9\-._~+/]+=*)")


@dataclass(frozen=True, slots=True)
class PresentedToken:
    """A token as presented, and how (a cookie needs the CSRF check on publish)."""

    token: str
    source: TokenSource


def present_token(
    authorization: Sequence[str],
    cookies: Mapping[str, str],
    query: Iterable[tuple[str, str]] = (),
    cookie_name: str = DEFAULT_COOKIE,
    compatibility: bool = False,
) -> PresentedToken | None:
    """The token of a request, or None when it presents none.

    ``authorization`` holds every ``Authorization`` header value; ``query`` the query pairs.
    Raises BearerError 400 ``invalid_request`` for several ``Authorization`` headers, one that
    is not ``Bearer <token>``, or (1.0 mode) a token in the query string.
    """
    if len(authorization) > 1:
        raise BearerError.invalid_request(
            f"{len(authorization)} Authorization headers: send one, 'Bearer <token>'"
        )
    if authorization:
        value = authorization[0]
        return _known_bearer(value) if len(value) <= KNOWN_HEADER_CHARS else _bearer(value)
    names = [(name, value) for name, value in query if name in URL_TOKEN_PARAMETERS]
    if compatibility:
        legacy = [value for name, value in names if name == LEGACY_QUERY and value]
        if legacy:
            return PresentedToken(legacy[0], TokenSource.QUERY)
    elif names:
        raise BearerError.invalid_request(
            f"access tokens are not accepted in the URL ({names[0][0]!r} query parameter, "
            "RFC 9700): send an 'Authorization: Bearer' header or the cookie "
            f"{cookie_name!r}"
        )
    cookie = cookies.get(cookie_name)
    if not cookie and compatibility:
        cookie = cookies.get(LEGACY_COOKIE)
    if cookie:
        return PresentedToken(cookie, TokenSource.COOKIE)
    return None


#: Authorization headers whose token is remembered, and the longest one (at most 4 MiB).
KNOWN_HEADERS, KNOWN_HEADER_CHARS = 1024, 4096


def _bearer(value: str) -> PresentedToken:
    """The token of an ``Authorization`` header; BearerError 400 unless ``Bearer <token>``."""
    found = _BEARER.fullmatch(value.strip(" \t"))
    if found is None or found.group(1).lower() != "bearer":
        raise BearerError.invalid_request(
            "the Authorization header must be 'Bearer <token>' (RFC 6750)"
        )
    return PresentedToken(found.group(2), TokenSource.HEADER)


#: ``_bearer`` kept for the latest headers: a publisher reusing its token is not parsed
#: again per request (a refusal is not kept: it raises).
_known_bearer = functools.lru_cache(maxsize=KNOWN_HEADERS)(_bearer)


def check_cookie_origin(headers: Mapping[str, str], allowed: Iterable[str]) -> None:
    """CSRF guard for a publish authenticated by the cookie: its ``Origin`` (else the
    ``Referer``'s origin) must be one of ``allowed`` (see ``skipfilter.hub.origins``).

    Raises BearerError 400 ``invalid_request`` naming the missing header or the origin.
    """
    try:
        check_origin(headers, allowed)
    except AuthError as exc:
        raise BearerError.invalid_request(exc.reason) from exc
