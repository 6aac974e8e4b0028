"""Where the hub answers: the Mercure paths, defined once for every module and front end.

The hub's URL is ``HUB_PATH`` on its origin; the subscriptions API and the topics of
subscription events live under ``SUBSCRIPTIONS_PATH``; no publisher may use a topic in the
hub's own namespace (``RESERVED_NAMESPACE``).
"""

from __future__ import annotations

#: The hub's URL path (Mercure's well-known URI).
HUB_PATH = "/.well-known/mercure"
#: What follows the hub path for the subscriptions API and subscription events.
SUBSCRIPTIONS_SEGMENT = "/subscriptions"
SUBSCRIPTIONS_PATH = HUB_PATH + SUBSCRIPTIONS_SEGMENT
#: Topics containing this are the hub's own (subscription events): publishers may not use it.
RESERVED_NAMESPACE = HUB_PATH
#: Paths probes and scrapers reach by address, not by name: served whatever the ``Host``
#: (``--public-urls`` answers 421 to any other path for an origin it does not list).
PROBE_PATHS = frozenset({"/livez", "/readyz", "/healthz", "/metrics"})
