"""Configuration mistakes found before the hub listens, each said in one line with its fix.

``skipfilter hub`` runs ``preflight(settings, addr)`` before its banner: the front end is built
(issuers and their keys), the transport URL is read by the one parser that opens transports,
and the hub's identity is settled. A hub that verifies tokens must know who it is: the token
audience and the RFC 9728 metadata never follow a request's ``Host``. Without
``--resource-identifier`` or ``--public-urls``, a listener reachable only from this machine
is ``http://localhost:PORT`` (and its address under its own name) whatever ``Host`` a request
names, and any other listener is refused. What the hub should say at start comes back as notes.
"""

from __future__ import annotations

import ipaddress
import sqlite3
from dataclasses import dataclass

from skipfilter.hub.paths import HUB_PATH
from skipfilter.hub.settings import DEV_KEY, HubSettings, has_keys


@dataclass(frozen=True, slots=True)
class Preflight:
    """The settings the hub runs with (identity settled) and the lines to say at start."""

    settings: HubSettings
    notes: tuple[str, ...]


def preflight(settings: HubSettings, addr: str, scheme: str = "http") -> Preflight:
    """Check what can be checked before listening on ``addr``; ValueError naming the
    mistake and its fix otherwise."""
    from skipfilter.hub.http.app import frontend_for
    from skipfilter.hub.transports import open_transport

    notes: list[str] = []
    _refuse_public_dev_key(settings, addr)
    settings, identity = _identity(settings, addr, scheme)
    if identity:
        notes.append(identity)
    frontend_for(settings)  # issuers without keys, keys without an issuer...
    try:
        transport = open_transport(settings)
    except sqlite3.Error as exc:
        raise ValueError(f"--history {settings.history_path!r}: {exc}") from None
    except ValueError as exc:
        raise ValueError(f"--transport: {exc}") from None
    close = getattr(transport, "close_now", None)
    if close is not None:
        close()
    unread = unread_subscriber_tokens(settings)
    if unread:
        notes.append(unread)
    return Preflight(settings, tuple(notes))


def verifies_tokens(settings: HubSettings) -> bool:
    """Whether the hub checks any token (some role of some issuer has keys)."""
    return has_keys(settings) or bool(settings.issuers)


def loopback_origins(addr: str, scheme: str = "http") -> tuple[str, ...] | None:
    """The origins of a listener on ``addr`` reachable only from this machine
    (``http://localhost:PORT`` and its address; ``https`` with TLS); None when other
    machines can reach it."""
    host, _, port = addr.rpartition(":")
    host = host.strip("[]")
    if host == "localhost":
        return tuple(f"{scheme}://{h}:{port}" for h in ("localhost", "127.0.0.1", "[::1]"))
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return None  # a name (or every interface): it may be reachable from elsewhere
    if not address.is_loopback:
        return None
    literal = f"[{address}]" if address.version == 6 else str(address)
    return (f"{scheme}://localhost:{port}", f"{scheme}://{literal}:{port}")


def _refuse_public_dev_key(settings: HubSettings, addr: str) -> None:
    """The development key is published (``--demo``, ``skipfilter token --dev``): anyone who
    reaches a hub holding it can mint its tokens, so only a loopback listener may hold it."""
    keys = [settings.publisher_key, settings.subscriber_key]
    keys += [k for i in settings.issuers for k in (i.publisher_key, i.subscriber_key)]
    if DEV_KEY in keys and loopback_origins(addr) is None:
        raise ValueError(
            f"--addr {addr} can be reached from other machines, and the development key "
            "(--demo's, skipfilter token --dev's) is public: listen on 127.0.0.1 or set "
            "MERCURE_PUBLISHER_JWT_KEY (or --publisher-jwt-key) to a secret of your own"
        )


def _identity(settings: HubSettings, addr: str, scheme: str) -> tuple[HubSettings, str | None]:
    if settings.resource_identifier or settings.public_urls or not verifies_tokens(settings):
        return settings, None
    origins = loopback_origins(addr, scheme)
    if origins is None:
        raise ValueError(
            f"--addr {addr} can be reached from other machines, so this hub must be told who "
            "it is (a token's audience never follows the request's Host): add "
            "--public-urls https://HUB.EXAMPLE (the origins clients use) or "
            "--resource-identifier https://HUB.EXAMPLE/.well-known/mercure"
        )
    return settings.with_changes(local_origins=origins), (
        f"identity {origins[0]}{HUB_PATH} (derived from the loopback --addr, never from a "
        f"request's Host; {origins[1]} answers as itself; a proxy or another name needs "
        "--public-urls or --resource-identifier)"
    )


def unread_subscriber_tokens(settings: HubSettings) -> str | None:
    """The warning for an anonymous hub without subscriber keys: a subscriber's token is
    read by nobody (it subscribes anonymously and no private update reaches it)."""
    subscriber = settings.subscriber_key or settings.subscriber_jwks_url
    others = any(i.subscriber_key or i.subscriber_jwks_url for i in settings.issuers)
    if not settings.anonymous or subscriber or others:
        return None
    return (
        "subscriber tokens will not be read (no subscriber key): every subscriber is "
        "anonymous and gets no private update; set MERCURE_SUBSCRIBER_JWT_KEY "
        "(or --subscriber-jwt-key, --subscriber-jwks-url) to read them"
    )
