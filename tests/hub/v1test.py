"""Helpers for the Mercure 1.0 hub tests: settings of a 1.0 hub, access tokens for it,
subscribe queries (``match=``, ``match_urlpattern=``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal
from urllib.parse import urlencode

from skipfilter.hub import HubSettings
from skipfilter.hub.frontends.v1.access_tokens import mint_access_token
from tests.hub.hubtest import HUB, PUBLISHER_KEY, SUBSCRIBER_KEY, Server

ISSUER = "https://issuer.example"


def v1_settings(tmp_path: Path, **changes: Any) -> HubSettings:
    """A Mercure 1.0 hub (no compatibility) trusting ``ISSUER`` with the test keys."""
    values: dict[str, Any] = {
        "publisher_key": PUBLISHER_KEY,
        "subscriber_key": SUBSCRIBER_KEY,
        "trusted_issuers": (ISSUER,),
        "anonymous": True,
        "history_path": str(tmp_path / "history.sqlite3"),
        "heartbeat": 0,
        "ring_size": 64,
        "history_size": 1000,
    }
    values.update(changes)
    return HubSettings(**values)


def audience(server: Server) -> str:
    """The resource identifier the hub derives for requests to ``server.url``."""
    return server.url + HUB


def _token(
    server: Server,
    action: Literal["publish", "subscribe"],
    key: str,
    topics: tuple[str, ...],
    **kw: Any,
) -> str:
    """A 1.0 access token granting ``action`` on exact ``topics`` and ``urlpatterns``."""
    urlpatterns: tuple[str, ...] = kw.pop("urlpatterns", ())
    grants = [(t, "exact") for t in topics] + [(p, "urlpattern") for p in urlpatterns]
    return mint_access_token(
        kw.pop("issuer", ISSUER),
        kw.pop("audience", audience(server)),
        kw.pop("key", key),
        publish=grants if action == "publish" else (),
        subscribe=grants if action == "subscribe" else (),
        **kw,
    )


def publisher(server: Server, *topics: str, **kw: Any) -> str:
    """A 1.0 publisher access token for ``server`` (default: every topic)."""
    if not topics and not kw.get("urlpatterns"):
        topics = ("*",)
    return _token(server, "publish", PUBLISHER_KEY, topics, **kw)


def subscriber(server: Server, *topics: str, **kw: Any) -> str:
    """A 1.0 subscriber access token granting ``subscribe`` on ``topics``/``urlpatterns``."""
    return _token(server, "subscribe", SUBSCRIBER_KEY, topics, **kw)


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def publish(server: Server, topics: str | list[str], token: str, **fields: Any) -> Any:
    """POST a 1.0 update (``data`` defaults to "hello")."""
    fields.setdefault("data", "hello")
    form = [("topic", t) for t in ([topics] if isinstance(topics, str) else topics)]
    form += [(k, str(v)) for k, v in fields.items()]
    headers = {**bearer(token), "Content-Type": "application/x-www-form-urlencoded"}
    with server.client() as client:
        return client.post(HUB, content=urlencode(form).encode(), headers=headers)
