"""Mercure 1.0 and 0.x on the same endpoints (``protocol_version_compatibility 8``).

A request with nothing of 1.0 in it (no ``match*``, ``last_event_id`` parameter nor QUERY
method, and no 1.0 access token: ``typ: at+jwt`` or ``authorization_details``) is a 0.x
client's: ``v0.py`` serves it exactly as a 0.x hub did (its parameters, its headers, its
words). Anything else is read the 1.0 way with the Go hub's compatibility relaxations
(``v1/frontend.py``, ``compatibility=True``), so a request may mix ``topic=`` and ``match=``,
and a 0.x token may subscribe with ``match=``. Both share the hub's index, which holds URL
Patterns, exact topics and 0.x selectors in one id space. What 0.x allowed that 1.0 must
not, stays closed on both paths: every request's origin is checked against the public
URLs (421), and a 0.x publish is held to the update rules 1.0 subscribers rely on
(``check_shared_rules``: no topic resolving into the reserved namespace, no ``*`` topic, no
``mercure`` event type), as the Go hub's compatibility mode validates every update.
"""

from __future__ import annotations

import base64
import binascii
import functools
import json
from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from skipfilter.hub.core.frontend import Frontend, SubscriptionTerms
from skipfilter.hub.core.hub import IndexFactory
from skipfilter.hub.frontends.v0 import LEGACY_COOKIE, V0Frontend
from skipfilter.hub.frontends.v1.errors import RequestError
from skipfilter.hub.frontends.v1.frontend import V1Frontend
from skipfilter.hub.frontends.v1.grants import MERCURE_DETAIL
from skipfilter.hub.frontends.v1.matchers import WILDCARD
from skipfilter.hub.frontends.v1.presentation import LEGACY_QUERY
from skipfilter.hub.frontends.v1.publish import RESERVED_TYPE, addresses_reserved_namespace
from skipfilter.hub.frontends.v1.tokens import is_access_token_type
from skipfilter.hub.settings import HubSettings
from skipfilter.hub.update import Update

#: Query parameters only a 1.0 client sends (any name starting with ``match`` counts too).
MODERN_PARAMETERS = frozenset({"last_event_id"})


class CompatFrontend:
    """Serves each request through the 0.x or the 1.0 front end (see the module docstring)."""

    version = "compat"

    def __init__(self, settings: HubSettings, index_factory: IndexFactory | None = None) -> None:
        self.settings = settings
        self.modern = V1Frontend(settings, index_factory, compatibility=True)
        self.legacy = V0Frontend(settings, index_factory)
        self.metadata_path = self.modern.metadata_path
        self.cookie_names = tuple(dict.fromkeys((settings.cookie_name, LEGACY_COOKIE)))

    def front_for(self, request: Request) -> Frontend:
        """The front end that reads ``request``: 0.x's when nothing in it is 1.0."""
        if request.method not in ("GET", "POST", "HEAD"):
            return self.modern
        for name in request.query_params:
            if name in MODERN_PARAMETERS or name[:5].lower() == "match":
                return self.modern
        token = self._token(request)
        if token is not None and modern_token(token):
            return self.modern
        return self.legacy

    def _token(self, request: Request) -> str | None:
        """The token a request presents, in 0.x's order (header, query, cookie), unchecked."""
        header = request.headers.get("authorization")
        if header is not None:
            return header.partition(" ")[2].strip() or None
        query = request.query_params.get(LEGACY_QUERY)
        if query:
            return query
        return next((request.cookies[n] for n in self.cookie_names if request.cookies.get(n)), None)

    async def subscription(self, request: Request) -> SubscriptionTerms:
        self.modern.identity(request)  # 421 outside the public URLs, for 0.x clients too
        return await self.front_for(request).subscription(request)

    async def publication(self, request: Request) -> Update:
        self.modern.identity(request)
        front = self.front_for(request)
        update = await front.publication(request)
        if front is self.legacy:
            check_shared_rules(update)
        return update

    async def authorize_subscriptions(self, request: Request, path: str) -> None:
        self.modern.identity(request)
        await self.front_for(request).authorize_subscriptions(request, path)

    async def metadata(self, request: Request) -> Response:
        return await self.modern.metadata(request)


def check_shared_rules(update: Update) -> None:
    """What 1.0 subscribers rely on, held for 0.x publishers too (as the Go hub's
    compatibility mode validates every update): no topic resolving into the hub's reserved
    namespace, no ``*`` topic, no ``mercure`` event type (subscription events' own).
    Raises RequestError 400 naming the problem."""
    if update.type == RESERVED_TYPE:
        raise RequestError.bad_request(
            f"type {RESERVED_TYPE!r} is reserved to the hub's subscription events"
        )
    for topic in update.topics:
        if topic == WILDCARD:
            raise RequestError.bad_request("topic '*' is reserved: it is the wildcard matcher")
        if addresses_reserved_namespace(topic):
            raise RequestError.bad_request(
                f"topic {topic[:80]!r} resolves into the hub's reserved namespace: "
                "only the hub publishes there"
            )


#: Tokens whose kind is remembered, and the longest one remembered (at most 16 MiB).
KNOWN_TOKENS, KNOWN_TOKEN_CHARS = 4096, 4096


def modern_token(token: str) -> bool:
    """Whether ``token`` is a 1.0 access token (``typ: at+jwt``, or Mercure
    ``authorization_details``), judged from its unverified header and claims. The answer is
    kept for the latest ``KNOWN_TOKENS`` tokens of up to ``KNOWN_TOKEN_CHARS`` characters:
    a publisher reusing its token is not decoded once more per request."""
    if len(token) > KNOWN_TOKEN_CHARS:
        return _judge(token)
    return _known(token)


@functools.lru_cache(maxsize=KNOWN_TOKENS)
def _known(token: str) -> bool:
    return _judge(token)


def _judge(token: str) -> bool:
    parts = token.split(".")
    if len(parts) != 3:
        return False
    header, claims = _segment(parts[0]), _segment(parts[1])
    if is_access_token_type(header.get("typ")):
        return True
    details = claims.get("authorization_details")
    return isinstance(details, list) and any(
        isinstance(d, dict) and d.get("type") == MERCURE_DETAIL for d in details
    )


def _segment(text: str) -> dict[str, Any]:
    try:
        value = json.loads(base64.urlsafe_b64decode(text + "=" * (-len(text) % 4)))
    except (binascii.Error, ValueError, RecursionError):
        return {}
    return value if isinstance(value, dict) else {}
