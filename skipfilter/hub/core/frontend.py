"""The protocol seam: what one version of Mercure turns a request into, in the hub's terms.

A ``Frontend`` reads a subscribe request, a publish request and the subscriptions API's
authorization the way its protocol version says (where the token is, what its claim
grants, which parameters carry the topics and the resume point), and says no in that
version's words. Below it the core (``session``, ``hub``, fan-out, streams) sees only
``SubscriptionTerms`` (typed selectors, ``grants.Grants``), ``Update``: it knows no protocol
version. The app picks the front end from ``HubSettings.protocol_version_compatibility``:
Mercure 1.0 (``frontends/v1/``) alone, or 1.0 beside 0.x (``frontends/compat.py``, which
serves 0.x-shaped requests through ``frontends/v0.py``).
"""

from __future__ import annotations

from collections.abc import AsyncGenerator
from dataclasses import dataclass
from typing import Protocol

from starlette.requests import Request
from starlette.responses import Response
from starlette.types import Scope

from skipfilter.hub.core.grants import Grants
from skipfilter.hub.update import Update
from skipfilter.selectors import TypedSelector


@dataclass(frozen=True, slots=True, kw_only=True)
class SubscriptionTerms:
    """A subscribe request in the hub's terms: what to match, what the subscriber may see,
    where it resumes (``last_event_id``: None for no replay, ``EARLIEST`` for all), and the
    response headers that name the resume point (none: the client did not ask)."""

    selectors: tuple[TypedSelector, ...]
    grants: Grants | None
    last_event_id: str | None
    origin: str | None
    resume_headers: tuple[str, ...] = ()
    #: What the front end compiled checking the selectors, held until the stream holds it
    #: (a URL Pattern compiled once per request, not by the check, the stream and the index).
    held: tuple[object, ...] = ()


class Frontend(Protocol):
    """One protocol version's reading of requests; raises a ``HubRefusal`` to refuse, in
    its version's words (status, text, challenge), which ``refusals.refuse`` answers."""

    #: The version this front end speaks (``"1"``, ``"0"``, ``"compat"``).
    version: str

    async def subscription(self, request: Request) -> SubscriptionTerms:
        """The terms of a subscribe request, authorized (its selectors still unchecked
        against the hub's limits: the core does that)."""
        ...

    async def publication(self, request: Request) -> Update:
        """The update a publish request asks for, authorized and validated."""
        ...

    async def authorize_subscriptions(self, request: Request, path: str) -> None:
        """Refuse a request to the subscriptions API at ``path`` its token does not cover."""
        ...

    #: Where the protected resource metadata (RFC 9728) is served (None: nowhere).
    metadata_path: str | None

    async def metadata(self, request: Request) -> Response:
        """The protected resource metadata document, for a GET or HEAD of ``metadata_path``."""
        ...


class WholeRequest(Request):
    """A request whose whole body the server already holds (a publish that came in one
    piece, ``server/fast_publish.py``): ``read_body`` takes it as it is, nothing awaited."""

    def __init__(self, scope: Scope, body: bytes) -> None:
        super().__init__(scope)
        self.whole_body = body

    async def stream(self) -> AsyncGenerator[bytes, None]:
        yield self.whole_body


async def read_body(request: Request, limit: int) -> bytes | None:
    """The request body, or None when it exceeds ``limit`` bytes (413): read with a running
    size check whatever its framing, so a chunked upload cannot grow past the limit."""
    if isinstance(request, WholeRequest):
        return request.whole_body if len(request.whole_body) <= limit else None
    length = request.headers.get("content-length")
    if length is not None and length.isdigit() and int(length) > limit:
        return None
    body = bytearray()
    async for chunk in request.stream():
        body += chunk
        if len(body) > limit:
            return None
    return bytes(body)
