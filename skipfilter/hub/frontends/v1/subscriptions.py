"""Active subscriptions as 1.0 names and describes them (draft-08 §8): topics, documents, ETags.

A subscription's topic, which is also its URL in the subscription API, is the hub path followed
by ``/subscriptions/{match_type}/{match}/{subscriber}``, each variable percent-encoded once as a
whole (RFC 6570 simple expansion: only unreserved characters stay). Documents are plain JSON
(``application/json``): ``type`` is ``subscription`` or ``subscriptions``. The subscriber id is
the hub's, never the client's. In compatibility mode 0.x subscriptions keep the 0.x shape,
``/subscriptions/{topic}/{subscriber}``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote, unquote

from skipfilter.hub.frontends.v1.errors import RequestError
from skipfilter.hub.frontends.v1.matchers import LEGACY, MATCH_TYPES, TopicMatcher
from skipfilter.hub.paths import HUB_PATH, SUBSCRIPTIONS_SEGMENT


def encode_segment(value: str) -> str:
    """One path segment, percent-encoded once (``%`` itself becomes ``%25``).

    >>> encode_segment("https://example.com/:id")
    'https%3A%2F%2Fexample.com%2F%3Aid'
    """
    return quote(value, safe="")


def subscriptions_path(hub_path: str = HUB_PATH) -> str:
    """The collection of every subscription."""
    return hub_path + SUBSCRIPTIONS_SEGMENT


def subscription_topic(matcher: TopicMatcher, subscriber: str, hub_path: str = HUB_PATH) -> str:
    """The topic (and API path) of one subscription.

    >>> subscription_topic(("https://example.com/:selector", "urlpattern"), "urn:uuid:1")
    '/.well-known/mercure/subscriptions/urlpattern/https%3A%2F%2Fexample.com%2F%3Aselector/urn%3Auuid%3A1'
    """
    value, match_type = matcher
    head = subscriptions_path(hub_path)
    if match_type == LEGACY:
        return f"{head}/{encode_segment(value)}/{encode_segment(subscriber)}"
    return (
        f"{head}/{encode_segment(match_type)}/{encode_segment(value)}/{encode_segment(subscriber)}"
    )


@dataclass(frozen=True, slots=True)
class SubscriptionPath:
    """What a subscription-API path asks for: everything (all None), one matcher's
    subscriptions (``subscriber`` None), or one subscription."""

    matcher: TopicMatcher | None = None
    subscriber: str | None = None


def parse_subscription_path(
    path: str, hub_path: str = HUB_PATH, compatibility: bool = False
) -> SubscriptionPath:
    """Read a subscription-API path as sent (still percent-encoded).

    Raises RequestError 400 for an unknown match type, a malformed escape or too many segments,
    404 for a path outside the API.
    """
    head = subscriptions_path(hub_path)
    if path == head:
        return SubscriptionPath()
    if not path.startswith(head + "/"):
        raise RequestError(404, f"{path[:100]!r} is not a subscription-API path")
    raw = path[len(head) + 1 :].split("/")
    if len(raw) > 3 or "" in raw:
        raise RequestError.bad_request(
            f"{path[:100]!r}: expected /subscriptions/{{match_type}}/{{match}}[/{{subscriber}}]"
        )
    segments = [_unquote(s) for s in raw]
    if segments[0] in MATCH_TYPES and len(segments) > 1:
        subscriber = segments[2] if len(segments) == 3 else None
        return SubscriptionPath((segments[1], segments[0]), subscriber)
    if compatibility and len(segments) <= 2:
        return SubscriptionPath((segments[0], LEGACY), segments[1] if len(segments) == 2 else None)
    raise RequestError.bad_request(
        f"unknown match type {segments[0][:40]!r} in {path[:100]!r} "
        f"(one of {', '.join(MATCH_TYPES)})"
    )


def _unquote(segment: str) -> str:
    try:
        return unquote(segment, errors="strict")
    except UnicodeDecodeError:
        raise RequestError.bad_request(f"path segment {segment[:60]!r} is not UTF-8") from None


def subscription_document(
    matcher: TopicMatcher,
    subscriber: str,
    active: bool,
    payload: Any = None,
    hub_path: str = HUB_PATH,
) -> dict[str, Any]:
    """The JSON of one subscription, in events and in the API (``payload`` only when set)."""
    value, match_type = matcher
    document: dict[str, Any] = {
        "id": subscription_topic(matcher, subscriber, hub_path),
        "type": "subscription",
        "subscriber": subscriber,
        "active": active,
    }
    if match_type == LEGACY:
        document["topic"] = value
    else:
        document["match_type"] = match_type
        document["match"] = value
    if payload is not None:
        document["payload"] = payload
    return document


def collection_document(url: str, subscriptions: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    """A collection: ``url`` is the path the client requested (no query)."""
    return {"id": url, "type": "subscriptions", "subscriptions": list(subscriptions)}


def etag(last_event_id: str) -> str:
    """The entity-tag of the API's answers: the cursor's UTF-8, with the bytes an ETag cannot
    hold (controls, space, ``"``, ``%``, non-ASCII) percent-encoded.

    >>> etag('urn:uuid:1 "x"')
    '"urn:uuid:1%20%22x%22"'
    """
    escaped = "".join(
        f"%{b:02X}" if b <= 0x20 or b >= 0x7F or b in b'"%' else chr(b)
        for b in last_event_id.encode("utf-8", "surrogatepass")
    )
    return f'"{escaped}"'


def not_modified(if_none_match: str | None, current: str) -> bool:
    """Whether an ``If-None-Match`` value matches ``current`` (RFC 9110 §13.1.2, weak
    comparison; ``*`` matches any)."""
    if not if_none_match:
        return False
    tags = [t.strip().removeprefix("W/") for t in if_none_match.split(",")]
    return "*" in tags or current in tags
