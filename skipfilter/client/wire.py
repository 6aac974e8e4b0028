"""What client requests share: the bearer header, an answer's body read no further than a
limit, and a hub's error answer read into the exception it means (``errors.py``), with the
RFC 6750 challenge's code and description."""

from __future__ import annotations

import re

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
    kept = _Kept(limit)
    try:
        for chunk in response.iter_bytes():
            if kept.add(chunk):
                break
    except httpx.DecodingError as exc:
        raise undecodable(exc) from exc
    return kept.body()


async def aread_at_most(response: httpx.Response, limit: int) -> tuple[bytes, bool]:
    """:func:`read_at_most` for asyncio."""
    kept = _Kept(limit)
    try:
        async for chunk in response.aiter_bytes():
            if kept.add(chunk):
                break
    except httpx.DecodingError as exc:
        raise undecodable(exc) from exc
    return kept.body()


class _Kept:
    """The chunks of a body read so far, up to ``limit`` bytes (one more chunk at most)."""

    __slots__ = ("limit", "over", "parts", "size")

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.parts: list[bytes] = []
        self.size = 0
        self.over = False

    def add(self, chunk: bytes) -> bool:
        """Keep ``chunk``; True once past the limit (read no more)."""
        self.parts.append(chunk)
        self.size += len(chunk)
        self.over = self.size > self.limit
        return self.over

    def body(self) -> tuple[bytes, bool]:
        """The body cut at the limit, and whether there was more."""
        whole = b"".join(self.parts)
        return (whole[: self.limit], True) if self.over else (whole, False)


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
