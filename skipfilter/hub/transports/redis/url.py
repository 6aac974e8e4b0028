"""Where the Redis transport's Redis is, from its URL: one server, or a Sentinel set.

``redis://HOST:PORT/DB`` (``rediss://`` for TLS, ``unix://``) names one server.
``redis+sentinel://[[USER]:PASSWORD@]H1:P1,H2:P2,H3:P3/SERVICE/DB`` (``rediss+sentinel://``
for TLS) names the sentinels that know which server is the primary of ``SERVICE``: every
connection asks them when it connects, so after a failover the next connection reaches
the new primary. The password is the data servers'; sentinels that want one of their own
take ``?sentinel_password=``. ``?replicas=N`` (Sentinel default 1, else 0) is how many
replicas must hold an entry before it is acknowledged or delivered, ``?replica_timeout=MS``
(default 1000) how long to wait for them; ``?prefix=`` keeps hubs apart in one Redis.

Parsing touches no network: a bad URL is a ValueError naming what is wrong, at start-up,
in words that never quote the URL's secrets. A password is shown nowhere: ``redacted``
gives the URL as it may be printed (``redis://:***@host:6379/0``), and a target's ``url``
is that; only ``connect_url`` (never printed) holds it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qs, quote, unquote, urlsplit, urlunsplit

import redis.asyncio as aioredis
from redis.asyncio.connection import BlockingConnectionPool, parse_url
from redis.asyncio.sentinel import Sentinel, SentinelConnectionPool

from skipfilter.hub.transports.shown import (
    HIDDEN,
    PARAMETERS,
    authority,
    parameters_only,
    redacted,
    without_userinfo,
)

#: URL schemes: one server, or a Sentinel set (TLS with ``rediss``).
PLAIN_SCHEMES = ("redis", "rediss", "unix")
SENTINEL_SCHEMES = ("redis+sentinel", "rediss+sentinel")
#: Query parameters the transport reads (a Sentinel URL refuses others: a typo is not ignored).
_KNOWN = PARAMETERS
#: Default replica confirmation timeout (ms), and the largest accepted.
REPLICA_TIMEOUT_MS, _MAX_TIMEOUT_MS = 1000, 60_000
_MAX_REPLICAS = 64
#: What a password must percent-encode to be read as one (else part of it is read as a host,
#: a port or a path): the URL is refused, and no part of it quoted.
_ENCODE = (
    "a password (or user) holding '/', '?', '#' or '@' must percent-encode it (%2F, %3F, %23, %40)"
)


@dataclass(frozen=True, slots=True)
class RedisTarget:
    """A parsed transport URL."""

    url: str  # as shown: without its query, the password replaced (``redacted``)
    prefix: str = "skipfilter"
    replicas: int = 0
    replica_timeout_ms: int = REPLICA_TIMEOUT_MS
    sentinels: tuple[tuple[str, int], ...] = ()
    service: str = ""
    db: int = 0
    username: str | None = None
    password: str | None = field(default=None, repr=False)
    sentinel_password: str | None = field(default=None, repr=False)
    tls: bool = False
    extra: dict[str, Any] = field(default_factory=dict)
    #: One server: the URL redis-py connects with (its password in it); never shown.
    connect_url: str = field(default="", repr=False)

    @property
    def sentinel(self) -> bool:
        return bool(self.sentinels)

    def scrub(self, text: str) -> str:
        """``text`` (a library's error message, say) with this target's secrets and any
        URL's userinfo replaced: what may be logged or answered."""
        for secret in (self.password, self.sentinel_password):
            if secret:
                for form in {secret, quote(secret, safe=""), quote(secret)}:
                    text = text.replace(form, HIDDEN)
        return without_userinfo(text)


def parse(url: str) -> RedisTarget:
    """The target a ``redis://``, ``rediss://``, ``unix://`` or ``redis+sentinel://`` URL
    names. Raises ValueError saying what is wrong."""
    try:
        parts = urlsplit(url)
    except ValueError:  # its words may quote the URL
        raise ValueError(f"transport URL {redacted(url)!r} is not a URL") from None
    if any(ord(c) < 32 or ord(c) == 127 for c in url):  # URL parsers drop some of them
        raise ValueError(
            f"transport URL {redacted(url)!r}: a control character (tab, newline...) must "
            "be percent-encoded"
        )
    scheme = parts.scheme.lower()
    if scheme not in PLAIN_SCHEMES + SENTINEL_SCHEMES:
        raise ValueError(f"unknown transport URL {redacted(url)!r}: use redis://HOST:PORT/DB")
    if _stray_at(url):
        raise ValueError(f"transport URL {redacted(url)!r}: {_ENCODE}")
    query = parse_qs(parts.query, keep_blank_values=True)
    sentinel = scheme in SENTINEL_SCHEMES
    unknown = sorted(set(query) - _KNOWN)
    if unknown and sentinel:  # plain URLs ignore the rest, as they always did
        raise ValueError(
            f"transport URL: unknown parameter {unknown[0]!r} (known: {', '.join(sorted(_KNOWN))})"
        )
    prefix = _one(query, "prefix", "") or "skipfilter"
    replicas = _integer(query, "replicas", 1 if sentinel else 0, 0, _MAX_REPLICAS)
    timeout = _integer(query, "replica_timeout", REPLICA_TIMEOUT_MS, 1, _MAX_TIMEOUT_MS)
    if not sentinel:
        if "sentinel_password" in query:
            raise ValueError("transport URL: sentinel_password needs redis+sentinel://")
        connect = urlunsplit(parts._replace(query=""))
        try:
            read = parse_url(connect)  # what redis-py will make of it, now rather than at start
        except ValueError:  # its words quote the part it could not read: maybe a secret's
            raise ValueError(
                f"transport URL {redacted(url)!r}: the host, port or database cannot be read "
                f"(redis://[[USER]:PASSWORD@]HOST:PORT/DB; {_ENCODE})"
            ) from None
        return RedisTarget(
            redacted(connect),
            prefix,
            replicas,
            timeout,
            password=read.get("password"),  # redis-py reads it from connect_url: for scrub
            connect_url=connect,
        )
    hosts = parts.netloc.rpartition("@")[2]
    sentinels = tuple(_address(item, url) for item in hosts.split(","))
    path = [p for p in parts.path.split("/") if p]
    if not path or len(path) > 2:
        raise ValueError(
            f"transport URL {redacted(url)!r}: name the service (and optionally the database): "
            "redis+sentinel://H1:P1,H2:P2,H3:P3/SERVICE/DB"
        )
    db = 0
    if len(path) == 2:
        if not path[1].isdigit() or int(path[1]) > 65535:
            raise ValueError(f"transport URL: database {path[1]!r} is not a number")
        db = int(path[1])
    username, password = None, None
    if "@" in parts.netloc:
        credentials = parts.netloc.rpartition("@")[0]
        user, has_password, secret = credentials.partition(":")
        username = unquote(user) or None
        password = unquote(secret) if has_password else unquote(user)
        if not has_password:
            username = None  # redis://PASSWORD@host is a bare password, as redis-py reads it
    return RedisTarget(
        redacted(url.partition("?")[0]),
        prefix,
        replicas,
        timeout,
        sentinels,
        unquote(path[0]),
        db,
        username,
        password or None,
        _one(query, "sentinel_password", "") or None,
        scheme.startswith("rediss"),
    )


def _stray_at(url: str) -> bool:
    """Whether an ``@`` stands outside the userinfo (a password holding ``/``, ``?`` or
    ``#``), other than in the value of a transport parameter (``?prefix=a@b``)."""
    rest = url.partition("://")[2]
    tail = rest[len(authority(rest)) :]
    return "@" in tail and not parameters_only(tail)


def _one(query: dict[str, list[str]], name: str, default: str) -> str:
    values = query.get(name)
    if values is None:
        return default
    if len(values) > 1:
        raise ValueError(f"transport URL: {name} is given {len(values)} times")
    return values[0]


def _integer(query: dict[str, list[str]], name: str, default: int, low: int, high: int) -> int:
    text = _one(query, name, str(default))
    if not text.isdigit() or not low <= int(text) <= high:
        raise ValueError(
            f"transport URL: {name}={text[:20]!r} is not a whole number in {low}..{high}"
        )
    return int(text)


def _address(item: str, url: str) -> tuple[str, int]:
    host, _, port = item.strip().rpartition(":")
    host = host.strip("[]")
    if not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise ValueError(
            f"transport URL {redacted(url)!r}: sentinel {item[:60]!r} is not HOST:PORT "
            "(redis+sentinel://H1:P1,H2:P2,H3:P3/SERVICE/DB)"
        )
    return host, int(port)


def sentinels(target: RedisTarget) -> Sentinel:
    """A client of the sentinels of ``target`` (which asks them for the primary)."""
    return Sentinel(  # type: ignore[no-untyped-call]
        list(target.sentinels),
        sentinel_kwargs={
            "socket_connect_timeout": 1,
            "socket_timeout": 1,
            "password": target.sentinel_password,
            "ssl": target.tls,
        },
    )


class _BlockingSentinelPool(SentinelConnectionPool, BlockingConnectionPool):
    """Connections to the primary Sentinel names, bounded: a request finding every one
    busy waits ``timeout`` seconds, then fails, as with one server."""


def client(target: RedisTarget, size: int, wait: float, decode: bool, socket_timeout: float) -> Any:
    """A client with a pool of at most ``size`` connections to the (current) primary."""
    options: dict[str, Any] = {
        "max_connections": size,
        "timeout": wait,
        "decode_responses": decode,
        "socket_connect_timeout": 2,
        "socket_timeout": socket_timeout,
    }
    if not target.sentinel:
        pool = aioredis.BlockingConnectionPool.from_url(target.connect_url, **options)
        return aioredis.Redis(connection_pool=pool)
    sentinel = sentinels(target)
    options.update(db=target.db, username=target.username, password=target.password)
    if target.tls:
        options["ssl"] = True
    return sentinel.master_for(
        target.service, connection_pool_class=_BlockingSentinelPool, **options
    )
