"""The hub itself, without HTTP: one TopicIndex, one History, the connected subscribers.

A publish matches once (one bitmap), appends once, and wakes only the recipients; nothing
is done per non-recipient. Everything here runs on the event loop, which is what makes
"register, then note the history head" and "match, append, wake" atomic to each other.
"""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from typing import Any
from urllib.parse import quote

from skipfilter.hub.auth import Claims
from skipfilter.hub.history import Entry, History, Update
from skipfilter.hub.metrics import Metrics
from skipfilter.hub.settings import HubSettings

SUBSCRIPTIONS_PATH = "/.well-known/mercure/subscriptions"
JSONLD_CONTEXT = "https://mercure.rocks/"

IndexFactory = Callable[[], Any]


def default_index_factory(settings: HubSettings) -> IndexFactory:
    """TopicIndex with Mercure selector syntax, sized from the settings."""
    from skipfilter.index import TopicIndex

    return lambda: TopicIndex(syntax="mercure", cache_size=settings.cache_size)


def new_id() -> str:
    """A fresh ``urn:uuid:`` identifier (update ids and subscriber ids)."""
    return f"urn:uuid:{uuid.uuid4()}"


class Subscriber:
    """One open stream: its index id, its cursor into the history, and its wake-up flag.

    ``notify`` is called by the publisher for each update this subscriber must get.
    When the subscriber was idle, it has already seen every earlier update meant for it,
    so its cursor jumps to just before the new one: scans stay short and "fell behind the
    ring" means exactly "an update it still owes has been evicted".
    """

    __slots__ = ("claims", "closed", "cursor", "id", "pending", "sid", "topics", "wake")

    def __init__(self, sid: int, topics: tuple[str, ...], claims: Claims | None, head: int):
        self.id = new_id()
        self.sid = sid
        self.topics = topics
        self.claims = claims
        self.cursor = head
        self.pending = False
        self.closed = False
        self.wake = asyncio.Event()

    def notify(self, seq: int) -> None:
        """Mark update ``seq`` as owed and wake the stream. O(1)."""
        if not self.pending:
            self.pending = True
            if seq - 1 > self.cursor:
                self.cursor = seq - 1
            self.wake.set()


class Hub:
    """Matching, storage and fan-out for one hub; the HTTP layer lives in ``app``."""

    def __init__(self, settings: HubSettings, index_factory: IndexFactory | None = None) -> None:
        self.settings = settings
        factory = index_factory or default_index_factory(settings)
        self.index = factory()
        self.history = History(settings.history_path, settings.ring_size, settings.history_size)
        self.metrics = Metrics()
        self.stopping = False
        self._by_sid: dict[int, Subscriber] = {}

    # -- publishing ---------------------------------------------------------------------

    def publish(self, update: Update) -> Entry:
        """Store ``update`` and wake its recipients; returns after the update is durable.

        Runtime: one index match, one SQLite commit, O(recipients) wake-ups.
        """
        start = time.perf_counter()
        recipients = self.index.match(update.topics, private=update.private)
        self.metrics.observe_match(time.perf_counter() - start, len(recipients))
        entry = self.history.append(update, recipients)
        subscribers = self._by_sid
        for sid in recipients:
            subscriber = subscribers.get(sid)
            if subscriber is not None:
                subscriber.notify(entry.seq)
        return entry

    # -- subscribers --------------------------------------------------------------------

    def register(self, topics: Sequence[str], claims: Claims | None) -> Subscriber:
        """Add a subscriber to the index; it will get every update published from now on.

        Raises InvalidSelector (nothing changed) for a selector the index refuses.
        """
        allowed = claims.subscribe if claims is not None else None
        sid = self.index.subscribe(topics, allowed=allowed, payload=None)
        subscriber = Subscriber(sid, tuple(topics), claims, self.history.head)
        self._by_sid[sid] = subscriber
        self.metrics.subscribes += 1
        self._announce(subscriber, active=True)
        return subscriber

    def unregister(self, subscriber: Subscriber, reason: str) -> None:
        """Remove a subscriber (idempotent) and announce it when subscriptions are on."""
        if subscriber.closed:
            return
        subscriber.closed = True
        self.index.unsubscribe(subscriber.sid)
        self._by_sid.pop(subscriber.sid, None)
        self.metrics.disconnects[reason] += 1
        self._announce(subscriber, active=False)

    def wants(self, subscriber: Subscriber, entry: Entry) -> bool:
        """Whether a replayed entry (no stored bitmap) is for ``subscriber``."""
        if entry.recipients is not None:
            return subscriber.sid in entry.recipients
        update = entry.update
        return subscriber.sid in self.index.match(update.topics, private=update.private)

    def __len__(self) -> int:
        return len(self._by_sid)

    def subscribers(self) -> Iterator[Subscriber]:
        """Connected subscribers, oldest first."""
        return iter(list(self._by_sid.values()))

    # -- subscription events and API ----------------------------------------------------

    def _announce(self, subscriber: Subscriber, active: bool) -> None:
        if not self.settings.subscriptions:
            return
        for topic in subscriber.topics:
            doc = subscription_doc(subscriber, topic, active, context=True)
            self.publish(Update(new_id(), (doc["id"],), json.dumps(doc, indent=2), private=True))

    def subscription_docs(
        self, topic: str | None = None, subscriber_id: str | None = None
    ) -> list[dict[str, Any]]:
        """Active subscriptions, optionally only for one topic selector and/or subscriber."""
        docs = []
        for subscriber in self.subscribers():
            if subscriber_id is not None and subscriber.id != subscriber_id:
                continue
            for t in subscriber.topics:
                if topic is None or t == topic:
                    docs.append(subscription_doc(subscriber, t, True, context=False))
        return docs

    def stop_streams(self) -> None:
        """Ask every open stream to end (server shutdown); new subscribers are refused."""
        self.stopping = True
        for subscriber in self._by_sid.values():
            subscriber.wake.set()

    def close(self) -> None:
        """Release the history database."""
        self.history.close()


def subscription_path(topic: str, subscriber_id: str) -> str:
    """The topic of a subscription's events: both parts percent-encoded, as one segment each."""
    return f"{SUBSCRIPTIONS_PATH}/{quote(topic, safe='')}/{quote(subscriber_id, safe='')}"


def subscription_doc(
    subscriber: Subscriber, topic: str, active: bool, context: bool
) -> dict[str, Any]:
    """The JSON-LD document describing one subscription (one subscriber x one selector)."""
    doc: dict[str, Any] = {}
    if context:
        doc["@context"] = JSONLD_CONTEXT
    doc.update(
        id=subscription_path(topic, subscriber.id),
        type="Subscription",
        subscriber=subscriber.id,
        topic=topic,
        active=active,
    )
    payload = subscriber.claims.payload if subscriber.claims is not None else None
    if payload is not None:
        doc["payload"] = payload
    return doc
