"""The HTTP face of the hub: Mercure's routes on Starlette, plus health, metrics, CORS, demo.

``create_app(settings)`` returns a plain ASGI app: run it with uvicorn, or mount it in an
existing Starlette/FastAPI application. ``skipfilter hub`` serves the same app with a
protocol that writes subscriber streams straight to their sockets (``native.py``); both
paths open their streams through the session layer below this module (``session.py``).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncGenerator, AsyncIterator
from contextlib import asynccontextmanager
from typing import Any
from urllib.parse import parse_qsl, quote, unquote

from starlette.applications import Starlette
from starlette.datastructures import FormData, UploadFile
from starlette.formparsers import MultiPartException, MultiPartParser
from starlette.middleware import Middleware
from starlette.middleware.cors import CORSMiddleware
from starlette.requests import Request
from starlette.responses import HTMLResponse, PlainTextResponse, Response
from starlette.routing import Route

from skipfilter.hub import subscriptions_api
from skipfilter.hub.asgi_stream import EventStream
from skipfilter.hub.auth import AuthError, SelectorCover, TokenSource, check_origin
from skipfilter.hub.demo import demo_page
from skipfilter.hub.hub import (
    JSONLD_CONTEXT,
    Hub,
    IndexFactory,
    default_index_factory,
    new_id,
)
from skipfilter.hub.jwks import verifier_for
from skipfilter.hub.listeners import MetricsAddress, MetricsOnly, metrics_listener
from skipfilter.hub.paths import HUB_PATH, RESERVED_NAMESPACE, SUBSCRIPTIONS_PATH
from skipfilter.hub.refusals import BadRequest, Forbidden, refuse
from skipfilter.hub.session import Sessions, request_claims
from skipfilter.hub.settings import HubSettings
from skipfilter.hub.sse import InvalidField, check_retry, check_topic
from skipfilter.hub.transports import TransportUnavailable
from skipfilter.hub.update import Update, valid_update

log = logging.getLogger("skipfilter.hub")


#: Publish form fields besides ``topic`` (``private`` is read by its presence).
_SINGLE_FIELDS = ("data", "id", "type", "retry", "private")


class Handlers:
    """Request handlers bound to one hub."""

    def __init__(self, hub: Hub, index_factory: IndexFactory | None) -> None:
        self.hub = hub
        self.settings = hub.settings
        factory = index_factory or default_index_factory(hub.settings)
        self.publish_cover = SelectorCover(factory)
        self.subscribe_cover = SelectorCover(factory)
        self.publishers = verifier_for(hub.settings, "publisher")
        self.subscribers = verifier_for(hub.settings, "subscriber")
        self.sessions = Sessions(hub, self.subscribers)
        address = hub.settings.metrics_addr
        self.metrics_address = MetricsAddress(address) if address else None

    # -- POST /.well-known/mercure ------------------------------------------------------

    async def publish(self, request: Request) -> Response:
        """Authorize, validate every field, then store and fan out; 200 with the id."""
        hub, settings = self.hub, self.settings
        try:
            if self.publishers is None:
                raise AuthError(401, "publishing is disabled: no publisher key is configured")
            claims = await request_claims(request, self.publishers, settings.cookie_name)
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
            entry = await hub.publish(update)
        except (AuthError, InvalidField, BadRequest, Forbidden, TransportUnavailable) as exc:
            return refuse("publish", hub.metrics, exc)
        return PlainTextResponse(entry.update.id)

    async def _form(self, request: Request) -> FormData | None:
        """The publish form, or None when the body exceeds ``max_body`` (413).

        The body is read with a running size check whatever its encoding or framing, so a
        chunked upload of many parts cannot grow past the limit either.
        """
        limit = self.settings.max_body
        length = request.headers.get("content-length")
        if length is not None and length.isdigit() and int(length) > limit:
            return None
        kind = request.headers.get("content-type", "").split(";")[0].strip().lower()
        if kind not in ("multipart/form-data", "application/x-www-form-urlencoded", ""):
            raise BadRequest(f"unsupported content type {kind!r}: send a form")
        body = bytearray()
        async for chunk in request.stream():
            body += chunk
            if len(body) > limit:
                return None
        if kind == "multipart/form-data":
            return await self._multipart(request, bytes(body))
        try:
            pairs = parse_qsl(
                body.decode("utf-8"),
                keep_blank_values=True,
                errors="strict",
                max_num_fields=self._max_fields,
            )
        except UnicodeDecodeError as exc:
            raise BadRequest(f"the form is not valid UTF-8 ({exc.reason})") from exc
        except ValueError as exc:
            if "Max number of fields" in str(exc):
                raise BadRequest(self._too_many_fields) from exc
            raise BadRequest(f"malformed form: {exc}") from exc
        items: list[tuple[str, str | UploadFile]] = list(pairs)
        return FormData(items)

    async def _multipart(self, request: Request, body: bytes) -> FormData:
        async def once() -> AsyncGenerator[bytes, None]:
            yield body

        parser = MultiPartParser(
            request.headers,
            once(),
            max_files=0,
            max_fields=self._max_fields,
            max_part_size=len(body) + 1,
        )
        try:
            return await parser.parse()
        except MultiPartException as exc:
            if "Too many fields" in exc.message:
                raise BadRequest(self._too_many_fields) from exc
            raise BadRequest(f"malformed multipart form: {exc.message}") from exc

    @property
    def _max_fields(self) -> int:
        """Form fields a publish may carry: every topic, and each other field once."""
        return self.settings.max_topics + len(_SINGLE_FIELDS)

    @property
    def _too_many_fields(self) -> str:
        return (
            f"too many form fields: more than {self._max_fields} (at most "
            f"{self.settings.max_topics} topics, and {', '.join(_SINGLE_FIELDS)} once each)"
        )

    def _update(self, form: Any) -> Update:
        topics = tuple(t for t in form.getlist("topic") if isinstance(t, str))
        if not topics:
            raise BadRequest('missing "topic": an update needs at least one topic')
        if len(topics) > self.settings.max_topics:
            raise BadRequest(f"too many topics: {len(topics)} > {self.settings.max_topics}")
        for topic in topics:
            check_topic(topic)
            if RESERVED_NAMESPACE in topic:
                raise Forbidden(
                    f"topic {topic[:80]!r} is in the hub's reserved namespace "
                    f"{RESERVED_NAMESPACE!r}"
                )
        fields: dict[str, str] = {}
        for name in _SINGLE_FIELDS[:-1]:
            values = form.getlist(name)
            if len(values) > 1:
                raise BadRequest(f"{name!r} given {len(values)} times")
            if values:
                if not isinstance(values[0], str):
                    raise BadRequest(f"{name!r} must be a form field, not a file")
                fields[name] = values[0]
        return valid_update(
            fields["id"] if "id" in fields else new_id(),
            topics,
            fields.get("data", ""),
            "private" in form,
            fields.get("type") or None,
            check_retry(fields["retry"]) if "retry" in fields else None,
        )

    # -- GET /.well-known/mercure -------------------------------------------------------

    async def subscribe(self, request: Request) -> Response | EventStream:
        """Authorize, then stream through ASGI (replaying from Last-Event-ID)."""
        plan = await self.sessions.prepare(request)
        if isinstance(plan, Response):
            return plan
        return EventStream(self.sessions, plan)

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
                claims = await request_claims(request, self.subscribers, settings.cookie_name)
                if claims is None:
                    raise AuthError(401, "missing token: the subscriptions API requires a JWT")
                allowed = claims.subscribe or ()
                if not self.subscribe_cover.covers(allowed, path):
                    raise AuthError(403, f"the token's 'mercure.subscribe' does not cover {path}")
        except AuthError as exc:
            return refuse("subscriptions", hub.metrics, exc)
        topic = segments[0] if segments else None
        subscriber_id = segments[1] if len(segments) == 2 else None
        try:
            found = await subscriptions_api.page(
                hub,
                topic,
                subscriber_id,
                request.query_params.get("after"),
                settings.subscriptions_page,
            )
        except subscriptions_api.InvalidCursor as exc:
            return refuse("subscriptions", hub.metrics, BadRequest(str(exc)))
        except Exception as exc:  # the shared transport is down: say so
            return refuse("subscriptions", hub.metrics, TransportUnavailable(str(exc)))
        headers = {"Content-Type": "application/ld+json"}
        if subscriber_id is not None:
            if not found.docs:
                return PlainTextResponse("no such subscription\n", status_code=404)
            doc = {"@context": JSONLD_CONTEXT, **found.docs[0], "lastEventID": hub.last_id}
            return Response(await subscriptions_api.encode(doc), headers=headers)
        collection = {
            "@context": JSONLD_CONTEXT,
            "id": path,
            "type": "Subscriptions",
            "lastEventID": hub.last_id,
            "subscriptions": found.docs,
        }
        if found.after is not None:
            collection["next"] = f"{path}?after={quote(found.after, safe='')}"
            headers["Link"] = f'<{collection["next"]}>; rel="next"'
        return Response(await subscriptions_api.encode(collection), headers=headers)

    # -- misc ---------------------------------------------------------------------------

    async def metrics(self, request: Request) -> Response:
        """Prometheus scrape endpoint, only on the metrics address when one is set."""
        if not self._on_metrics_address(request):
            return PlainTextResponse(
                "metrics are served on the hub's metrics address (--metrics-addr)\n",
                status_code=404,
            )
        hub = self.hub
        text = hub.metrics.render(len(hub), len(hub.index), hub.ring.head, hub.transport.commits)
        return PlainTextResponse(text, media_type="text/plain; version=0.0.4")

    def _on_metrics_address(self, request: Request) -> bool:
        return metrics_listener(request.scope, self.metrics_address)

    async def healthz(self, request: Request) -> Response:
        """200 while the hub serves; 503 saying why while it shuts down or cannot deliver
        (load balancers and orchestrators poll it)."""
        if self.hub.stopping:
            return PlainTextResponse("shutting down\n", status_code=503)
        problem = await self.hub.health()
        if problem is not None:
            return PlainTextResponse(f"unhealthy: {problem}\n", status_code=503)
        return PlainTextResponse("ok\n")

    async def home(self, request: Request) -> Response:
        """The demo page when enabled, else a pointer to the hub URL."""
        if self.settings.demo:
            return HTMLResponse(demo_page(self.settings))
        return PlainTextResponse(f"skipfilter Mercure hub: subscribe at {HUB_PATH}\n")


def create_app(settings: HubSettings, index_factory: IndexFactory | None = None) -> Starlette:
    """Build the hub as an ASGI app; ``app.state.hub`` is its Hub once started.

    The hub (index + history) is started at lifespan startup, or on the first request when
    the app is mounted somewhere that does not run sub-app lifespans; the history is closed
    at lifespan shutdown.
    """
    holder: dict[str, Handlers] = {}
    starting: dict[str, asyncio.Task[None]] = {}

    async def handlers() -> Handlers:
        if "h" not in holder:
            if "start" not in starting:
                starting["start"] = asyncio.create_task(start())
            await asyncio.shield(starting["start"])
        return holder["h"]

    async def start() -> None:
        hub = Hub(settings, index_factory)
        app.state.hub = hub  # before it starts: a stop signal may arrive while it waits
        await hub.start()
        found = Handlers(hub, index_factory)
        app.state.handlers = found
        app.state.sessions = found.sessions  # what the native stream path opens streams with
        app.state.metrics_address = found.metrics_address
        holder["h"] = found

    async def publish(request: Request) -> Response:
        return await (await handlers()).publish(request)

    async def subscribe(request: Request) -> Response | EventStream:
        return await (await handlers()).subscribe(request)

    async def subscriptions(request: Request) -> Response:
        return await (await handlers()).subscriptions(request)

    async def metrics(request: Request) -> Response:
        return await (await handlers()).metrics(request)

    async def healthz(request: Request) -> Response:
        return await (await handlers()).healthz(request)

    async def home(request: Request) -> Response:
        return await (await handlers()).home(request)

    @asynccontextmanager
    async def lifespan(_: Starlette) -> AsyncIterator[None]:
        await handlers()
        try:
            yield
        finally:
            found = holder.pop("h")
            starting.clear()
            found.hub.stop_streams()
            await found.hub.close()

    middleware = []
    if settings.metrics_addr:  # outermost: the metrics listener serves nothing else
        middleware.append(Middleware(MetricsOnly, address=MetricsAddress(settings.metrics_addr)))
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
        Route("/healthz", healthz, methods=["GET"]),
        Route("/", home, methods=["GET"]),
    ]
    app = Starlette(routes=routes, middleware=middleware, lifespan=lifespan)
    return app
