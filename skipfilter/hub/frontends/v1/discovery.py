"""How clients find the hub and what it expects: RFC 9728 metadata and the Link header.

The protected resource metadata (draft-08 §9.2) names the resource identifier clients put in
``aud``, the only RFC 6750 method accepted (``header``; the cookie has its own member), the
authorization detail type, and optionally the authorization servers and the active-subscription
feature. The ``rel="mercure"`` Link header (RFC 8288) points at the hub and, on the subscription
API, carries the reconciliation cursor (§8.2).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from skipfilter.hub.frontends.v1.errors import quoted
from skipfilter.hub.frontends.v1.grants import MERCURE_DETAIL
from skipfilter.hub.frontends.v1.identity import HubIdentity
from skipfilter.hub.frontends.v1.matchers import MATCH_TYPES

#: The media type of subscription events and of the subscription API's documents.
JSON = "application/json"
#: The SSE event type of hub-generated events (subscription events), reserved to the hub.
MERCURE_EVENT = "mercure"


def protected_resource_metadata(
    identity: HubIdentity,
    cookie_name: str | None = None,
    authorization_servers: Iterable[str] = (),
    subscriptions: bool = False,
    matcher_types: Iterable[str] = MATCH_TYPES,
) -> dict[str, Any]:
    """The RFC 9728 document for ``identity`` (serve it as ``application/json``).

    ``cookie_name`` is advertised as ``mercure_cookie`` (None: no cookie authentication);
    ``mercure_matcher_types_supported`` appears only when the types differ from the two the
    protocol defines, ``mercure_subscriptions`` only when the feature is on.
    """
    document: dict[str, Any] = {
        "resource": identity.resource,
        "bearer_methods_supported": ["header"],
        "authorization_details_types_supported": [MERCURE_DETAIL],
    }
    servers = list(authorization_servers)
    if servers:
        document["authorization_servers"] = servers
    if cookie_name:
        document["mercure_cookie"] = cookie_name
    types = list(matcher_types)
    if sorted(types) != sorted(MATCH_TYPES):
        document["mercure_matcher_types_supported"] = types
    if subscriptions:
        document["mercure_subscriptions"] = True
    return document


def hub_link(target: str, **attributes: str | None) -> str:
    """A ``Link`` value pointing at the hub, with target attributes (``None`` ones left out;
    ``_`` in a name becomes ``-``).

    >>> hub_link("/.well-known/mercure")
    '</.well-known/mercure>; rel="mercure"'
    >>> hub_link("/.well-known/mercure", last_event_id='a"b', type=None)
    '</.well-known/mercure>; rel="mercure"; last-event-id="a\\\\"b"'
    """
    parts = [f"<{target}>", 'rel="mercure"']
    parts += [f"{k.replace('_', '-')}={quoted(v)}" for k, v in attributes.items() if v is not None]
    return "; ".join(parts)


def subscriptions_link(target: str, last_event_id: str) -> str:
    """The Link header every subscription-API response carries: the cursor to subscribe from,
    and the type and content type of subscription events (draft-08 §8.2)."""
    return hub_link(target, last_event_id=last_event_id, type=MERCURE_EVENT, content_type=JSON)
