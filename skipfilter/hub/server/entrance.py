"""Which way into the hub a request takes: the one place that chooses.

A subscription is streamed by the protocol itself (``fast_paths.NativeStream``) or through
the app. A publish reaches ``Hub.publish`` by one of four entrances, from the leanest:
``NATIVE_PUBLISH`` (``fast_publish.py``: no ASGI cycle), ``LEAN_PUBLISH`` (the publish
endpoint with only its 421 and CORS layers, ``HubRuntime.publish_app``), ``APP`` (the whole
Starlette app, router and middleware), and, in-process without HTTP, ``embed.HubPublisher``
(chosen by the application that calls it, never here).
"""

from __future__ import annotations

import enum
from typing import Protocol

from starlette.types import ASGIApp, Scope

from skipfilter.hub.core.session import Sessions
from skipfilter.hub.http.routes import hub_route
from skipfilter.hub.server.fast_publish import Handlers, plain_publish
from skipfilter.hub.settings import HubSettings

#: Headers uvicorn's proxy-headers middleware reads (a publish with one takes the app).
_FORWARDED = (b"x-forwarded-for", b"x-forwarded-proto")


class Runtime(Protocol):
    """What the fast paths use of a hub app's ``http.runtime.HubRuntime``: named here so
    that the stream writers reach no protocol front end (tests/test_layout.py)."""

    @property
    def settings(self) -> HubSettings: ...

    @property
    def publish_app(self) -> ASGIApp: ...

    def serving(self) -> Handlers | None: ...

    def sessions(self) -> Sessions | None: ...

    def on_metrics_listener(self, scope: Scope) -> bool: ...

    def native_publisher(self, scope: Scope) -> Handlers | None: ...


class Entrance(enum.Enum):
    """Who answers a request."""

    #: The protocol streams it (an HTTP/1.1 ``GET`` subscription to a serving hub).
    STREAM = "stream"
    #: The protocol publishes it (a plain form publish, no ``Origin``, to a serving hub).
    NATIVE_PUBLISH = "native publish"
    #: The publish endpoint with only the middleware a publish meets.
    LEAN_PUBLISH = "lean publish"
    #: The whole app.
    APP = "app"


def entrance(runtime: Runtime, scope: Scope, streams_here: bool) -> Entrance:
    """The entrance a request takes, from its head (``scope``) and the hub's state;
    ``streams_here``: the protocol may write streams itself (``--streams native``)."""
    route = hub_route(scope)
    if route is None or runtime.on_metrics_listener(scope):  # there the app answers 404
        return Entrance.APP
    if route == "subscribe":
        if (
            streams_here
            and scope["method"] == "GET"  # QUERY has a body: the app reads it
            and scope.get("http_version") == "1.1"
            and runtime.sessions() is not None  # the hub serves
        ):
            return Entrance.STREAM
        return Entrance.APP
    headers = scope["headers"]
    for name, _ in headers:
        if name in _FORWARDED:
            return Entrance.APP
    if plain_publish(headers) and runtime.native_publisher(scope) is not None:
        return Entrance.NATIVE_PUBLISH
    return Entrance.LEAN_PUBLISH
