"""Mercure 1.0 (draft-08) as a front end (see ``frontend.py``), built from ``protocol/``.

Every request first gets the hub's identity for its origin (421 outside ``public_urls``);
the token comes from the ``Authorization`` header or the cookie (never the URL), verified
as an RFC 9068 access token of a trusted issuer whose ``aud`` holds that identity; its
``authorization_details`` grant publish and subscribe matchers. A subscription is its
``match`` / ``match_exact`` / ``match_urlpattern`` parameters (GET, or QUERY with a form
body) and its resume point (``Last-Event-ID`` header, else ``last_event_id``); the stream
says where it resumed in ``Mercure-Last-Event-ID`` only when asked. A publish is checked
in the order token, form, grants, so a reserved topic is a 400 whatever the token holds.
Refusals are text naming the problem; every 401 and 403 carries an RFC 6750 challenge with
the RFC 9728 ``resource_metadata``.

With ``compatibility`` (``protocol_version_compatibility 8``) the same reading also takes
0.x's ways: ``topic=`` selectors and ``lastEventID``, the ``authorization`` query parameter
and ``mercureAuthorization`` cookie, tokens without ``typ``/``aud``/``exp`` or with a
``mercure`` claim (``frontends/compat.py`` sends requests with nothing 1.0 in them to
``frontends/v0.py``).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from cachetools import LRUCache
from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response
from starlette.types import ASGIApp, Receive, Scope, Send

from skipfilter.hub.auth.verify import SelectorCover, TokenSource
from skipfilter.hub.core.frontend import SubscriptionTerms, read_body
from skipfilter.hub.core.grants import topic_test
from skipfilter.hub.core.hub import IndexFactory, default_index_factory
from skipfilter.hub.frontends.v0 import header_text
from skipfilter.hub.frontends.v1.discovery import JSON, protected_resource_metadata
from skipfilter.hub.frontends.v1.errors import BearerError, RequestError
from skipfilter.hub.frontends.v1.identity import METADATA_SEGMENT, HubIdentity, IdentityPolicy
from skipfilter.hub.frontends.v1.issuers import Issuer, KeySource, key_source
from skipfilter.hub.frontends.v1.matchers import TopicMatcher, UrlPatternCheck
from skipfilter.hub.frontends.v1.presentation import (
    PresentedToken,
    check_cookie_origin,
    present_token,
)
from skipfilter.hub.frontends.v1.publish import decode_form, parse_publish_form
from skipfilter.hub.frontends.v1.subscribe import parse_subscribe_query
from skipfilter.hub.frontends.v1.tokens import AccessToken, AccessTokenVerifier
from skipfilter.hub.ids import new_id
from skipfilter.hub.paths import HUB_PATH, PROBE_PATHS
from skipfilter.hub.settings import (
    DEMO_ISSUER,
    ROLES,
    HubSettings,
    IssuerSettings,
    Role,
    has_keys,
    role_keys,
)
from skipfilter.hub.update import Update, valid_update
from skipfilter.selectors import TypedSelector

T = TypeVar("T")

#: The response header naming where a 1.0 stream resumed (draft-08 §7), and 0.x's.
RESUME_HEADER = "Mercure-Last-Event-ID"
LEGACY_RESUME_HEADER = "Last-Event-ID"
#: The form a 1.0 publish body must be (draft-08 §5).
FORM = "application/x-www-form-urlencoded"


@dataclass(frozen=True, slots=True)
class TokenGrants:
    """A 1.0 access token's grants in the core's terms (``grants.Grants``): its
    ``subscribe`` matchers typed, its expiry, and the payload rule of draft-08 §6.8."""

    token: AccessToken
    subscribe: tuple[TypedSelector, ...] | None
    base_url: str

    @classmethod
    def of(cls, token: AccessToken, base_url: str) -> TokenGrants:
        matchers = token.grants.matchers("subscribe")
        return cls(token, tuple(TypedSelector(*m) for m in matchers) or None, base_url)

    @property
    def expires_at(self) -> float | None:
        return self.token.expires_at

    def payload_for(self, selector: TypedSelector) -> Any:
        """The payload of the first ``subscribe`` detail matching the subscription's own
        matcher string taken as a topic (its fallback: a 0.x token's ``mercure.payload``).
        A token without payloads answers at once (as the Go hub): matching each of 100
        matchers against 100 grant patterns, compiled each time, took 13 s of event loop."""
        grants = self.token.grants
        if grants.fallback_payload is None and all(d.payload is None for d in grants.details):
            return None
        return grants.subscription_payload((selector.text, selector.syntax), self._matches)

    def _matches(self, matcher: TopicMatcher, topic: str) -> bool:
        return _grant_test(matcher, self.base_url)(topic)


def _grant_test(matcher: TopicMatcher, base_url: str) -> Callable[[str], bool]:
    """A grant matcher compiled once, not once per subscription: ``topic_test`` shares
    URL Patterns while anything holds them (an LRU here would keep them for good)."""
    return topic_test(TypedSelector(*matcher), base_url)


def issuers_for(settings: HubSettings, compatibility: bool) -> tuple[Issuer, ...]:
    """The trusted issuers: each of ``settings.issuers`` with its keys, and the top-level
    publisher/subscriber keys as the keys of the one ``trusted_issuers`` entry (in demo mode
    ``DEMO_ISSUER``; in compatibility mode, without one, an issuer for tokens without ``iss``).
    Raises ValueError for keys no issuer can own."""
    jwks = {
        "refresh": settings.jwks_refresh,
        "min_refresh": settings.jwks_min_refresh,
        "timeout": settings.jwks_timeout,
        "max_bytes": settings.jwks_max_bytes,
    }

    def keys(owner: HubSettings | IssuerSettings, role: Role) -> KeySource | None:
        found = role_keys(owner, role)
        return key_source(found.key, found.alg, found.jwks_url, **jwks)

    found = [
        Issuer(i.issuer, keys(i, "publisher"), keys(i, "subscriber"), i.authorization_server)
        for i in settings.issuers
    ]
    publisher, subscriber = keys(settings, "publisher"), keys(settings, "subscriber")
    names = settings.trusted_issuers
    if publisher is None and subscriber is None:
        if names:
            raise ValueError(
                f"issuer {names[0]!r} has no keys: set --publisher-jwt-key / "
                "--subscriber-jwt-key (env MERCURE_PUBLISHER_JWT_KEY / MERCURE_SUBSCRIBER_JWT_KEY"
                ") or a JWK Set URL, or describe it in an issuers file"
            )
        return tuple(found)
    if not names:
        names = (DEMO_ISSUER,) if settings.demo else ("",) if compatibility else ()
    if not names:
        raise ValueError(
            "the publisher/subscriber keys need the issuer whose tokens they check: "
            "--issuer URL (the exact 'iss' of the tokens; env MERCURE_TRUSTED_ISSUERS), or "
            "--protocol-version-compatibility 8 for 0.x tokens that name none"
        )
    found.append(Issuer(names[0], publisher, subscriber))
    return tuple(found)


class V1Frontend:
    """Mercure 1.0 requests read into the hub's terms (``frontend.Frontend``)."""

    version = "1"

    def __init__(
        self,
        settings: HubSettings,
        index_factory: IndexFactory | None = None,
        *,
        compatibility: bool | None = None,
    ) -> None:
        self.settings = settings
        self.compatibility = settings.compatibility if compatibility is None else compatibility
        self.identities = IdentityPolicy(
            settings.resource_identifier,
            settings.public_urls,
            local_origins=settings.local_origins,
        )
        self.base_url = settings.pattern_base_url
        self.check = UrlPatternCheck()
        issuers = issuers_for(settings, self.compatibility)
        self.verifier = (
            AccessTokenVerifier(issuers, compatibility=self.compatibility, check=self.check)
            if issuers
            else None
        )
        self.roles = {role: any(i.keys(role) is not None for i in issuers) for role in ROLES}
        factory = index_factory or default_index_factory(settings)
        self.publish_cover = SelectorCover(factory)
        self.subscribe_cover = SelectorCover(factory)
        self.metadata_path = metadata_path_for(settings)
        names = (RESUME_HEADER, LEGACY_RESUME_HEADER) if self.compatibility else (RESUME_HEADER,)
        self.resume_headers = names
        #: id(token) -> (token, its publish selectors); the token held keeps its id unique.
        self._publish_grants: LRUCache[int, tuple[AccessToken, tuple[TypedSelector, ...]]] = (
            LRUCache(1024)
        )

    # -- who the hub is, who the client is ----------------------------------------------

    def identity(self, request: Request) -> HubIdentity:
        """The hub's identity for this request's origin; RequestError 421 outside the
        public URLs, 400 for a malformed Host."""
        return self.identities.for_request(*request_origin(request.scope))

    def _present(self, request: Request) -> PresentedToken | None:
        scope = request.scope
        query = scope.get("query_string")  # most requests have none: skip parsing
        authorization = [v.decode("latin-1") for k, v in scope["headers"] if k == b"authorization"]
        return present_token(
            authorization,
            request.cookies if not authorization else {},  # the header wins: unread
            request.query_params.multi_items() if query else (),
            self.settings.cookie_name,
            self.compatibility,
        )

    async def _token(
        self, request: Request, identity: HubIdentity, role: Role
    ) -> tuple[AccessToken, PresentedToken] | None:
        """The verified token of ``role`` the request presents (None: none presented, or
        the hub has no keys for the role, so a token could not be checked)."""
        presented = self._present(request)
        if presented is None or self.verifier is None or not self.roles[role]:
            return None
        token = await self.verifier.verify(
            presented.token, role, identity.resource, identity.hub_url
        )
        return token, presented

    def _challenged(self, exc: RequestError, identity: HubIdentity) -> RequestError:
        """``exc`` told where the metadata is (its challenge names it)."""
        if self.metadata_path is not None:
            exc.resource_metadata = identity.metadata_url
        return exc

    # -- GET (and QUERY) /.well-known/mercure ------------------------------------------

    async def _read(
        self, request: Request, reader: Callable[[Request, HubIdentity], Awaitable[T]]
    ) -> T:
        """``reader``'s answer for the request as the hub's identity for its origin sees it
        (421 first); its refusals told where the metadata is."""
        identity = self.identity(request)
        try:
            return await reader(request, identity)
        except RequestError as exc:
            raise self._challenged(exc, identity) from None

    async def subscription(self, request: Request) -> SubscriptionTerms:
        """The token's grants (401 without one unless anonymous), the matchers and the
        resume point."""
        return await self._read(request, self._subscription)

    async def _subscription(self, request: Request, identity: HubIdentity) -> SubscriptionTerms:
        found = await self._token(request, identity, "subscriber")
        if found is None and not self.settings.anonymous:
            raise BearerError.missing_token(
                "this hub does not allow anonymous subscribers: present an access token"
            )
        body = b""
        if request.method == "QUERY":
            read = await read_body(request, self.settings.max_body)
            if read is None:
                raise RequestError(413, f"body larger than {self.settings.max_body} bytes")
            body = read
        header = request.headers.get("last-event-id")
        check = self.check.request(defer=True)
        asked = parse_subscribe_query(
            request.scope.get("query_string", b""),
            identity.hub_url,
            check,
            body=body,
            last_event_id_header=header_text(header) if header is not None else None,
            compatibility=self.compatibility,
        )
        for value, base_url in check.deferred:  # one compile at a time, the loop between
            await asyncio.sleep(0)
            problem = check.compile(value, base_url)
            if problem is not None:
                raise RequestError.bad_request(f"match_urlpattern={value[:80]!r}: {problem}")
        return SubscriptionTerms(
            selectors=tuple(TypedSelector(*m) for m in asked.matchers),
            grants=TokenGrants.of(found[0], self.base_url) if found is not None else None,
            last_event_id=asked.last_event_id,
            origin=request.headers.get("origin"),
            resume_headers=self.resume_headers if asked.resume_requested else (),
            held=tuple(check.held),
        )

    # -- POST /.well-known/mercure ------------------------------------------------------

    async def publication(self, request: Request) -> Update:
        """Token (401, 400), then the form (400, 413), then the grants (403)."""
        return await self._read(request, self._publication)

    async def _publication(self, request: Request, identity: HubIdentity) -> Update:
        settings = self.settings
        if not self.roles["publisher"]:
            raise BearerError.missing_token(
                "publishing is disabled: no issuer has a publisher key on this hub"
            )
        presented = self._present(request)
        if presented is None:
            raise BearerError.missing_token("publishing requires an access token")
        if presented.source is TokenSource.COOKIE:
            check_cookie_origin(request.headers, settings.publish_origins)
        assert self.verifier is not None
        token = await self.verifier.verify(
            presented.token, "publisher", identity.resource, identity.hub_url
        )
        given = request_header(request.scope, b"content-type")
        kind = FORM if given is None else given.split(";")[0].strip().lower()
        if kind != FORM:
            raise RequestError.bad_request(
                f"unsupported content type {kind[:60]!r}: a publish is a form ({FORM})"
            )
        body = await read_body(request, settings.max_body)
        if body is None:
            raise RequestError(413, f"request body larger than {settings.max_body} bytes")
        form = parse_publish_form(
            decode_form(body),
            max_topics=settings.max_topics,
            max_topic_length=settings.max_topic_length,
        )
        allowed = self._publish_selectors(token)
        if not allowed:
            raise BearerError.insufficient_scope("the token grants no 'publish' action")
        uncovered = self.publish_cover.covers_all(allowed, form.topics)
        if uncovered is not None:
            raise BearerError.insufficient_scope(
                f"the token may not publish to topic {uncovered[:200]!r}"
            )
        return valid_update(
            form.id or new_id(), form.topics, form.data, form.private, form.type, form.retry
        )

    def _publish_selectors(self, token: AccessToken) -> tuple[TypedSelector, ...]:
        """The token's ``publish`` matchers typed, kept while the verifier's cache returns
        the same token object (a publisher reusing its token pays this once)."""
        found = self._publish_grants.get(id(token))
        if found is None or found[0] is not token:
            selectors = tuple(TypedSelector(*m) for m in token.grants.matchers("publish"))
            found = self._publish_grants[id(token)] = (token, selectors)
        return found[1]

    # -- the subscriptions API ----------------------------------------------------------

    async def authorize_subscriptions(self, request: Request, path: str) -> None:
        """With subscriber keys, a token whose ``subscribe`` grants cover ``path``."""

        async def authorize(request: Request, identity: HubIdentity) -> None:
            if not self.roles["subscriber"]:
                return
            found = await self._token(request, identity, "subscriber")
            if found is None:
                raise BearerError.missing_token("the subscriptions API requires an access token")
            allowed = tuple(TypedSelector(*m) for m in found[0].grants.matchers("subscribe"))
            if not allowed or not self.subscribe_cover.covers(allowed, path):
                raise BearerError.insufficient_scope(
                    f"the token's 'subscribe' grants do not cover {path[:200]}"
                )

        await self._read(request, authorize)

    # -- RFC 9728 -----------------------------------------------------------------------

    async def metadata(self, request: Request) -> Response:
        """The protected resource metadata of the hub as this request's origin sees it."""
        try:
            identity = self.identity(request)
        except RequestError as exc:
            return Response(exc.description + "\n", status_code=exc.status)
        servers = self.verifier.authorization_servers if self.verifier is not None else ()
        document = protected_resource_metadata(
            identity, self.settings.cookie_name, servers, self.settings.subscriptions
        )
        body = json.dumps(document, indent=2).encode()
        return Response(body, media_type=JSON)


def metadata_path_for(settings: HubSettings) -> str | None:
    """Where the hub serves its protected resource metadata: RFC 9728's derivation from the
    pinned identifier, else from the hub path; None when no token is configured (as the Go
    hub, which serves it only then)."""
    if not (settings.issuers or has_keys(settings)):
        return None
    if settings.resource_identifier is not None:
        return IdentityPolicy(settings.resource_identifier).pinned.metadata_path  # type: ignore[union-attr]
    return METADATA_SEGMENT + HUB_PATH


def request_header(scope: Scope, name: bytes) -> str | None:
    """The first value of the header ``name`` (lowercase) as Starlette reads it (latin-1),
    without building its ``Headers``; None when absent."""
    headers: list[tuple[bytes, bytes]] = scope.get("headers", [])
    for key, value in headers:
        if key == name:
            return value.decode("latin-1")
    return None


def request_origin(scope: Scope) -> tuple[str, str]:
    """The scheme and ``Host`` of a request (the server's address when it sent none)."""
    host = request_header(scope, b"host")
    if host is not None:
        return scope.get("scheme", "http"), host
    server = scope.get("server") or ("localhost", None)
    host = server[0] if server[1] is None else f"{server[0]}:{server[1]}"
    return scope.get("scheme", "http"), host


class PublicOrigins:
    """ASGI middleware answering 421 to requests for an origin not among the hub's public
    URLs, before any routing (``PROBE_PATHS`` excepted: probes and scrapers use addresses,
    not names)."""

    def __init__(self, app: ASGIApp, policy: IdentityPolicy) -> None:
        self.app = app
        self.policy = policy

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope.get("path") not in PROBE_PATHS:
            try:
                self.policy.for_request(*request_origin(scope))
            except RequestError as exc:
                response = PlainTextResponse(exc.description + "\n", status_code=exc.status)
                await response(scope, receive, send)
                return
        await self.app(scope, receive, send)


def public_origins_policy(settings: HubSettings) -> IdentityPolicy | None:
    """The policy that answers 421 to an origin outside the settings' public URLs (None
    when any origin is served): the middleware's and the native publish path's one rule."""
    if not settings.public_urls:
        return None
    return IdentityPolicy(
        settings.resource_identifier,
        settings.public_urls,
        local_origins=settings.local_origins,
    )


def public_origins_middleware(settings: HubSettings) -> Callable[[ASGIApp], ASGIApp] | None:
    """The 421 middleware for the settings' public URLs (None when any origin is served)."""
    policy = public_origins_policy(settings)
    if policy is None:
        return None
    return lambda app: PublicOrigins(app, policy)
