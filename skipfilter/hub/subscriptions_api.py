"""Pages of the subscriptions API: bounded work per request, JSON off the event loop.

A hub may hold tens of thousands of subscriptions (1,000 subscribers of 64 selectors on two
nodes: 64,000, a 19 MiB document). A request reads at most ``limit`` recorded
subscriptions (this hub's streams, or every node's records in Redis), and the collection
says where the rest is: ``next``, the same URL with ``?after=CURSOR`` (also a
``Link: <...>; rel="next"`` header). With a topic filter a page may hold fewer entries than
that, never more work. Parsing and encoding run in a worker thread, so concurrent calls
never hold up the loop (streams, publishes, ``/healthz``).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from skipfilter.hub.hub import Hub, subscription_doc


class InvalidCursor(ValueError):
    """An ``after`` the hub did not hand out."""


@dataclass(frozen=True, slots=True)
class Page:
    """Subscription documents (without ``@context``) and the cursor of the rest."""

    docs: list[dict[str, Any]]
    after: str | None


async def page(
    hub: Hub, topic: str | None, subscriber: str | None, after: str | None, limit: int
) -> Page:
    """Active subscriptions (of every node when they share Redis), optionally only those of
    one selector (``topic``) and/or ``subscriber``, from cursor ``after``."""
    presence = hub.presence
    if presence is not None:
        if topic is not None and subscriber is not None:
            raw = await presence.find(subscriber, topic)
            docs = await asyncio.to_thread(_parse, [raw] if raw is not None else [], None, None)
            return Page(docs, None)
        raws, rest = await presence.page(_presence_cursor(after), limit)
        docs = await asyncio.to_thread(_parse, raws, topic, subscriber)
        return Page(docs, f"r{rest[1]}:{rest[0]}" if rest is not None else None)
    start_sid, start_index = _local_cursor(after)
    docs = []
    seen = 0
    for stream in hub.streams():
        if stream.sid < start_sid or (subscriber is not None and stream.id != subscriber):
            continue
        for index, selector in enumerate(stream.topics):
            if stream.sid == start_sid and index < start_index:
                continue
            if seen == limit:
                return Page(docs, f"l{stream.sid}:{index}")
            seen += 1
            if topic is None or selector.text == topic:
                docs.append(subscription_doc(stream, selector, True, context=False))
    return Page(docs, None)


def _parse(raws: Iterable[str], topic: str | None, subscriber: str | None) -> list[dict[str, Any]]:
    """Recorded documents, filtered; a record that is not a document is skipped."""
    docs = []
    for raw in raws:
        try:
            doc = json.loads(raw)
        except ValueError:
            continue
        if not isinstance(doc, dict):
            continue
        if (topic is None or doc.get("topic") == topic) and (
            subscriber is None or doc.get("subscriber") == subscriber
        ):
            docs.append(doc)
    return docs


def _presence_cursor(after: str | None) -> tuple[str, int] | None:
    if after is None:
        return None
    scan, _, node = after[1:].partition(":")
    if not after.startswith("r") or not scan.isdigit() or not node:
        raise InvalidCursor(f"invalid 'after' cursor {after[:80]!r}")
    return node, int(scan)


def _local_cursor(after: str | None) -> tuple[int, int]:
    if after is None:
        return -1, 0
    sid, _, index = after[1:].partition(":")
    if not after.startswith("l") or not sid.isdigit() or not index.isdigit():
        raise InvalidCursor(f"invalid 'after' cursor {after[:80]!r}")
    return int(sid), int(index)


async def encode(document: dict[str, Any]) -> bytes:
    """``document`` as indented JSON, encoded in a worker thread."""
    return await asyncio.to_thread(lambda: json.dumps(document, indent=2).encode())
