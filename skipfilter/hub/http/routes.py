"""The hub's route table, written once: the app routes by it, the server's fast paths ask
``hub_route`` which hub route a request takes before deciding to answer it themselves."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from skipfilter.hub.paths import HUB_PATH, SUBSCRIPTIONS_PATH

#: Every route but the protocol's metadata document, in the order they match: (path, the
#: handler's name, methods). ``app.py`` maps each name to its endpoint.
ROUTES: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    (HUB_PATH, "subscribe", ("GET", "QUERY")),
    (HUB_PATH, "publish", ("POST",)),
    (SUBSCRIPTIONS_PATH, "subscriptions", ("GET",)),
    (SUBSCRIPTIONS_PATH + "/{rest:path}", "subscriptions", ("GET",)),
    ("/metrics", "metrics", ("GET",)),
    ("/healthz", "healthz", ("GET",)),
    ("/livez", "livez", ("GET",)),
    ("/readyz", "readyz", ("GET",)),
    ("/", "home", ("GET",)),
)

#: The hub's own path by (method, path): the routes a fast path may take over.
_HUB: dict[tuple[str, str], str] = {
    (method, path): name for path, name, methods in ROUTES if path == HUB_PATH for method in methods
}


def hub_route(scope: Mapping[str, Any]) -> str | None:
    """``"subscribe"`` or ``"publish"``: the route on the hub's path a request's method
    selects (None: any other request)."""
    return _HUB.get((scope["method"], scope["path"]))
