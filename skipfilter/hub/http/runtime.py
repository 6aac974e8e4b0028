"""The typed handle on a hub app that the server, its protocol and the embedding receive.

``create_app`` builds one ``HubRuntime`` per app (``runtime_of(app)``): its settings, the
start of its hub (``Startup``), the publish endpoint the fast path runs, and what a
process may ask of its hub (``ready``, ``begin_stopping``, ``drain``). The layers above
read these typed attributes instead of looking names up on ``app.state``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

from starlette.applications import Starlette
from starlette.types import ASGIApp, Scope

from skipfilter.hub.core.hub import Hub
from skipfilter.hub.core.session import Sessions
from skipfilter.hub.frontends.v1.errors import RequestError
from skipfilter.hub.frontends.v1.frontend import public_origins_policy, request_origin
from skipfilter.hub.http.handlers import Handlers
from skipfilter.hub.http.health import Startup
from skipfilter.hub.http.listeners import MetricsAddress, metrics_listener
from skipfilter.hub.settings import HubSettings

Start = Callable[[Startup[Handlers]], Awaitable[Handlers]]


class HubRuntime:
    """One hub app's wiring: what it serves with, how its hub starts and stops.

    - ``settings``: the app's settings (the protocol reads its request limits there);
    - ``startup``: the current start of the hub (a later lifespan gets a fresh one);
    - ``publish_app``: the publish endpoint with only the middleware a publish meets;
    - ``native_publish``: whether a plain publish may be answered without the ASGI app
      (benchmarks turn it off to measure ``publish_app``).
    """

    def __init__(self, settings: HubSettings, start: Start, publish_app: ASGIApp) -> None:
        self.settings = settings
        self._start = start
        self.startup: Startup[Handlers] = Startup(start)
        self.publish_app = publish_app
        self.native_publish = True
        address = settings.metrics_addr
        self.metrics_address = MetricsAddress(address) if address else None
        self._public_origins = public_origins_policy(settings)

    # -- the hub's start ------------------------------------------------------------------

    @property
    def hub(self) -> Hub | None:
        """The Hub once its start has built it (it may still wait for its transport)."""
        return self.startup.hub

    def serving(self) -> Handlers | None:
        """The handlers once the hub serves (None before)."""
        return self.startup.serving()

    def sessions(self) -> Sessions | None:
        """What opens subscriber streams, once the hub serves (None before)."""
        found = self.startup.serving()
        return found.sessions if found is not None else None

    async def ready(self) -> Handlers:
        """The started hub's handlers, starting it now if nothing has (the embedding
        publishes without a request). Waits for the transport; raises what the start raised."""
        return await asyncio.shield(self.startup.begin())

    def restart(self) -> None:
        """A later lifespan starts the hub afresh."""
        self.startup = Startup(self._start)

    # -- the process stops ----------------------------------------------------------------

    def begin_stopping(self, others_serve: Callable[[], bool] | None = None) -> None:
        """The process is told to stop (``Hub.begin_stopping``); nothing before the hub
        exists."""
        hub = self.startup.hub
        if hub is not None:
            hub.begin_stopping(others_serve)

    def drain(self, give_up_in: float) -> None:
        """End the streams; fail publishes still unanswered ``give_up_in`` s from now."""
        hub = self.startup.hub
        if hub is not None:
            hub.drain(give_up_in=give_up_in)

    # -- what the fast paths ask ------------------------------------------------------------

    def on_metrics_listener(self, scope: Scope) -> bool:
        """Whether a request came to the metrics address (which answers only /metrics)."""
        address = self.metrics_address
        return address is not None and metrics_listener(scope, address)

    def native_publisher(self, scope: Scope) -> Handlers | None:
        """The handlers that may answer a ``POST`` to the hub without the ASGI app, or None
        when the app must (the hub does not serve yet: its 503; an origin outside the public
        URLs: the 421). CORS adds nothing to a request without ``Origin``, which the
        protocol checks itself."""
        if not self.native_publish:
            return None
        found = self.startup.serving()
        if found is None:
            return None
        if self._public_origins is not None:
            try:
                self._public_origins.for_request(*request_origin(scope))
            except RequestError:
                return None
        return found


class HubApp(Starlette):
    """The Starlette app ``create_app`` returns, carrying its ``HubRuntime``."""

    runtime: HubRuntime


def runtime_of(app: Starlette) -> HubRuntime:
    """The runtime of an app ``create_app`` built; TypeError for any other app."""
    if not isinstance(app, HubApp):
        raise TypeError(f"not a hub app (create_app builds one): {app!r}")
    return app.runtime
