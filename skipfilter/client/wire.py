"""What client requests share: the bearer header, and a hub's error answer read into the
exception it means (``errors.py``), with the RFC 6750 challenge's code and description."""

from __future__ import annotations

import re

import httpx

from skipfilter.client.errors import BY_STATUS, MercureError, Refused, Unavailable

#: One RFC 9110 auth-param: ``name=token`` or ``name="quoted \"string\""``.
_AUTH_PARAM = re.compile(r'([!#$%&\'*+.^_`|~0-9A-Za-z-]+)\s*=\s*(?:"((?:[^"\\]|\\.)*)"|([^\s,]*))')
#: The longest body kept as a description (a proxy's error page is not a message).
MAX_DESCRIPTION = 500


def bearer(token: str | None) -> dict[str, str]:
    """The Authorization header for ``token`` (none without one)."""
    return {"Authorization": f"Bearer {token}"} if token else {}


def challenge(header: str) -> dict[str, str]:
    """The auth-params of a ``WWW-Authenticate: Bearer ...`` value (names lowercased); empty
    when the scheme is not Bearer."""
    scheme, _, rest = header.strip().partition(" ")
    if scheme.lower() != "bearer":
        return {}
    params: dict[str, str] = {}
    for match in _AUTH_PARAM.finditer(rest):
        name, quoted, token = match.groups()
        value = re.sub(r"\\(.)", r"\1", quoted) if quoted is not None else token
        params.setdefault(name.lower(), value)
    return params


def refusal(response: httpx.Response, action: str) -> MercureError:
    """The exception a non-2xx answer to ``action`` ("publish", "subscribe") means; the body
    must have been read."""
    params: dict[str, str] = {}
    for header in response.headers.get_list("www-authenticate"):
        params = challenge(header)
        if params or header.lower().startswith("bearer"):
            break
    text = response.text.strip()[:MAX_DESCRIPTION]
    description = params.get("error_description") or text or response.reason_phrase
    status = response.status_code
    if status >= 500:
        stored = action == "publish"
        note = " (the update may have been stored: it was not sent again)" if stored else ""
        return Unavailable(f"hub answered {status}: {description}{note}", stored, status)
    return BY_STATUS.get(status, Refused)(status, params.get("error"), description)
