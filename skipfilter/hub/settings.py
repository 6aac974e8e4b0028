"""Hub configuration: one dataclass, filled from code, CLI flags or the Go hub's env vars.

People moving from the Go Mercure hub keep their ``MERCURE_*_JWT_*`` environment variables.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, replace
from urllib.parse import urlsplit

from skipfilter.hub.keys import ALGORITHMS as _ALGORITHMS
from skipfilter.hub.keys import load_key
from skipfilter.hub.origins import OriginPolicy

#: Default seconds a process may take to drain on SIGTERM (``--shutdown-timeout``): room for
#: accepted publishes to be stored (each bounded by the transport's own timeouts) and for
#: a full socket to be reset (``--dispatch-timeout``, 5 s), and well inside the 30 s an
#: orchestrator such as Kubernetes waits before it sends SIGKILL.
SHUTDOWN_TIMEOUT = 10.0
#: Mercure protocol versions the hub can speak (``protocol_version``; each has a front end).
PROTOCOL_VERSIONS = ("0",)
#: RFC 6265 cookie-name characters (an HTTP token).
_COOKIE_NAME = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")


@dataclass(frozen=True, slots=True)
class HubSettings:
    """Everything a hub needs; immutable so one object can be shared by app and CLI.

    ``publisher_key``/``subscriber_key`` are an HMAC secret (HS*) or a PEM public key
    (RS*/PS*/ES*/EdDSA), checked here so a bad key fails at start-up. A role's JWK Set URL
    (``publisher_jwks_url``...) wins over its key, as in the Go hub. No publisher key nor
    URL means nobody can publish; none for subscribers means only anonymous subscribers,
    which then requires ``anonymous=True``.
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
    #: Updates kept for Last-Event-ID replay (older ones are trimmed).
    history_size: int = 100_000
    #: Subscription events kept for replay, apart from the updates: however many
    #: subscribers come and go, they never push updates out of the history.
    events_history_size: int = 10_000
    #: Updates kept in the shared in-memory ring; a subscriber further behind is disconnected.
    ring_size: int = 4096
    #: Bytes the ring may hold (the newest update always stays): what slow readers can cost.
    ring_bytes: int = 64 << 20
    cors_origins: tuple[str, ...] = ()
    #: Origins allowed to publish with the cookie (CSRF guard); ``"*"`` allows any.
    publish_origins: tuple[str, ...] = ()
    subscriptions: bool = False
    #: Subscriptions read per request of the subscriptions API (``next`` links the rest).
    subscriptions_page: int = 1000
    #: Seconds between heartbeat comments on idle streams; 0 disables them.
    heartbeat: float = 40.0
    #: Seconds a subscriber's socket may stay full (a write blocked) before it is dropped;
    #: 0 disables (Mercure's ``dispatch_timeout``).
    dispatch_timeout: float = 5.0
    #: Seconds a connection may take to send a request's line and headers (from its opening
    #: or its previous response) before it is closed; 0 disables (Go's ReadHeaderTimeout).
    header_timeout: float = 10.0
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
    #: JWK Set URLs for each role's keys (tokens name theirs by ``kid``); None: use the key.
    publisher_jwks_url: str | None = None
    subscriber_jwks_url: str | None = None
    #: Seconds between refetches of a JWK Set.
    jwks_refresh: float = 3600.0
    #: Least seconds between fetches caused by tokens with an unknown ``kid``.
    jwks_min_refresh: float = 30.0
    #: Seconds and bytes one JWK Set fetch may take.
    jwks_timeout: float = 5.0
    jwks_max_bytes: int = 256 << 10
    #: The Mercure version requests are read as: ``"0"`` (0.x, the only one served today).
    protocol_version: str = "0"

    def __post_init__(self) -> None:
        for name in ("publisher_alg", "subscriber_alg"):
            alg = getattr(self, name)
            if alg not in _ALGORITHMS:
                raise ValueError(f"{name} {alg!r} is not one of {sorted(_ALGORITHMS)}")
        self._check_auth()
        if self.protocol_version not in PROTOCOL_VERSIONS:
            raise ValueError(
                f"protocol_version {self.protocol_version!r} is not one of {PROTOCOL_VERSIONS}"
            )
        for name in ("max_selectors", "max_selector_length", "max_template_variables"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be at least 1, got {getattr(self, name)}")
        if self.ring_size < 1:
            raise ValueError("ring_size must be at least 1")
        if self.ring_bytes < 1:
            raise ValueError("ring_bytes must be at least 1")
        for name in ("dispatch_timeout", "write_timeout", "header_timeout"):
            if getattr(self, name) < 0:
                raise ValueError(f"{name} must be non-negative (0 disables it)")
        for name in ("max_topics", "max_replays", "events_history_size", "subscriptions_page"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be at least 1, got {getattr(self, name)}")
        if self.history_size < self.ring_size:
            raise ValueError("history_size must be at least ring_size")
        if self.heartbeat < 0:
            raise ValueError("heartbeat must be non-negative")
        if self.subscriber_key is None and not self.subscriber_jwks_url and not self.anonymous:
            raise ValueError(
                "no subscriber key nor JWK Set URL: set one or allow anonymous subscribers"
            )

    def _check_auth(self) -> None:
        """Keys, JWK Set URLs, publish origins and the cookie name, each named when bad."""
        for role in ("publisher", "subscriber"):
            url, key = getattr(self, f"{role}_jwks_url"), getattr(self, f"{role}_key")
            if url:
                parts = urlsplit(url)
                if parts.scheme not in ("http", "https") or not parts.hostname:
                    raise ValueError(f"{role}_jwks_url {url!r} must be an http(s) URL")
            elif key is not None:
                try:
                    load_key(key, getattr(self, f"{role}_alg"))
                except ValueError as exc:
                    raise ValueError(f"{role}_key: {exc}") from exc
        OriginPolicy(self.publish_origins)
        if not _COOKIE_NAME.fullmatch(self.cookie_name):
            raise ValueError(f"cookie_name {self.cookie_name!r} is not a valid cookie name")
        for name in ("jwks_refresh", "jwks_timeout", "jwks_max_bytes"):
            if getattr(self, name) <= 0:
                raise ValueError(f"{name} must be positive, got {getattr(self, name)}")
        if self.jwks_min_refresh < 0:
            raise ValueError("jwks_min_refresh must be non-negative")

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None, **overrides: object) -> HubSettings:
        """Read the Go hub's variables (``MERCURE_PUBLISHER_JWT_KEY``...), then apply overrides.

        ``MERCURE_JWT_KEY``/``MERCURE_JWT_ALG`` set both roles at once, as in the Go hub.
        ``MERCURE_PUBLISHER_JWKS_URL``/``MERCURE_SUBSCRIBER_JWKS_URL`` are this hub's names
        for the Go hub's ``publisher_jwks_url``/``subscriber_jwks_url`` directives.
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
            "publisher_jwks_url": env.get("MERCURE_PUBLISHER_JWKS_URL") or None,
            "subscriber_jwks_url": env.get("MERCURE_SUBSCRIBER_JWKS_URL") or None,
        }
        values.update({k: v for k, v in overrides.items() if v is not None})
        return cls(**values)  # type: ignore[arg-type]

    def with_changes(self, **changes: object) -> HubSettings:
        """A copy with some fields replaced (validated again)."""
        return replace(self, **changes)  # type: ignore[arg-type]
