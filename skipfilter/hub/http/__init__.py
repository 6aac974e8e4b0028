"""The hub as an ASGI application: routes, health probes, the ASGI stream, the subscriptions
API, the demo page, and the embedding in a host's lifespan (``embed``)."""
