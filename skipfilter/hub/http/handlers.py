"""The hub's request handlers: what each of its routes does once the hub serves.

``Handlers`` binds them to one started Hub and reads requests through one front end
(``frontend_for``: Mercure 1.0, or 1.0 beside 0.x); ``app.py`` routes to them, and the
server's fast paths call ``publish_entry`` and the sessions directly.
"""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response

from skipfilter.hub.core.frontend import Frontend
from skipfilter.hub.core.hub import Hub, IndexFactory
from skipfilter.hub.core.refusals import refuse
from skipfilter.hub.core.session import Sessions
from skipfilter.hub.frontends.compat import CompatFrontend
from skipfilter.hub.frontends.v1.errors import RequestError
from skipfilter.hub.frontends.v1.frontend import V1Frontend, request_origin
from skipfilter.hub.frontends.v1.identity import IdentityPolicy
from skipfilter.hub.http import subscriptions_api
from skipfilter.hub.http.asgi_stream import EventStream
from skipfilter.hub.http.demo import demo_response
from skipfilter.hub.http.listeners import MetricsAddress, metrics_listener
from skipfilter.hub.paths import HUB_PATH
from skipfilter.hub.refusal import HubRefusal
from skipfilter.hub.settings import HubSettings
from skipfilter.hub.update import Entry


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
        answer, which the server's fast path writes itself for a plain publish."""
        hub, frontend = self.hub, self.frontend
        try:
            update = await frontend.publication(request)
            return await hub.publish(update)
        except HubRefusal as exc:
            return refuse("publish", hub.metrics, exc)

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
