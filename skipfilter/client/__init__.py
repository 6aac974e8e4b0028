"""A Mercure client for Python programs: publish, subscribe, discover (the ``client`` extra:
httpx and PyJWT; it never imports the hub). Speaks Mercure 1.0, and 0.x with ``legacy=True``.

- :class:`Publisher`, :class:`AsyncPublisher` -- ``publish(topics, data, ...)`` -> the id.
- :func:`subscribe` -> :class:`Subscription`: ``for`` / ``async for`` :class:`Update`,
  reconnecting and resuming as EventSource does, reporting gaps.
- :func:`discover`, :func:`discover_async` -> :class:`Discovery` (``Link: rel="mercure"``).
- :class:`TokenMinter` -- tokens from a key, renewed before they expire.
- :class:`EventStreamParser`, :class:`Event` -- the ``text/event-stream`` parser.
- Errors: :class:`MercureError` and its subclasses (``errors.py``).
"""

import skipfilter.client._extra  # noqa: F401 - first: names the extra when one is missing
from skipfilter.client.auth import TokenMinter
from skipfilter.client.discovery import Discovery, discover, discover_async
from skipfilter.client.errors import (
    BadAnswer,
    DiscoveryFailed,
    Forbidden,
    InvalidRequest,
    MercureError,
    NotEventStream,
    OverLimit,
    Refused,
    TooLarge,
    Unauthorized,
    Unavailable,
    Unreachable,
)
from skipfilter.client.publisher import AsyncPublisher, Publisher
from skipfilter.client.sse import Event, EventStreamParser
from skipfilter.client.subscriber import Subscription, Update, subscribe

__all__ = [
    "AsyncPublisher",
    "BadAnswer",
    "Discovery",
    "DiscoveryFailed",
    "Event",
    "EventStreamParser",
    "Forbidden",
    "InvalidRequest",
    "MercureError",
    "NotEventStream",
    "OverLimit",
    "Publisher",
    "Refused",
    "Subscription",
    "TokenMinter",
    "TooLarge",
    "Unauthorized",
    "Unavailable",
    "Unreachable",
    "Update",
    "discover",
    "discover_async",
    "subscribe",
]
