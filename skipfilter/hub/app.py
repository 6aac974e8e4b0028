"""The HTTP face of the hub: Mercure's routes on Starlette, plus metrics, CORS and a demo.

``create_app(settings)`` returns a plain ASGI app: run it with uvicorn, or mount it in an
existing Starlette/FastAPI application.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any
from urllib.parse import parse_qsl, unquote

from starlette.applications import Starlette
from starlette.datastructures import FormData, UploadFile
from starlette.middleware import Middleware
from starlette.middleware.cors import CORSMiddleware
from starlette.requests import Request
from starlette.responses import HTMLResponse, PlainTextResponse, Response
from starlette.routing import Route

from skipfilter.errors import InvalidSelector
from skipfilter.hub.auth import (
    AuthError,
    Claims,
    SelectorCover,
    TokenSource,
    TokenVerifier,
    check_origin,
    find_token,
)
from skipfilter.hub.demo import demo_page
from skipfilter.hub.history import Update
from skipfilter.hub.hub import (
    JSONLD_CONTEXT,
    SUBSCRIPTIONS_PATH,
    Hub,
    IndexFactory,
    default_index_factory,
    new_id,
)
from skipfilter.hub.jwks import verifier_for
from skipfilter.hub.settings import HubSettings
from skipfilter.hub.sse import InvalidField, check_id, check_retry, check_type
from skipfilter.hub.stream import EventStream

HUB_PATH = "/.well-known/mercure"

_STREAM_HEADERS = {
    "Content-Type": "text/event-stream",
    "Cache-Control": "private, no-cache, no-store, must-revalidate, max-age=0",
    "Pragma": "no-cache",
    "Expires": "0",
    "X-Accel-Buffering": "no",
}


def _check_selectors(selectors: list[str], settings: HubSettings) -> None:
    """Refuse selectors beyond the hub's limits (400 naming the selector and the limit)."""
    if len(selectors) > settings.max_selectors:
        raise _BadRequest(
            f"too many topic selectors: {len(selectors)} > {settings.max_selectors}"
        )
    for selector in selectors:
        if len(selector) > settings.max_selector_length:
            raise _BadRequest(
                f"topic selector longer than {settings.max_selector_length} characters: "
                f"{selector[:60]!r}..."
            )
        variables = selector.count("{") + selector.count(",") if "{" in selector else 0
        if variables > settings.max_template_variables:
            raise _BadRequest(
                f"topic selector {selector[:80]!r} has more than "
                f"{settings.max_template_variables} template variables"
            )


class _BadRequest(Exception):
    """400 with a message naming the bad part."""


def _refuse(what: str, hub: Hub, exc: Exception) -> Response:
    """Turn an error into its 4xx response, counting it under ``what``."""
    if isinstance(exc, AuthError):
        status, headers = exc.status, {"WWW-Authenticate": exc.www_authenticate}
        message = exc.reason
    else:
        status, headers, message = 400, {}, str(exc)
    hub.metrics.rejected[(what, status)] += 1
    return PlainTextResponse(message + "\n", status_code=status, headers=headers)


class _Handlers:
    """Request handlers bound to one hub."""

    def __init__(self, hub: Hub, index_factory: IndexFactory | None) -> None:
        self.hub = hub
        self.settings = hub.settings
        factory = index_factory or default_index_factory(hub.settings)
        self.publish_cover = SelectorCover(factory)
        self.subscribe_cover = SelectorCover(factory)
        self.publishers = verifier_for(hub.settings, "publisher")
        self.subscribers = verifier_for(hub.settings, "subscriber")

    async def _claims(self, request: Request, verifier: TokenVerifier | None) -> Claims | None:
        found = find_token(
            request.headers, request.query_params, request.cookies, self.settings.cookie_name
        )
        if found is None or verifier is None:
            return None
        return await verifier.claims(*found)

    # -- POST /.well-known/mercure ------------------------------------------------------

    async def publish(self, request: Request) -> Response:
        """Authorize, validate every field, then store and fan out; 200 with the id."""
        hub, settings = self.hub, self.settings
        try:
            if self.publishers is None:
                raise AuthError(401, "publishing is disabled: no publisher key is configured")
            claims = await self._claims(request, self.publishers)
            if claims is None:
                raise AuthError(401, "missing token: publishing requires a JWT")
            if claims.source is TokenSource.COOKIE:
                check_origin(request.headers, settings.publish_origins)
            if claims.publish is None:
                raise AuthError(403, "the token has no 'mercure.publish' claim")
            form = await self._form(request)
            if form is None:
                hub.metrics.rejected[("publish", 413)] += 1
                return PlainTextResponse(
                    f"request body larger than {settings.max_body} bytes\n", status_code=413
                )
            update = self._update(form)
            uncovered = self.publish_cover.covers_all(claims.publish, update.topics)
            if uncovered is not None:
                raise AuthError(403, f"the token may not publish to topic {uncovered!r}")
        except (AuthError, InvalidField, _BadRequest) as exc:
            return _refuse("publish", hub, exc)
        entry = hub.publish(update)
        return PlainTextResponse(entry.update.id)

    async def _form(self, request: Request) -> FormData | None:
        """The publish form, or None when the body exceeds ``max_body`` (413).

        URL-encoded bodies (what Mercure publishers send) are read with a running size
        check, so a chunked upload cannot grow past the limit; multipart goes to Starlette.
        """
        limit = self.settings.max_body
        length = request.headers.get("content-length")
        if length is not None and length.isdigit() and int(length) > limit:
            return None
        kind = request.headers.get("content-type", "").split(";")[0].strip().lower()
        if kind == "multipart/form-data":
            return await request.form(max_files=0, max_fields=1000, max_part_size=limit)
        if kind not in ("application/x-www-form-urlencoded", ""):
            raise _BadRequest(f"unsupported content type {kind!r}: send a form")
        body = bytearray()
        async for chunk in request.stream():
            body += chunk
            if len(body) > limit:
                return None
        try:
            pairs = parse_qsl(
                body.decode("utf-8"), keep_blank_values=True, errors="strict", max_num_fields=1000
            )
        except UnicodeDecodeError as exc:
            raise _BadRequest(f"the form is not valid UTF-8 ({exc.reason})") from exc
        except ValueError as exc:
            raise _BadRequest(f"malformed form: {exc}") from exc
        items: list[tuple[str, str | UploadFile]] = list(pairs)
        return FormData(items)

    @staticmethod
    def _update(form: Any) -> Update:
        topics = tuple(t for t in form.getlist("topic") if isinstance(t, str))
        if not topics:
            raise _BadRequest('missing "topic": an update needs at least one topic')
        fields: dict[str, str] = {}
        for name in ("data", "id", "type", "retry"):
            values = form.getlist(name)
            if len(values) > 1:
                raise _BadRequest(f"{name!r} given {len(values)} times")
            if values:
                if not isinstance(values[0], str):
                    raise _BadRequest(f"{name!r} must be a form field, not a file")
                fields[name] = values[0]
        return Update(
            id=check_id(fields["id"]) if "id" in fields else new_id(),
            topics=topics,
            data=fields.get("data", ""),
            private="private" in form,
            type=check_type(fields["type"]) if fields.get("type") else None,
            retry=check_retry(fields["retry"]) if "retry" in fields else None,
        )

    # -- GET /.well-known/mercure -------------------------------------------------------

    async def subscribe(self, request: Request) -> Response | EventStream:
        """Authorize, register in the index, then stream (replaying from Last-Event-ID)."""
        hub, settings = self.hub, self.settings
        try:
            claims = await self._claims(request, self.subscribers)
            if claims is None and not settings.anonymous:
                raise AuthError(401, "missing token: this hub does not allow anonymous subscribers")
            topics = request.query_params.getlist("topic")
            if not topics:
                raise _BadRequest('missing "topic" parameter')
            _check_selectors(topics, settings)
            last_event_id = request.headers.get("last-event-id") or request.query_params.get(
                "lastEventID"
            )
            if hub.stopping:
                return PlainTextResponse("the hub is shutting down\n", status_code=503)
            subscriber = hub.register(topics, claims)
        except (AuthError, _BadRequest, InvalidSelector) as exc:
            return _refuse("subscribe", hub, exc)
        replay_from = None
        if last_event_id:
            replay_from = hub.history.lookup(last_event_id)
        headers = dict(_STREAM_HEADERS, **{"Last-Event-ID": hub.history.last_id})
        return EventStream(hub, subscriber, replay_from, headers)

    # -- GET /.well-known/mercure/subscriptions[/{topic}[/{subscriber}]] ----------------

    async def subscriptions(self, request: Request) -> Response:
        """The JSON-LD subscriptions API; the token must be allowed to see the URL."""
        hub, settings = self.hub, self.settings
        if not settings.subscriptions:
            return PlainTextResponse("the subscriptions API is disabled\n", status_code=404)
        raw = request.scope.get("raw_path") or request.url.path.encode()
        path = raw.decode("latin-1").split("?", 1)[0]
        segments = [unquote(s) for s in path[len(SUBSCRIPTIONS_PATH) :].split("/")[1:]]
        if len(segments) > 2 or any(s == "" for s in segments):
            return PlainTextResponse("not found\n", status_code=404)
        try:
            if self.subscribers is not None:
                claims = await self._claims(request, self.subscribers)
                if claims is None:
                    raise AuthError(401, "missing token: the subscriptions API requires a JWT")
                allowed = claims.subscribe or ()
                if not self.subscribe_cover.covers(allowed, path):
                    raise AuthError(403, f"the token's 'mercure.subscribe' does not cover {path}")
        except AuthError as exc:
            return _refuse("subscriptions", hub, exc)
        topic = segments[0] if segments else None
        subscriber_id = segments[1] if len(segments) == 2 else None
        docs = hub.subscription_docs(topic, subscriber_id)
        headers = {"Content-Type": "application/ld+json"}
        if subscriber_id is not None:
            if not docs:
                return PlainTextResponse("no such subscription\n", status_code=404)
            doc = {"@context": JSONLD_CONTEXT, **docs[0], "lastEventID": hub.history.last_id}
            return Response(json.dumps(doc, indent=2), headers=headers)
        collection = {
            "@context": JSONLD_CONTEXT,
            "id": path,
            "type": "Subscriptions",
            "lastEventID": hub.history.last_id,
            "subscriptions": docs,
        }
        return Response(json.dumps(collection, indent=2), headers=headers)

    # -- misc ---------------------------------------------------------------------------

    async def metrics(self, request: Request) -> Response:
        """Prometheus scrape endpoint."""
        hub = self.hub
        text = hub.metrics.render(len(hub), len(hub.index), hub.history.head)
        return PlainTextResponse(text, media_type="text/plain; version=0.0.4")

    async def home(self, request: Request) -> Response:
        """The demo page when enabled, else a pointer to the hub URL."""
        if self.settings.demo:
            return HTMLResponse(demo_page(self.settings))
        return PlainTextResponse(f"skipfilter Mercure hub: subscribe at {HUB_PATH}\n")


def create_app(settings: HubSettings, index_factory: IndexFactory | None = None) -> Starlette:
    """Build the hub as an ASGI app; ``app.state.hub`` is its Hub once started.

    The hub (index + history database) is created at lifespan startup, or on the first
    request when the app is mounted somewhere that does not run sub-app lifespans, and the
    database is closed at lifespan shutdown.
    """
    holder: dict[str, _Handlers] = {}

    def handlers() -> _Handlers:
        if "h" not in holder:
            hub = Hub(settings, index_factory)
            holder["h"] = _Handlers(hub, index_factory)
            app.state.hub = hub
        return holder["h"]

    async def publish(request: Request) -> Response:
        return await handlers().publish(request)

    async def subscribe(request: Request) -> Response | EventStream:
        return await handlers().subscribe(request)

    async def subscriptions(request: Request) -> Response:
        return await handlers().subscriptions(request)

    async def metrics(request: Request) -> Response:
        return await handlers().metrics(request)

    async def home(request: Request) -> Response:
        return await handlers().home(request)

    @asynccontextmanager
    async def lifespan(_: Starlette) -> AsyncIterator[None]:
        handlers()
        try:
            yield
        finally:
            holder.pop("h").hub.close()

    middleware = []
    if settings.cors_origins:
        middleware.append(
            Middleware(
                CORSMiddleware,
                allow_origins=list(settings.cors_origins),
                allow_credentials=True,
                allow_methods=["GET", "POST", "OPTIONS"],
                allow_headers=["Authorization", "Last-Event-ID", "Cache-Control", "Content-Type"],
                expose_headers=["Last-Event-ID"],
            )
        )
    routes = [
        Route(HUB_PATH, subscribe, methods=["GET"]),
        Route(HUB_PATH, publish, methods=["POST"]),
        Route(SUBSCRIPTIONS_PATH, subscriptions, methods=["GET"]),
        Route(SUBSCRIPTIONS_PATH + "/{rest:path}", subscriptions, methods=["GET"]),
        Route("/metrics", metrics, methods=["GET"]),
        Route("/", home, methods=["GET"]),
    ]
    app = Starlette(routes=routes, middleware=middleware, lifespan=lifespan)
    return app
