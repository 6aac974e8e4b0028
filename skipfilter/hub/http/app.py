"""The HTTP face of the hub: Mercure's routes on Starlette, plus health, metrics, CORS, demo.

``create_app(settings)`` returns a plain ASGI app: run it with uvicorn, or mount it in an
existing Starlette/FastAPI application. ``skipfilter hub`` serves the same app with a
protocol that writes subscriber streams straight to their sockets (``server/fast_paths.py``),
handed the app's ``HubRuntime`` (``runtime.py``); both paths open their streams through the
session layer below this module (``core/session.py``). Requests are read by the front end
of the configured protocol mode (``handlers.frontend_for``): Mercure 1.0, or 1.0 beside 0.x.
"""

from __future__ import annotations

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

from skipfilter.hub.core.hub import Hub, IndexFactory
from skipfilter.hub.core.session import exposed_headers
from skipfilter.hub.frontends.v1.frontend import metadata_path_for, public_origins_middleware
from skipfilter.hub.frontends.v1.subscription_events import SubscriptionBook
from skipfilter.hub.http import health
from skipfilter.hub.http.handlers import Handlers, frontend_for
from skipfilter.hub.http.health import Startup
from skipfilter.hub.http.listeners import MetricsAddress, MetricsOnly
from skipfilter.hub.http.routes import ROUTES
from skipfilter.hub.http.runtime import HubApp, HubRuntime
from skipfilter.hub.ids import new_id
from skipfilter.hub.settings import HubSettings

__all__ = ["Handlers", "cors_options", "create_app", "frontend_for", "lean_publish_app"]

log = logging.getLogger("skipfilter.hub")


def create_app(settings: HubSettings, index_factory: IndexFactory | None = None) -> HubApp:
    """Build the hub as an ASGI app; ``app.state.hub`` is its Hub once started, and
    ``app.runtime`` (``runtime_of(app)``) the handle the server and the embedding take.

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
        app.state.hub = hub  # documented for users; set before it starts, as the runtime's
        await hub.start()
        return Handlers(hub, frontend_for(settings, index_factory))

    def serving(name: str) -> Callable[[Request], Awaitable[Response]]:
        """The handler ``name`` once the hub serves; until then a 503 saying why."""

        async def endpoint(request: Request) -> Response:
            found = await runtime.startup.settle()
            if found is None:
                return runtime.startup.refuse()
            handler: Callable[[Request], Awaitable[Response]] = getattr(found, name)
            return await handler(request)

        return endpoint

    async def metadata(request: Request) -> Response:
        found = await runtime.startup.settle()
        if found is None:
            return runtime.startup.refuse()
        return await found.frontend.metadata(request)

    async def healthz(request: Request) -> Response:
        found = await runtime.startup.settle()
        if found is None:
            return PlainTextResponse(f"unhealthy: {runtime.startup.reason()}\n", status_code=503)
        return await found.healthz(request)

    async def livez(request: Request) -> Response:
        return await health.livez(runtime.startup)  # type: ignore[arg-type]

    async def readyz(request: Request) -> Response:
        return await health.readyz(runtime.startup)  # type: ignore[arg-type]

    @asynccontextmanager
    async def lifespan(_: Starlette) -> AsyncIterator[None]:
        current = runtime.startup
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
            runtime.restart()  # a later lifespan starts afresh
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
    own: dict[str, Callable[[Request], Awaitable[Response]]] = {
        "healthz": healthz,
        "livez": livez,
        "readyz": readyz,
    }
    endpoints = {name: own.get(name) or serving(name) for _, name, _ in ROUTES}
    routes = [Route(path, endpoints[name], methods=list(methods)) for path, name, methods in ROUTES]
    metadata_path = metadata_path_for(settings)
    if metadata_path is not None:
        routes.append(Route(metadata_path, metadata, methods=["GET", "HEAD"]))
    app = HubApp(routes=routes, middleware=middleware, lifespan=lifespan)
    runtime = app.runtime = HubRuntime(
        settings, start, lean_publish_app(settings, endpoints["publish"])
    )
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
    outside the public URLs, then CORS): what the server's fast path runs for a ``POST`` to the
    hub (``HubRuntime.publish_app``),
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
