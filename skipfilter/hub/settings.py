"""Hub configuration: one dataclass, filled from code, CLI flags or the Go hub's env vars.

People moving from the Go Mercure hub keep their ``MERCURE_*_JWT_*`` environment variables.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, replace

_ALGORITHMS = frozenset({"HS256", "HS384", "HS512", "RS256", "RS384", "RS512", "ES256", "ES384"})


@dataclass(frozen=True, slots=True)
class HubSettings:
    """Everything a hub needs; immutable so one object can be shared by app and CLI.

    ``publisher_key``/``subscriber_key`` are an HMAC secret (HS*) or a PEM public key
    (RS*/ES*). No publisher key means nobody can publish; no subscriber key means only
    anonymous subscribers, which then requires ``anonymous=True``.
    """

    publisher_key: str | None = None
    publisher_alg: str = "HS256"
    subscriber_key: str | None = None
    subscriber_alg: str = "HS256"
    anonymous: bool = False
    #: SQLite file of durable history; ``":memory:"`` keeps history only for this process.
    history_path: str = "skipfilter-hub.sqlite3"
    #: ``redis://HOST:PORT/DB``: share updates with other hub nodes through a Redis Stream
    #: (None: the SQLite history above, for one process).
    transport_url: str | None = None
    #: Seconds after which a silent node's subscriptions are announced ended (Redis only).
    node_ttl: float = 15.0
    #: Updates kept in SQLite for Last-Event-ID replay (older ones are trimmed).
    history_size: int = 100_000
    #: Updates kept in the shared in-memory ring; a subscriber further behind is disconnected.
    ring_size: int = 4096
    #: Bytes the ring may hold (the newest update always stays): what slow readers can cost.
    ring_bytes: int = 64 << 20
    cors_origins: tuple[str, ...] = ()
    #: Origins allowed to publish with the cookie (CSRF guard); ``"*"`` allows any.
    publish_origins: tuple[str, ...] = ()
    subscriptions: bool = False
    #: Seconds between heartbeat comments on idle streams; 0 disables them.
    heartbeat: float = 40.0
    #: Seconds a subscriber's socket may stay full (a write blocked) before it is dropped;
    #: 0 disables (Mercure's ``dispatch_timeout``).
    dispatch_timeout: float = 5.0
    #: Seconds a stream may stay open before the hub ends it (the client reconnects with
    #: Last-Event-ID); 0 disables (Mercure's ``write_timeout``).
    write_timeout: float = 600.0
    cookie_name: str = "mercureAuthorization"
    demo: bool = False
    #: Largest accepted POST body, in bytes (413 above).
    max_body: int = 1 << 20
    #: Topics per published update (Mercure's hub allows 1000).
    max_topics: int = 1000
    #: Replays (Last-Event-ID) running at once; more wait their turn, off the event loop.
    max_replays: int = 4
    #: Entries scanned back from the head for a Last-Event-ID the subscriber may see.
    resume_scan: int = 1000
    #: HOST:PORT where /metrics is served (None: not served at all).
    metrics_addr: str | None = None
    cache_size: int = 100_000
    #: Limits on what a subscriber may ask for, since selectors come from untrusted
    #: clients and a URI template is compiled on subscribe (a hostile 30-character
    #: template can take tens of ms to compile; matching is linear-time regardless).
    max_selectors: int = 64
    max_selector_length: int = 2048
    max_template_variables: int = 12

    def __post_init__(self) -> None:
        for name in ("publisher_alg", "subscriber_alg"):
            alg = getattr(self, name)
            if alg not in _ALGORITHMS:
                raise ValueError(f"{name} {alg!r} is not one of {sorted(_ALGORITHMS)}")
        for name in ("max_selectors", "max_selector_length", "max_template_variables"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be at least 1, got {getattr(self, name)}")
        if self.ring_size < 1:
            raise ValueError("ring_size must be at least 1")
        if self.ring_bytes < 1:
            raise ValueError("ring_bytes must be at least 1")
        for name in ("dispatch_timeout", "write_timeout"):
            if getattr(self, name) < 0:
                raise ValueError(f"{name} must be non-negative (0 disables it)")
        for name in ("max_topics", "max_replays"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be at least 1, got {getattr(self, name)}")
        if self.history_size < self.ring_size:
            raise ValueError("history_size must be at least ring_size")
        if self.heartbeat < 0:
            raise ValueError("heartbeat must be non-negative")
        if self.subscriber_key is None and not self.anonymous:
            raise ValueError("no subscriber key: set one or allow anonymous subscribers")

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None, **overrides: object) -> HubSettings:
        """Read the Go hub's variables (``MERCURE_PUBLISHER_JWT_KEY``...), then apply overrides.

        ``MERCURE_JWT_KEY``/``MERCURE_JWT_ALG`` set both roles at once, as in the Go hub.
        """
        env = os.environ if env is None else env
        shared_key = env.get("MERCURE_JWT_KEY") or None
        shared_alg = env.get("MERCURE_JWT_ALG") or "HS256"
        values: dict[str, object] = {
            "publisher_key": env.get("MERCURE_PUBLISHER_JWT_KEY") or shared_key,
            "publisher_alg": env.get("MERCURE_PUBLISHER_JWT_ALG") or shared_alg,
            "subscriber_key": env.get("MERCURE_SUBSCRIBER_JWT_KEY") or shared_key,
            "subscriber_alg": env.get("MERCURE_SUBSCRIBER_JWT_ALG") or shared_alg,
            "transport_url": env.get("MERCURE_TRANSPORT_URL") or None,
        }
        values.update({k: v for k, v in overrides.items() if v is not None})
        return cls(**values)  # type: ignore[arg-type]

    def with_changes(self, **changes: object) -> HubSettings:
        """A copy with some fields replaced (validated again)."""
        return replace(self, **changes)  # type: ignore[arg-type]
