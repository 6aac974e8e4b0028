"""What the Redis transport says when Redis refuses or fails an append, and the cluster's
history sizes: wording and decisions kept apart from the transport's moving parts."""

from __future__ import annotations

import logging
from typing import Any

from redis.asyncio.sentinel import MasterNotFoundError
from redis.exceptions import ResponseError

from skipfilter.hub.transports.redis import scripts as redis_scripts
from skipfilter.hub.transports.redis.entries import MAX_STREAM_ID

log = logging.getLogger("skipfilter.hub")


async def agree_on_sizes(
    client: Any, config: str, stream: str, keep: int, events_keep: int
) -> tuple[int, int]:
    """The history sizes in force: this node's, recorded unless the cluster keeps more (a
    mismatch is logged)."""
    script = client.register_script(redis_scripts.SIZES)
    theirs_keep, theirs_events = await script(keys=[config], args=[keep, events_keep])
    for name, mine, theirs in (
        ("history-size", keep, int(theirs_keep)),
        ("events-history-size", events_keep, int(theirs_events)),
    ):
        if theirs != mine:
            log.warning(
                "redis transport: --%s %d differs from the %d kept by the nodes sharing "
                "%s: this node keeps %d too (the largest wins; to lower it: "
                "redis-cli HSET %s %s %d)",
                name,
                mine,
                theirs,
                stream,
                theirs,
                config,
                name.replace("-", "_"),
                mine,
            )
    return int(theirs_keep), int(theirs_events)


def exhausted(stream: str) -> str:
    """Why nothing can be appended once an entry took the largest possible id."""
    return (
        f"the Redis stream {stream} has used the largest possible id {MAX_STREAM_ID} (an "
        "entry was added with it): Redis refuses every new entry, even after XDEL; to "
        f"repair it, XDEL that entry, then XSETID {stream} <the newest remaining id>"
    )


def unsent(exc: BaseException) -> bool:
    """Whether a pipeline failed before reaching Redis (no connection could be made or
    taken from the pool, no primary known): then nothing of it was stored."""
    text = str(exc)
    return (
        isinstance(exc, MasterNotFoundError)
        or text.startswith(
            (
                "Error 111 connecting",
                "Error connecting",
                "No connection available",
                "Timeout connecting",
            )
        )
        or " connecting to " in text
    )


def reason_of(exc: BaseException) -> str:
    """What Redis said, without the commands of a pipeline (they hold other publishers'
    updates, which one publisher's 503 must not show), nor the client a sentinel error
    describes. The transport scrubs its secrets from it (``RedisTarget.scrub``)."""
    text = str(exc)
    if isinstance(exc, MasterNotFoundError):  # not the repr of redis-py's client after it
        text = text.partition(" : <")[0]
    if isinstance(exc, ResponseError):
        text = text.rpartition("of pipeline caused error: ")[2]
        text = text.split(" script: ")[0]
    return text[:300]


def unreplicated(held: Any, replicas: int, timeout_ms: int) -> str:
    """Why a publish the primary stored is not acknowledged: too few replicas hold it."""
    said = reason_of(held) if isinstance(held, BaseException) else f"{held} of {replicas}"
    return (
        f"the update reached the Redis primary but {said} replicas confirmed it within "
        f"{timeout_ms} ms: it may or may not have been stored"
    )
