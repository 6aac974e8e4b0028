"""What client requests share: the bearer header, an answer's body read no further than a
limit, and a hub's error answer read into the exception it means (``errors.py``), with the
RFC 6750 challenge's code and description."""

from __future__ import annotations

import re
from collections.abc import Iterator

import httpx

from skipfilter.client.errors import BY_STATUS, BadAnswer, MercureError, Refused, Unavailable

#: One RFC 9110 auth-param: ``name=token`` or ``name="quoted \"string\""``.
_AUTH_PARAM = re.compile(r'([!#$%&\'*+.^_`|~0-9A-Za-z-]+)\s*=\s*(?:"((?:[^"\\]|\\.)*)"|([^\s,]*))')
#: The longest body kept as a description (a proxy's error page is not a message).
MAX_DESCRIPTION = 500
#: Bytes of an error answer read to find its description (the rest is never read).
MAX_ERROR_BODY = 1 << 16


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


def read_at_most(response: httpx.Response, limit: int) -> tuple[bytes, bool]:
    """Up to ``limit`` bytes of a streamed answer's body, and whether there was more (the
    rest is left unread: its connection is closed, not drained)."""
    return _kept(response.iter_bytes(), limit)


async def aread_at_most(response: httpx.Response, limit: int) -> tuple[bytes, bool]:
    """:func:`read_at_most` for asyncio."""
    parts: list[bytes] = []
    size = 0
    try:
        async for chunk in response.aiter_bytes():
            parts.append(chunk)
            size += len(chunk)
            if size > limit:
                return b"".join(parts)[:limit], True
    except httpx.DecodingError as exc:
        raise undecodable(exc) from exc
    return b"".join(parts), False


def _kept(chunks: Iterator[bytes], limit: int) -> tuple[bytes, bool]:
    parts: list[bytes] = []
    size = 0
    try:
        for chunk in chunks:
            parts.append(chunk)
            size += len(chunk)
            if size > limit:
                return b"".join(parts)[:limit], True
    except httpx.DecodingError as exc:
        raise undecodable(exc) from exc
    return b"".join(parts), False


def undecodable(exc: httpx.DecodingError) -> BadAnswer:
    """A body its own ``Content-Encoding`` cannot decode."""
    return BadAnswer(f"the answer's body does not decode as its Content-Encoding says: {exc}")


def refusal(response: httpx.Response, action: str, body: bytes = b"") -> MercureError:
    """The exception a non-2xx answer to ``action`` ("publish", "subscribe") means, given
    the start of its ``body`` (see :func:`read_at_most`)."""
    params: dict[str, str] = {}
    for header in response.headers.get_list("www-authenticate"):
        params = challenge(header)
        if params or header.lower().startswith("bearer"):
            break
    text = body.decode("utf-8", "replace").strip()[:MAX_DESCRIPTION]
    description = params.get("error_description") or text or response.reason_phrase
    status = response.status_code
    if status >= 500:
        stored = action == "publish"
        note = " (the update may have been stored: it was not sent again)" if stored else ""
        return Unavailable(f"hub answered {status}: {description}{note}", stored, status)
    return BY_STATUS.get(status, Refused)(status, params.get("error"), description)
