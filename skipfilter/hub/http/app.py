"""The HTTP face of the hub: Mercure's routes on Starlette, plus health, metrics, CORS, demo.

``create_app(settings)`` returns a plain ASGI app: run it with uvicorn, or mount it in an
existing Starlette/FastAPI application. ``skipfilter hub`` serves the same app with a
protocol that writes subscriber streams straight to their sockets (``native.py``); both
paths open their streams through the session layer below this module (``session.py``).
Requests are read by the front end of the configured protocol mode (``frontend.py``):
Mercure 1.0 (``v1.py``), or 1.0 beside 0.x (``compat.py``).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any

from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.middleware.cors import CORSMiddleware
from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

from skipfilter.hub.core.frontend import Frontend
from skipfilter.hub.core.hub import Hub, IndexFactory
from skipfilter.hub.core.refusals import BadRequest, Forbidden
from skipfilter.hub.core.session import Sessions, exposed_headers
from skipfilter.hub.frontends.compat import CompatFrontend
from skipfilter.hub.frontends.v1.errors import RequestError
from skipfilter.hub.frontends.v1.frontend import (
    V1Frontend,
    metadata_path_for,
    public_origins_middleware,
    public_origins_policy,
    request_origin,
)
from skipfilter.hub.frontends.v1.identity import IdentityPolicy
from skipfilter.hub.frontends.v1.subscription_events import SubscriptionBook
from skipfilter.hub.http import health, subscriptions_api
from skipfilter.hub.http.asgi_stream import EventStream
from skipfilter.hub.http.demo import demo_response
from skipfilter.hub.http.health import Startup
from skipfilter.hub.http.listeners import MetricsAddress, MetricsOnly, metrics_listener
from skipfilter.hub.ids import new_id
from skipfilter.hub.paths import HUB_PATH, SUBSCRIPTIONS_PATH
from skipfilter.hub.settings import HubSettings
from skipfilter.hub.transports import TransportUnavailable
from skipfilter.hub.update import Entry

log = logging.getLogger("skipfilter.hub")


def frontend_for(settings: HubSettings, index_factory: IndexFactory | None = None) -> Frontend:
    """The front end of the settings' protocol mode: 1.0, or 1.0 beside 0.x
    (``protocol_version_compatibility``)."""
    if settings.compatibility:
        return CompatFrontend(settings, index_factory)
    return V1Frontend(settings, index_factory)


class Handlers:
    """Request handlers bound to one hub, reading requests through one front end."""

    def __init__(self, hub: Hub, frontend: Frontend) -> None:
        self.hub = hub
        self.settings = hub.settings
        self.frontend = frontend
        self.sessions = Sessions(hub, frontend)
        #: What refuses a publish: the front end's errors and the core's.
        self.refused: tuple[type[Exception], ...] = (
            *frontend.errors,
            BadRequest,
            Forbidden,
            TransportUnavailable,
        )
        address = hub.settings.metrics_addr
        self.metrics_address = MetricsAddress(address) if address else None

    # -- POST /.well-known/mercure ------------------------------------------------------

    async def publish(self, request: Request) -> Response:
        """Read the update through the front end, then store and fan out; 200 with the id."""
        outcome = await self.publish_entry(request)
        if isinstance(outcome, Response):
            return outcome
        return PlainTextResponse(outcome.update.id)

    async def publish_entry(self, request: Request) -> Entry | Response:
        """The stored entry, or the response refusing the publish: ``publish`` without its
        answer, which ``native.py`` writes itself for a plain publish."""
        hub, frontend = self.hub, self.frontend
        try:
            update = await frontend.publication(request)
            return await hub.publish(update)
        except self.refused as exc:
            return frontend.refuse("publish", hub.metrics, exc)

    # -- GET /.well-known/mercure -------------------------------------------------------

    async def subscribe(self, request: Request) -> Response | EventStream:
        """Authorize, then stream through ASGI (replaying from Last-Event-ID)."""
        plan = await self.sessions.prepare(request)
        if isinstance(plan, Response):
            return plan
        return EventStream(self.sessions, plan)

    # -- GET /.well-known/mercure/subscriptions[/{match_type}/{match}[/{subscriber}]] --

    async def subscriptions(self, request: Request) -> Response:
        """The subscriptions API (``subscriptions_api``)."""
        return await subscriptions_api.answer(self.hub, self.frontend, request)

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
        (load balancers and orchestrators poll it). A worker draining while the other
        workers serve the port (a SIGHUP replacement) answers for the port: 200."""
        if self.hub.stopping:
            if self.hub.others_serve():
                return PlainTextResponse("ok: this worker drains, the others serve\n")
            return PlainTextResponse("shutting down\n", status_code=503)
        problem = await self.hub.health()
        if problem is not None:
            return PlainTextResponse(f"unhealthy: {problem}\n", status_code=503)
        return PlainTextResponse("ok\n")

    async def home(self, request: Request) -> Response:
        """The demo page when enabled, else a pointer to the hub URL."""
        if self.settings.demo:
            settings = self.settings
            policy = IdentityPolicy(
                settings.resource_identifier,
                settings.public_urls,
                local_origins=settings.local_origins,
            )
            scheme, host = request_origin(request.scope)
            try:
                identity = policy.for_request(scheme, host)
            except RequestError as exc:
                return PlainTextResponse(exc.description + "\n", status_code=exc.status)
            return demo_response(settings, identity.resource, scheme == "https")
        return PlainTextResponse(f"skipfilter Mercure hub: subscribe at {HUB_PATH}\n")


def create_app(settings: HubSettings, index_factory: IndexFactory | None = None) -> Starlette:
    """Build the hub as an ASGI app; ``app.state.hub`` is its Hub once started.

    The hub (index + history) is started at lifespan startup, or on the first request when
    the app is mounted somewhere that does not run sub-app lifespans; the history is closed
    at lifespan shutdown. While it waits for its transport (Redis not reachable yet) the app
    answers at once: 503 naming why, and the health probes (``health.py``). A host
    application starts it from its own lifespan and publishes in-process with
    ``embed.hub_lifespan``.
    """

    async def start(startup: Startup[Handlers]) -> Handlers:
        hub = startup.hub = Hub(settings, index_factory)
        if settings.subscriptions:
            hub.book = SubscriptionBook(hub.publish_nowait, new_id)
        app.state.hub = hub  # before it starts: a stop signal may arrive while it waits
        await hub.start()
        found = Handlers(hub, frontend_for(settings, index_factory))
        app.state.handlers = found
        app.state.sessions = found.sessions  # what the native stream path opens streams with
        app.state.metrics_address = found.metrics_address
        return found

    startup: Startup[Handlers] = Startup(start)
    app_state: dict[str, Startup[Handlers]] = {"startup": startup}

    def serving(name: str) -> Callable[[Request], Awaitable[Response]]:
        """The handler ``name`` once the hub serves; until then a 503 saying why."""

        async def endpoint(request: Request) -> Response:
            found = await app_state["startup"].settle()
            if found is None:
                return app_state["startup"].refuse()
            handler: Callable[[Request], Awaitable[Response]] = getattr(found, name)
            return await handler(request)

        return endpoint

    async def metadata(request: Request) -> Response:
        found = await app_state["startup"].settle()
        if found is None:
            return app_state["startup"].refuse()
        return await found.frontend.metadata(request)

    async def healthz(request: Request) -> Response:
        found = await app_state["startup"].settle()
        if found is None:
            return PlainTextResponse(
                f"unhealthy: {app_state['startup'].reason()}\n", status_code=503
            )
        return await found.healthz(request)

    async def livez(request: Request) -> Response:
        return await health.livez(app_state["startup"])  # type: ignore[arg-type]

    async def readyz(request: Request) -> Response:
        return await health.readyz(app_state["startup"])  # type: ignore[arg-type]

    @asynccontextmanager
    async def lifespan(_: Starlette) -> AsyncIterator[None]:
        current = app_state["startup"]
        app.state.startup = current
        task = current.begin()
        # listen once served, failed, waiting for the transport, or still reaching it after
        # a moment: /livez answers while a silent Redis holds the first attempt
        await current.settle()
        if task.done() and not task.cancelled() and task.exception() is not None:
            raise task.exception()  # type: ignore[misc]
        try:
            yield
        finally:
            await current.finish()  # a start still waiting gives up
            app_state["startup"] = Startup(start)  # a later lifespan starts afresh
            hub = current.hub
            if hub is not None:
                hub.stop_streams()
                await hub.close()

    middleware = []
    if settings.metrics_addr:  # outermost: the metrics listener serves nothing else
        middleware.append(Middleware(MetricsOnly, address=MetricsAddress(settings.metrics_addr)))
    public = public_origins_middleware(settings)
    if public is not None:  # 421 before any routing
        middleware.append(Middleware(public))
    if settings.cors_origins:
        middleware.append(Middleware(CORSMiddleware, **cors_options(settings)))
    subscriptions = serving("subscriptions")
    routes = [
        Route(HUB_PATH, serving("subscribe"), methods=["GET", "QUERY"]),
        Route(HUB_PATH, serving("publish"), methods=["POST"]),
        Route(SUBSCRIPTIONS_PATH, subscriptions, methods=["GET"]),
        Route(SUBSCRIPTIONS_PATH + "/{rest:path}", subscriptions, methods=["GET"]),
        Route("/metrics", serving("metrics"), methods=["GET"]),
        Route("/healthz", healthz, methods=["GET"]),
        Route("/livez", livez, methods=["GET"]),
        Route("/readyz", readyz, methods=["GET"]),
        Route("/", serving("home"), methods=["GET"]),
    ]
    metadata_path = metadata_path_for(settings)
    if metadata_path is not None:
        routes.append(Route(metadata_path, metadata, methods=["GET", "HEAD"]))
    app = Starlette(routes=routes, middleware=middleware, lifespan=lifespan)

    async def ready() -> Handlers:
        """The started hub's handlers, starting it now if nothing has: embed.py publishes
        without a request. Waits for the transport; raises what the start raised."""
        return await asyncio.shield(app_state["startup"].begin())

    app.state.ready = ready
    app.state.settings = settings  # the HTTP layer's limits (native.py's protocol reads them)
    app.state.publish_app = lean_publish_app(settings, serving("publish"))
    app.state.publish_natively = native_publisher(settings, lambda: app_state["startup"])
    return app


def cors_options(settings: HubSettings) -> dict[str, Any]:
    """Starlette's ``CORSMiddleware`` arguments for the settings' allowed origins."""
    return {
        "allow_origins": list(settings.cors_origins),
        "allow_credentials": "*" not in settings.cors_origins,  # never with any origin (§3)
        "allow_methods": ["GET", "POST", "OPTIONS", "QUERY"],
        "allow_headers": ["Authorization", "Last-Event-ID", "Cache-Control", "Content-Type"],
        "expose_headers": list(exposed_headers(settings)),
    }


def lean_publish_app(
    settings: HubSettings, publish: Callable[[Request], Awaitable[Response]]
) -> ASGIApp:
    """The publish endpoint as an ASGI app with only the middleware a publish meets (421
    outside the public URLs, then CORS): what ``native.py`` runs for ``POST`` to the hub,
    without the router and the exception layers (uvicorn answers a crash with a 500)."""

    async def endpoint(scope: Scope, receive: Receive, send: Send) -> None:
        response = await publish(Request(scope, receive))
        await response(scope, receive, send)

    app: ASGIApp = endpoint
    if settings.cors_origins:
        app = CORSMiddleware(app, **cors_options(settings))
    public = public_origins_middleware(settings)
    if public is not None:
        app = public(app)
    return app


def native_publisher(
    settings: HubSettings, startup: Callable[[], Startup[Handlers]]
) -> Callable[[Scope], Handlers | None]:
    """For ``native.py``: the handlers that may answer a ``POST`` to the hub without the ASGI
    app, or None when the app must (the hub does not serve yet: its 503; an origin outside
    the public URLs: the 421). CORS adds nothing to a request without ``Origin``, which the
    protocol checks itself."""
    policy = public_origins_policy(settings)

    def publisher(scope: Scope) -> Handlers | None:
        found = startup().serving()
        if found is None:
            return None
        if policy is not None:
            try:
                policy.for_request(*request_origin(scope))
            except RequestError:
                return None
        return found

    return publisher
