"""The HTTP face of the hub: Mercure's routes on Starlette, plus health, metrics, CORS, demo.

``create_app(settings)`` returns a plain ASGI app: run it with uvicorn, or mount it in an
existing Starlette/FastAPI application. ``skipfilter hub`` serves the same app with a
protocol that writes subscriber streams straight to their sockets (``native.py``); both
paths share the authorization, registration and replay code of ``Handlers``.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncGenerator, AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
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

from skipfilter.errors import InvalidSelector
from skipfilter.hub import subscriptions_api
from skipfilter.hub.asgi_stream import EventStream
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
from skipfilter.hub.hub import (
    JSONLD_CONTEXT,
    SUBSCRIPTIONS_PATH,
    Hub,
    IndexFactory,
    default_index_factory,
    new_id,
)
from skipfilter.hub.jwks import verifier_for
from skipfilter.hub.listeners import MetricsAddress, MetricsOnly, metrics_listener
from skipfilter.hub.settings import HubSettings
from skipfilter.hub.sse import InvalidField, check_retry, check_topic
from skipfilter.hub.stream import Stream, replay
from skipfilter.hub.transports import Position, TransportUnavailable
from skipfilter.hub.update import EARLIEST, Entry, Update, valid_update

log = logging.getLogger("skipfilter.hub")

HUB_PATH = "/.well-known/mercure"
#: Topics no publisher may use: the hub's own namespace (subscription events live there).
RESERVED_TOPIC = "/.well-known/mercure"

_STREAM_HEADERS = {
    "Content-Type": "text/event-stream",
    "Cache-Control": "private, no-cache, no-store, must-revalidate, max-age=0",
    "Pragma": "no-cache",
    "Expires": "0",
    "X-Accel-Buffering": "no",
}


#: Publish form fields besides ``topic`` (``private`` is read by its presence).
_SINGLE_FIELDS = ("data", "id", "type", "retry", "private")


class _BadRequest(Exception):
    """400 with a message naming the bad part."""


class _Forbidden(Exception):
    """403 with a message naming what is not allowed."""


@dataclass(frozen=True, slots=True)
class Plan:
    """An authorized subscription about to open: who, what, and where its replay starts.

    With ``replay``, stored updates after position ``replay_after`` (None: all of them)
    are sent first; ``requested`` is the entry the client's ``Last-Event-ID`` named.
    """

    subscriber_id: str
    topics: tuple[str, ...]
    claims: Claims | None
    replay: bool
    replay_after: Position | None
    requested: Entry | None
    last_event_id: str | None
    origin: str | None


def _check_selectors(selectors: list[str], settings: HubSettings) -> None:
    """Refuse selectors beyond the hub's limits (400 naming the selector and the limit)."""
    if len(selectors) > settings.max_selectors:
        raise _BadRequest(f"too many topic selectors: {len(selectors)} > {settings.max_selectors}")
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


def _refuse(what: str, hub: Hub, exc: Exception) -> Response:
    """Turn an error into its 4xx/5xx response, counting it under ``what``."""
    headers: dict[str, str] = {}
    if isinstance(exc, AuthError):
        status, message = exc.status, exc.reason
        headers["WWW-Authenticate"] = exc.www_authenticate
    elif isinstance(exc, _Forbidden):
        status, message = 403, str(exc)
    elif isinstance(exc, TransportUnavailable):
        status, message = 503, str(exc)
    else:
        status, message = 400, str(exc)
    hub.metrics.rejected[(what, status)] += 1
    return PlainTextResponse(message + "\n", status_code=status, headers=headers)


def _header_text(value: str) -> str:
    """A header as sent: UTF-8 bytes that Starlette decoded as latin-1 are read back."""
    try:
        return value.encode("latin-1").decode("utf-8")
    except (UnicodeEncodeError, UnicodeDecodeError):
        return value


class Handlers:
    """Request handlers bound to one hub."""

    def __init__(self, hub: Hub, index_factory: IndexFactory | None) -> None:
        self.hub = hub
        self.settings = hub.settings
        factory = index_factory or default_index_factory(hub.settings)
        self.publish_cover = SelectorCover(factory)
        self.subscribe_cover = SelectorCover(factory)
        self.tasks: set[asyncio.Task[None]] = set()
        self.publishers = verifier_for(hub.settings, "publisher")
        self.subscribers = verifier_for(hub.settings, "subscriber")
        address = hub.settings.metrics_addr
        self.metrics_address = MetricsAddress(address) if address else None

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
            entry = await hub.publish(update)
        except (AuthError, InvalidField, _BadRequest, _Forbidden, TransportUnavailable) as exc:
            return _refuse("publish", hub, exc)
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
            raise _BadRequest(f"unsupported content type {kind!r}: send a form")
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
            raise _BadRequest(f"the form is not valid UTF-8 ({exc.reason})") from exc
        except ValueError as exc:
            if "Max number of fields" in str(exc):
                raise _BadRequest(self._too_many_fields) from exc
            raise _BadRequest(f"malformed form: {exc}") from exc
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
                raise _BadRequest(self._too_many_fields) from exc
            raise _BadRequest(f"malformed multipart form: {exc.message}") from exc

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
            raise _BadRequest('missing "topic": an update needs at least one topic')
        if len(topics) > self.settings.max_topics:
            raise _BadRequest(f"too many topics: {len(topics)} > {self.settings.max_topics}")
        for topic in topics:
            check_topic(topic)
            if RESERVED_TOPIC in topic:
                raise _Forbidden(
                    f"topic {topic[:80]!r} is in the hub's reserved namespace {RESERVED_TOPIC!r}"
                )
        fields: dict[str, str] = {}
        for name in _SINGLE_FIELDS[:-1]:
            values = form.getlist(name)
            if len(values) > 1:
                raise _BadRequest(f"{name!r} given {len(values)} times")
            if values:
                if not isinstance(values[0], str):
                    raise _BadRequest(f"{name!r} must be a form field, not a file")
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

    async def prepare(self, request: Request) -> Plan | Response:
        """Authorize a subscription and find where its replay starts; a Response refuses."""
        hub, settings = self.hub, self.settings
        try:
            claims = await self._claims(request, self.subscribers)
            if claims is None and not settings.anonymous:
                raise AuthError(401, "missing token: this hub does not allow anonymous subscribers")
            topics = request.query_params.getlist("topic")
            if not topics:
                raise _BadRequest('missing "topic" parameter')
            _check_selectors(topics, settings)
            if hub.stopping:
                return PlainTextResponse("the hub is shutting down\n", status_code=503)
            raw = request.headers.get("last-event-id") or request.query_params.get("lastEventID")
            last_event_id = _header_text(raw) if raw else None
            requested = await self._requested(last_event_id)
        except (AuthError, _BadRequest, TransportUnavailable) as exc:
            return _refuse("subscribe", hub, exc)
        replay = last_event_id == EARLIEST or requested is not None
        return Plan(
            new_id(),
            tuple(topics),
            claims,
            replay,
            requested.position if requested is not None else None,
            requested,
            last_event_id,
            request.headers.get("origin"),
        )

    async def _requested(self, last_event_id: str | None) -> Entry | None:
        """The stored update a ``Last-Event-ID`` names (from the ring when it is there)."""
        if not last_event_id or last_event_id == EARLIEST:
            return None
        ring = self.hub.ring
        seq = ring.seq_of(last_event_id)
        if seq is not None:
            return ring.get(seq)
        return await self.hub.transport.lookup(last_event_id)

    def register(self, stream: Stream, plan: Plan) -> Response | None:
        """Add ``stream`` to the hub (a 400 Response for a selector the index refuses)."""
        try:
            self.hub.register(stream)
        except InvalidSelector as exc:
            return _refuse("subscribe", self.hub, exc)
        stream.arm_deadline()
        return None

    def stream_headers(self, stream: Stream, plan: Plan, cors: bool = False) -> dict[str, str]:
        """Response headers of a stream; ``cors`` adds what CORSMiddleware would (the
        native path bypasses the middleware)."""
        if plan.last_event_id == EARLIEST or (plan.last_event_id and plan.requested is None):
            resume = EARLIEST  # replay of everything, or of an id the hub does not have
        else:
            resume = self.hub.resume_id(stream, plan.requested)
        headers = dict(_STREAM_HEADERS, **{"Last-Event-ID": resume})
        origins = self.settings.cors_origins
        if cors and plan.origin and (plan.origin in origins or "*" in origins):
            headers["Access-Control-Allow-Origin"] = plan.origin
            headers["Access-Control-Allow-Credentials"] = "true"
            headers["Access-Control-Expose-Headers"] = "Last-Event-ID"
            headers["Vary"] = "Origin"
        return headers

    def start(self, stream: Stream, plan: Plan) -> None:
        """Make the stream live at once, or after replaying what the plan asks for."""
        if not plan.replay:
            stream.go_live()
            return
        task = asyncio.create_task(self._replay(stream, plan.replay_after))
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)

    async def _replay(self, stream: Stream, after: Position | None) -> None:
        try:
            await replay(stream, after)
        except TransportUnavailable as exc:
            stream.close("history unavailable", f"disconnected: {exc}; reconnect later")
        except Exception:
            log.exception("replay failed")
            stream.close("error", "disconnected: the replay failed")

    async def subscribe(self, request: Request) -> Response | EventStream:
        """Authorize, then stream through ASGI (replaying from Last-Event-ID)."""
        plan = await self.prepare(request)
        if isinstance(plan, Response):
            return plan
        return EventStream(self, plan)

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
        try:
            found = await subscriptions_api.page(
                hub,
                topic,
                subscriber_id,
                request.query_params.get("after"),
                settings.subscriptions_page,
            )
        except subscriptions_api.InvalidCursor as exc:
            return _refuse("subscriptions", hub, _BadRequest(str(exc)))
        except Exception as exc:  # the shared transport is down: say so
            return _refuse("subscriptions", hub, TransportUnavailable(str(exc)))
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
