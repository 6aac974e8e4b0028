"""Hub configuration: one dataclass, filled from code, CLI flags or the Go hub's env vars.

People moving from the Go Mercure hub keep their ``MERCURE_*_JWT_*`` environment variables.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Literal
from urllib.parse import urlsplit

from skipfilter.hub.keys import ALGORITHMS as _ALGORITHMS
from skipfilter.hub.keys import load_key
from skipfilter.hub.origins import OriginPolicy
from skipfilter.hub.paths import HUB_PATH

#: Default seconds a process may take to drain on SIGTERM (``--shutdown-timeout``): room for
#: accepted publishes to be stored (each bounded by the transport's own timeouts) and for
#: a full socket to be reset (``--dispatch-timeout``, 5 s), and well inside the 30 s an
#: orchestrator such as Kubernetes waits before it sends SIGKILL.
SHUTDOWN_TIMEOUT = 10.0
#: ``protocol_version_compatibility`` values: 8 serves Mercure 0.x (draft 8) beside 1.0.
COMPATIBILITY_VERSIONS = (8,)
#: The issuer a ``--demo`` hub trusts its keys for when none is named (``skipfilter token
#: --dev`` mints tokens of it).
DEMO_ISSUER = "https://localhost"
#: The development key: public on purpose (documented, printed by ``make run``), so a
#: ``--demo`` hub and ``skipfilter token --dev`` agree with no set-up, as the Go hub's
#: playground key does. A hub holding it refuses to listen anywhere but on loopback.
DEV_KEY = "!ChangeMe-skipfilter-development-key-loopback-only!"
#: The cookie a ``--demo`` hub sets and reads unless configured: no ``__Secure-`` prefix, so
#: it works over plain HTTP from any address (as the Go hub's playground does).
DEMO_COOKIE = "mercure_access_token"
#: The cookie a 1.0 token is read from unless configured (draft-08 §6.1).
DEFAULT_COOKIE = "__Secure-mercure_access_token"
#: The hub path URL Patterns resolve against when no resource identifier ending in it is
#: pinned: one fixed base for every request, as the Go hub's ``http://mercure.invalid``.
FALLBACK_BASE_URL = "http://mercure.invalid" + HUB_PATH
#: RFC 6265 cookie-name characters (an HTTP token).
_COOKIE_NAME = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")
#: The roles a token is checked for, each with keys of its own (``role_keys``).
Role = Literal["publisher", "subscriber"]
ROLES: tuple[Role, ...] = ("publisher", "subscriber")


@dataclass(frozen=True, slots=True)
class HubSettings:
    """Everything a hub needs; immutable so one object can be shared by app and CLI.

    ``publisher_key``/``subscriber_key`` are an HMAC secret (HS*) or a PEM public key
    (RS*/PS*/ES*/EdDSA), checked here so a bad key fails at start-up. A role's JWK Set URL
    (``publisher_jwks_url``...) wins over its key, as in the Go hub. No publisher key nor
    URL means nobody can publish; none for subscribers means only anonymous subscribers,
    which then requires ``anonymous=True``. In Mercure 1.0 mode these keys belong to the
    one issuer of ``trusted_issuers`` (tokens name it in ``iss``); ``issuers`` adds issuers
    with keys of their own.
    """

    publisher_key: str | None = None
    publisher_alg: str = "HS256"
    subscriber_key: str | None = None
    subscriber_alg: str = "HS256"
    anonymous: bool = False
    #: SQLite file of durable history; ``":memory:"`` keeps history only for this process.
    history_path: str = "skipfilter-hub.sqlite3"
    #: ``redis://HOST:PORT/DB``: share updates with other hub nodes through a Redis Stream
    #: (None: the SQLite history above).
    transport_url: str | None = None
    #: Several worker processes share the SQLite history (``--workers N`` without a
    #: ``--transport``): each follows the file and delivers every worker's updates.
    history_shared: bool = False
    #: Seconds after which a silent node's subscriptions are announced ended (Redis); local
    #: workers on one SQLite file look for killed ones every third of it.
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
    #: Seconds a request's body may take to arrive, from the moment the hub starts on the
    #: request; a 408 then (a response already begun: the connection is closed). 0 disables.
    body_timeout: float = 10.0
    #: Largest request head (request line and header fields), in bytes; 431 past it. Go's
    #: ``http.DefaultMaxHeaderBytes`` (the Go Mercure hub's): room for draft-08's largest
    #: subscription in the URL (100 matchers of up to 4096 bytes, partly percent-encoded).
    max_head_bytes: int = 1 << 20
    #: Most header fields in one request (Apache's ``LimitRequestFields``); 431 past it.
    max_header_fields: int = 100
    #: Seconds a stream may stay open before the hub ends it (the client reconnects with
    #: Last-Event-ID); 0 disables (Mercure's ``write_timeout``).
    write_timeout: float = 600.0
    #: The cookie a token may come in (compatibility mode also reads 0.x's
    #: ``mercureAuthorization`` when this one is absent).
    cookie_name: str = DEFAULT_COOKIE
    demo: bool = False
    #: Largest accepted POST body, in bytes (413 above).
    max_body: int = 1 << 20
    #: Topics per published update (Mercure's hub allows 1000).
    max_topics: int = 1000
    #: Longest published topic, in UTF-8 bytes (400 past it): every subscriber's URL Pattern
    #: is matched against it, in time about its length times the pattern's matching cost
    #: (``docs/hub.md``, "What one request can cost"). As long as a selector may be.
    max_topic_length: int = 4096
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
    max_selectors: int = 100
    max_selector_length: int = 4096
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
    #: None: Mercure 1.0 only (the default, as in the Go hub); 8: 1.0 and 0.x side by side
    #: on the same endpoints (the Go hub's ``protocol_version_compatibility 8``).
    protocol_version_compatibility: int | None = None
    #: Issuers whose tokens are trusted (the exact ``iss``): with one, the publisher and
    #: subscriber keys above are its keys.
    trusted_issuers: tuple[str, ...] = ()
    #: Issuers with keys of their own (``--issuers-file``), beside ``trusted_issuers``.
    issuers: tuple[IssuerSettings, ...] = ()
    #: The resource identifier tokens must hold in ``aud`` (None: derived per request from
    #: its origin + the hub path); one ending in the hub path is also the URL Pattern base.
    resource_identifier: str | None = None
    #: Origins (scheme://host[:port]) the hub answers on; any other gets 421 (empty: any).
    public_urls: tuple[str, ...] = ()
    #: The hub's own origins when neither of the two above is set (``skipfilter hub`` sets
    #: them for a loopback listener): each is its identity under that name, and any other
    #: ``Host`` gets the first one's, never its own (empty: derived from any ``Host``).
    local_origins: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        for name in ("publisher_alg", "subscriber_alg"):
            alg = getattr(self, name)
            if alg not in _ALGORITHMS:
                raise ValueError(f"{name} {alg!r} is not one of {sorted(_ALGORITHMS)}")
        self._check_auth()
        self._check_protocol()
        for name in ("max_selectors", "max_selector_length", "max_template_variables"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be at least 1, got {getattr(self, name)}")
        if self.ring_size < 1:
            raise ValueError("ring_size must be at least 1")
        if self.ring_bytes < 1:
            raise ValueError("ring_bytes must be at least 1")
        for name in ("dispatch_timeout", "write_timeout", "header_timeout", "body_timeout"):
            if getattr(self, name) < 0:
                raise ValueError(f"{name} must be non-negative (0 disables it)")
        for name in ("max_head_bytes", "max_header_fields"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be at least 1, got {getattr(self, name)}")
        for name in (
            "max_topics",
            "max_topic_length",
            "max_replays",
            "events_history_size",
            "subscriptions_page",
        ):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be at least 1, got {getattr(self, name)}")
        if self.history_size < self.ring_size:
            raise ValueError("history_size must be at least ring_size")
        if self.heartbeat < 0:
            raise ValueError("heartbeat must be non-negative")
        if (
            self.subscriber_key is None
            and not self.subscriber_jwks_url
            and not any(i.subscriber_key or i.subscriber_jwks_url for i in self.issuers)
            and not self.anonymous
        ):
            raise ValueError(
                "no subscriber key nor JWK Set URL: set MERCURE_SUBSCRIBER_JWT_KEY (or "
                "--subscriber-jwt-key, --subscriber-jwks-url), or allow anonymous subscribers "
                "(--anonymous; anonymous=True in HubSettings)"
            )

    def _check_auth(self) -> None:
        """Keys, JWK Set URLs, publish origins and the cookie name, each named when bad."""
        check_role_keys(self, "")
        OriginPolicy(self.publish_origins)
        if not _COOKIE_NAME.fullmatch(self.cookie_name):
            raise ValueError(f"cookie_name {self.cookie_name!r} is not a valid cookie name")
        for name in ("jwks_refresh", "jwks_timeout", "jwks_max_bytes"):
            if getattr(self, name) <= 0:
                raise ValueError(f"{name} must be positive, got {getattr(self, name)}")
        if self.jwks_min_refresh < 0:
            raise ValueError("jwks_min_refresh must be non-negative")

    def _check_protocol(self) -> None:
        """The protocol mode, the issuers and the hub's identity, each named when bad."""
        version = self.protocol_version_compatibility
        if version is not None and version not in COMPATIBILITY_VERSIONS:
            raise ValueError(
                f"protocol_version_compatibility {version!r} is not supported: leave it unset "
                "for Mercure 1.0 only, or 8 to serve Mercure 0.x clients beside 1.0 ones"
            )
        for issuer in self.trusted_issuers:
            if not issuer or any(c.isspace() for c in issuer):
                raise ValueError(f"issuer {issuer!r} must be a non-empty string without spaces")
        named = [*self.trusted_issuers, *(i.issuer for i in self.issuers)]
        twice = sorted({i for i in named if named.count(i) > 1})
        if twice:
            raise ValueError(f"issuer {twice[0]!r} is configured more than once")
        top_level = has_keys(self)
        if top_level and not self.trusted_issuers and not (self.demo or self.compatibility):
            raise ValueError(
                "the publisher/subscriber keys need the issuer whose tokens they check: "
                "--issuer URL (the exact 'iss' of the tokens; env MERCURE_TRUSTED_ISSUERS), "
                "or --protocol-version-compatibility 8 for 0.x tokens that name none"
            )
        if len(self.trusted_issuers) > 1 and top_level:
            raise ValueError(
                f"{len(self.trusted_issuers)} issuers share the publisher/subscriber keys: a key "
                "belongs to one issuer; give each issuer its keys in an issuers file"
            )
        if self.resource_identifier is not None:
            parts = urlsplit(self.resource_identifier)
            if parts.scheme not in ("http", "https") or not parts.hostname or parts.fragment:
                raise ValueError(
                    f"resource_identifier {self.resource_identifier!r} must be an absolute "
                    "http(s) URL without a fragment, e.g. https://hub.example.com/.well-known/mercure"
                )
        for url in self.public_urls:
            parts = urlsplit(url)
            if parts.scheme not in ("http", "https") or not parts.hostname:
                raise ValueError(
                    f"public URL {url!r} must be an absolute http(s) URL like https://hub.example.com"
                )

    @property
    def compatibility(self) -> bool:
        """Whether Mercure 0.x clients are served beside 1.0 ones."""
        return self.protocol_version_compatibility is not None

    @property
    def pattern_base_url(self) -> str:
        """What relative URL Patterns and topics resolve against: the pinned resource
        identifier when it is a hub URL, else one fixed base (never per request, so a
        relative pattern matches a relative topic whichever name each came through)."""
        pinned = self.resource_identifier
        if pinned is not None and urlsplit(pinned).path.endswith(HUB_PATH):
            return pinned
        return FALLBACK_BASE_URL

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
            "trusted_issuers": tuple(env.get("MERCURE_TRUSTED_ISSUERS", "").split()) or None,
            "protocol_version_compatibility": _int_or_none(
                env.get("MERCURE_PROTOCOL_VERSION_COMPATIBILITY"),
                "MERCURE_PROTOCOL_VERSION_COMPATIBILITY",
            ),
        }
        values.update({k: v for k, v in overrides.items() if v is not None})
        return cls(**{k: v for k, v in values.items() if v is not None})  # type: ignore[arg-type]

    def with_changes(self, **changes: object) -> HubSettings:
        """A copy with some fields replaced (validated again)."""
        return replace(self, **changes)  # type: ignore[arg-type]


@dataclass(frozen=True, slots=True)
class RoleKeys:
    """What checks one role's tokens: a JWK Set URL (which wins), else a key (an HMAC secret
    or a PEM public key) with its algorithm; neither: the role takes no tokens."""

    key: str | None
    alg: str
    jwks_url: str | None

    @property
    def configured(self) -> bool:
        """Whether it holds a key or a JWK Set URL."""
        return bool(self.key or self.jwks_url)


def role_keys(owner: HubSettings | IssuerSettings, role: Role) -> RoleKeys:
    """The keys of ``role`` in the settings (or an issuer), each field read by its name."""
    if role == "publisher":
        return RoleKeys(owner.publisher_key, owner.publisher_alg, owner.publisher_jwks_url)
    return RoleKeys(owner.subscriber_key, owner.subscriber_alg, owner.subscriber_jwks_url)


def has_keys(owner: HubSettings | IssuerSettings) -> bool:
    """Whether the settings (or an issuer) hold a key or a JWK Set URL for some role."""
    return any(role_keys(owner, role).configured for role in ROLES)


def check_role_keys(owner: HubSettings | IssuerSettings, where: str) -> None:
    """Each role's JWK Set URL is http(s) or a local file:// one, else its key fits its
    algorithm (ValueError prefixed with ``where`` otherwise): a bad key fails at start-up,
    not at a request."""
    for role in ROLES:
        keys = role_keys(owner, role)
        url, key = keys.jwks_url, keys.key
        if url:
            parts = urlsplit(url)
            if parts.scheme == "file":
                if parts.netloc not in ("", "localhost") or not parts.path:
                    raise ValueError(
                        f"{where}{role}_jwks_url {url!r}: a file:// URL names a file of this "
                        "machine (file:///path/to/jwks.json)"
                    )
            elif parts.scheme not in ("http", "https") or not parts.hostname:
                raise ValueError(
                    f"{where}{role}_jwks_url {url!r} must be an http(s) URL or a file:// one"
                )
        elif key is not None:
            try:
                load_key(key, keys.alg)
            except ValueError as exc:
                raise ValueError(f"{where}{role}_key: {exc}") from exc


def _int_or_none(text: str | None, name: str) -> int | None:
    if not text:
        return None
    try:
        return int(text)
    except ValueError:
        raise ValueError(f"{name} must be a number (8), got {text!r}") from None


@dataclass(frozen=True, slots=True)
class IssuerSettings:
    """One trusted issuer with keys of its own: its exact ``iss``, and per role a key
    (HMAC secret or PEM public key, with its algorithm) or a JWK Set URL (which wins)."""

    issuer: str
    publisher_key: str | None = None
    publisher_alg: str = "HS256"
    publisher_jwks_url: str | None = None
    subscriber_key: str | None = None
    subscriber_alg: str = "HS256"
    subscriber_jwks_url: str | None = None
    #: Advertise it as an authorization server in the protected resource metadata.
    authorization_server: bool = False

    def __post_init__(self) -> None:
        if not isinstance(self.issuer, str) or not self.issuer.strip():
            raise ValueError("an issuer needs a non-empty 'issuer' (the exact iss of its tokens)")
        where = f"issuer {self.issuer!r}"
        if not has_keys(self):
            raise ValueError(f"{where} has neither publisher nor subscriber keys")
        for role in ROLES:
            alg = role_keys(self, role).alg
            if alg not in _ALGORITHMS:
                raise ValueError(f"{where}: {role}_alg {alg!r} is not one of {sorted(_ALGORITHMS)}")
        check_role_keys(self, f"{where}: ")


#: The members an issuers file entry may have.
_ISSUER_FIELDS = frozenset(IssuerSettings.__dataclass_fields__)


def read_issuers_file(path: str) -> tuple[IssuerSettings, ...]:
    """The issuers of a JSON file: ``{"issuers": [{"issuer": URL, "publisher_key": ...,
    "subscriber_jwks_url": ..., ...}, ...]}`` (or the list alone). A key starting with
    ``@`` is read from that file. Raises ValueError naming the file and the problem."""
    import json
    from pathlib import Path

    try:
        document = json.loads(Path(path).read_text())
    except (OSError, ValueError) as exc:
        raise ValueError(f"issuers file {path!r}: {exc}") from None
    entries = document.get("issuers") if isinstance(document, dict) else document
    if not isinstance(entries, list) or not entries:
        raise ValueError(f'issuers file {path!r}: expected {{"issuers": [{{...}}, ...]}}')
    found = []
    for i, entry in enumerate(entries):
        if not isinstance(entry, dict):
            raise ValueError(f"issuers file {path!r}: entry {i} is not an object")
        unknown = sorted(set(entry) - _ISSUER_FIELDS)
        if unknown:
            raise ValueError(
                f"issuers file {path!r}: entry {i} has unknown member {unknown[0]!r} "
                f"(known: {', '.join(sorted(_ISSUER_FIELDS))})"
            )
        values = dict(entry)
        for name in ("publisher_key", "subscriber_key"):
            key = values.get(name)
            if isinstance(key, str) and key.startswith("@"):
                try:
                    values[name] = (Path(path).parent / key[1:]).read_text()
                except OSError as exc:
                    raise ValueError(f"issuers file {path!r}: entry {i}: {exc}") from None
        try:
            found.append(IssuerSettings(**values))
        except (TypeError, ValueError) as exc:
            raise ValueError(f"issuers file {path!r}: entry {i}: {exc}") from None
    return tuple(found)
