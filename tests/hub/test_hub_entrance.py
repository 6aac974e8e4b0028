"""``entrance.entrance``: the one choice of who answers a request, on a real app's runtime.

A subscription is streamed by the protocol only as an HTTP/1.1 ``GET`` to a serving hub; a
publish is answered natively only when plain (a form with a length, no Origin) and inside
the public URLs, else by the lean endpoint; anything a proxy or the metrics listener
changes, and every other request, takes the whole app.
"""

from __future__ import annotations

import asyncio
from typing import Any

from skipfilter.hub import HubSettings, create_app
from skipfilter.hub.http.runtime import HubRuntime, runtime_of
from skipfilter.hub.server.entrance import Entrance, entrance

FORM = [
    (b"host", b"127.0.0.1:3000"),
    (b"content-type", b"application/x-www-form-urlencoded"),
    (b"content-length", b"9"),
]


def scope(method: str, path: str = "/.well-known/mercure", **extra: Any) -> dict[str, Any]:
    found: dict[str, Any] = {
        "type": "http",
        "method": method,
        "path": path,
        "http_version": "1.1",
        "scheme": "http",
        "server": ("127.0.0.1", 3000),
        "headers": [(b"host", b"127.0.0.1:3000")],
    }
    found.update(extra)
    return found


def choices(settings: HubSettings, scopes: list[dict[str, Any]], streams: bool = True) -> list[str]:
    """The entrance of each scope, before the hub starts and then while it serves."""
    app = create_app(settings)
    runtime: HubRuntime = runtime_of(app)

    async def run() -> list[str]:
        ways = [entrance(runtime, s, streams).value for s in scopes]
        async with app.router.lifespan_context(app):
            ways += [entrance(runtime, s, streams).value for s in scopes]
        return ways

    return asyncio.run(asyncio.wait_for(run(), 30))


def settings(**changes: Any) -> HubSettings:
    return HubSettings(anonymous=True, history_path=":memory:", heartbeat=0, **changes)


def test_subscriptions() -> None:
    scopes = [
        scope("GET"),
        scope("GET", http_version="1.0"),
        scope("QUERY"),
        scope("GET", "/healthz"),
    ]
    assert choices(settings(), scopes) == [
        *("app", "app", "app", "app"),  # starting: the app answers 503
        *("stream", "app", "app", "app"),
    ]
    assert choices(settings(), scopes[:1], streams=False) == ["app", "app"]


def test_publishes() -> None:
    scopes = [
        scope("POST", headers=FORM),
        scope("POST", headers=[*FORM, (b"origin", b"http://127.0.0.1:3000")]),
        scope("POST", headers=[*FORM, (b"x-forwarded-proto", b"https")]),
        scope("POST", headers=[(b"host", b"127.0.0.1:3000")]),
        scope("POST", "/"),
    ]
    assert choices(settings(), scopes) == [
        *("lean publish", "lean publish", "app", "lean publish", "app"),  # starting
        *("native publish", "lean publish", "app", "lean publish", "app"),
    ]


def test_a_publish_outside_the_public_urls_is_not_answered_natively() -> None:
    public = settings(public_urls=("https://hub.example.com",))
    assert choices(public, [scope("POST", headers=FORM)]) == ["lean publish"] * 2


def test_the_metrics_listener_takes_the_app() -> None:
    metrics = settings(metrics_addr="127.0.0.1:9")
    at_metrics = ("127.0.0.1", 9)
    scopes = [scope("GET", server=at_metrics), scope("POST", headers=FORM, server=at_metrics)]
    assert choices(metrics, scopes) == ["app"] * 4


def test_native_publish_can_be_turned_off() -> None:
    app = create_app(settings())
    runtime = runtime_of(app)

    async def run() -> str:
        async with app.router.lifespan_context(app):
            runtime.native_publish = False
            return entrance(runtime, scope("POST", headers=FORM), True).value

    assert asyncio.run(asyncio.wait_for(run(), 30)) == "lean publish"
    assert Entrance("lean publish") is Entrance.LEAN_PUBLISH
