"""Where a hub's updates live: SQLite (embedded, the default) or Redis (several nodes).

``open_transport(settings)`` picks one from ``settings.transport_url``; the Redis one is
imported only when asked for, and its absence names the extra to install.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from skipfilter.hub.transports.base import Position, Transport, TransportUnavailable
from skipfilter.hub.transports.shown import redacted
from skipfilter.hub.transports.sqlite import SqliteTransport

if TYPE_CHECKING:
    from skipfilter.hub.settings import HubSettings

__all__ = [
    "Position",
    "SqliteTransport",
    "Transport",
    "TransportUnavailable",
    "open_transport",
    "redacted",
]


def open_transport(settings: HubSettings) -> Transport:
    """The transport ``settings`` ask for: Redis for a ``redis://`` URL (or a Sentinel set's,
    ``redis+sentinel://``), else SQLite (shared by the workers with ``history_shared``). A
    URL that names neither is a ValueError."""
    url = settings.transport_url
    if url and url.startswith(
        ("redis://", "rediss://", "unix://", "redis+sentinel://", "rediss+sentinel://")
    ):
        try:
            from skipfilter.hub.transports.redis.transport import RedisTransport
        except ImportError as exc:  # pragma: no cover - depends on what is installed
            from skipfilter.extras import missing

            raise ImportError(
                missing(f"the Redis transport needs {exc.name or 'redis'}", "redis")
            ) from exc
        return RedisTransport(url, settings.history_size, settings.events_history_size)
    if url and not url.startswith("sqlite://"):
        raise ValueError(
            f"unknown transport URL {redacted(url)!r}: use redis://HOST:PORT/DB or "
            "redis+sentinel://H1:P1,H2:P2,H3:P3/SERVICE/DB"
        )
    path = url[len("sqlite://") :] if url else settings.history_path
    if settings.history_shared:  # several workers, one file
        from skipfilter.hub.transports.sqlite_shared import SharedSqliteTransport

        return SharedSqliteTransport(path, settings.history_size, settings.events_history_size)
    return SqliteTransport(path, settings.history_size, settings.events_history_size)
