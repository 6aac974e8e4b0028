"""Subscription events (draft-08 §8): one per (matcher, subscriber), on creation and on end.

Each open stream holds one subscription per selector it asked for. The hub announces each as a
private update whose topic is the subscription's own URL, ``/.well-known/mercure/subscriptions/
{match_type}/{match}/{subscriber}``, with SSE type ``mercure`` and a plain JSON body (``id``,
``type: "subscription"``, ``match_type``, ``match``, ``subscriber``, ``active`` and the token's
``payload`` for that matcher, §6.8). In compatibility mode a 0.x ``topic=`` subscription keeps its
0.x event: topic ``/subscriptions/{topic}/{subscriber}``, a JSON-LD body (``@context``,
``type: "Subscription"``, ``topic``) and no SSE type, so a 0.x page's ``onmessage`` still gets it.

``SubscriptionBook`` keeps the subscriptions of this node's streams (computed once, at connect:
payloads cost matcher evaluations) for the API and the end events, and records them in the
shared presence (Redis, or the SQLite file local workers share) so the other nodes list them
and announce their end if this node dies.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, Protocol

from skipfilter.hub.frontends.v1.discovery import MERCURE_EVENT
from skipfilter.hub.frontends.v1.matchers import LEGACY, MATCH_TYPES, TopicMatcher
from skipfilter.hub.frontends.v1.subscriptions import subscription_document, subscription_topic
from skipfilter.hub.update import Update

#: The JSON-LD context of 0.x subscription documents.
LEGACY_CONTEXT: Final = "https://mercure.rocks/"
#: The ``type`` member of a 0.x subscription document.
LEGACY_TYPE: Final = "Subscription"


class SubscriberGrants(Protocol):
    """What a subscription needs of the grants on ``stream.grants`` (``core.grants.Grants``):
    its payload (§6.8)."""

    def payload_for(self, selector: Any) -> Any:
        """The payload of the first ``subscribe`` grant matching ``selector``'s text."""
        ...


class Subscriber(Protocol):
    """What the book reads of a stream: its hub-assigned id, its selectors, its grants."""

    @property
    def id(self) -> str: ...

    @property
    def selectors(self) -> Sequence[Any]: ...

    @property
    def grants(self) -> SubscriberGrants | None: ...


def matcher_of(selector: Any) -> TopicMatcher:
    """``(value, match_type)`` of a selector of ``stream.selectors``: a ``TypedSelector`` says its
    type; a plain string is a 0.x selector (``mercure``)."""
    if isinstance(selector, str):
        return selector, LEGACY
    return selector.text, selector.syntax


@dataclass(frozen=True, slots=True)
class Subscription:
    """One subscriber's subscription to one matcher, with the payload its token gives it."""

    matcher: TopicMatcher
    subscriber: str
    payload: Any = None

    @property
    def id(self) -> str:
        """Its URL in the API, and the topic of its events."""
        return subscription_topic(self.matcher, self.subscriber)

    @property
    def legacy(self) -> bool:
        """Whether it comes from a 0.x ``topic=`` (compatibility mode)."""
        return self.matcher[1] == LEGACY

    def document(self, active: bool = True) -> dict[str, Any]:
        """The 1.0 document (a 0.x subscription gets ``topic`` instead of ``match``)."""
        return subscription_document(self.matcher, self.subscriber, active, self.payload)

    def legacy_document(self, active: bool = True, context: bool = True) -> dict[str, Any]:
        """The 0.x JSON-LD document (``@context`` only where 0.x put it: not in collections)."""
        doc: dict[str, Any] = {"@context": LEGACY_CONTEXT} if context else {}
        doc.update(
            id=self.id,
            type=LEGACY_TYPE,
            subscriber=self.subscriber,
            topic=self.matcher[0],
            active=active,
        )
        if self.payload is not None:
            doc["payload"] = self.payload
        return doc

    def event(self, update_id: str, active: bool) -> Update:
        """Its creation (``active``) or end event: private, to its own topic."""
        if self.legacy:
            body = json.dumps(self.legacy_document(active), indent=2)
            return Update(update_id, (self.id,), body, private=True)
        body = json.dumps(self.document(active), indent=2)
        return Update(update_id, (self.id,), body, private=True, type=MERCURE_EVENT)


def subscriptions_of(stream: Subscriber) -> tuple[Subscription, ...]:
    """One subscription per distinct selector of ``stream``, each with its payload.

    Runtime complexity: one ``payload_for`` per selector (grants x matcher evaluations).
    """
    grants = stream.grants
    found = []
    for selector in dict.fromkeys(stream.selectors):
        payload = grants.payload_for(selector) if grants is not None else None
        found.append(Subscription(matcher_of(selector), stream.id, payload))
    return tuple(found)


def read_record(doc: Mapping[str, Any]) -> Subscription:
    """The subscription a recorded document (presence, another node's) describes.

    Takes the 1.0 document (``match``, ``match_type``) and the 0.x one (``topic``). Raises
    ValueError for anything a hub did not write: a member of the wrong type, an unknown match
    type, an ``id`` that is not the subscription's URL, a ``payload`` that is not an object.
    """
    subscriber = doc.get("subscriber")
    if not isinstance(subscriber, str):
        raise ValueError("a subscription record needs a string 'subscriber'")
    if "match_type" in doc:
        value, match_type = doc.get("match"), doc.get("match_type")
        if not isinstance(value, str) or match_type not in MATCH_TYPES:
            raise ValueError(f"invalid matcher {value!r:.80} of type {match_type!r:.40}")
        matcher: TopicMatcher = (value, str(match_type))
    elif isinstance(doc.get("topic"), str):
        matcher = (doc["topic"], LEGACY)
    else:
        raise ValueError("a subscription record needs 'match' and 'match_type', or 'topic'")
    payload = doc.get("payload")
    if payload is not None and not isinstance(payload, dict):
        raise ValueError("a subscription's payload is a JSON object")
    found = Subscription(matcher, subscriber, payload)
    if doc.get("id") != found.id:
        raise ValueError(f"{str(doc.get('id'))[:80]!r} is not the path of a subscription")
    return found


class SubscriptionBook:
    """This node's subscriptions, by stream, in connection order; their events and records.

    ``publish(updates)`` stores and delivers events without waiting (the hub's
    ``publish_nowait``); ``new_id()`` names each event. ``presence`` (set once the transport
    runs; None without a shared transport) records them for the other nodes. Not thread-safe:
    the event loop calls it.
    """

    def __init__(
        self, publish: Callable[[Sequence[Update]], None], new_id: Callable[[], str]
    ) -> None:
        self._publish = publish
        self._new_id = new_id
        self.presence: Any = None
        self._serial = 0
        self._held: dict[int, tuple[Subscription, ...]] = {}  # serial -> a stream's
        self._serials: dict[str, int] = {}  # subscriber id -> serial

    def opened(self, stream: Subscriber) -> None:
        """Announce (and record) every subscription of a stream that just registered."""
        subscriptions = subscriptions_of(stream)
        self._serial += 1
        self._serials[stream.id] = self._serial
        self._held[self._serial] = subscriptions
        if self.presence is not None:
            for subscription in subscriptions:
                self.presence.add(subscription.id, subscription.document())
        self._announce(subscriptions, True)

    def closed(self, stream: Subscriber) -> None:
        """Announce the end of a stream's subscriptions (and forget them)."""
        serial = self._serials.pop(stream.id, None)
        if serial is None:
            return
        subscriptions = self._held.pop(serial)
        if self.presence is not None:
            for subscription in subscriptions:
                self.presence.remove(subscription.id)
        self._announce(subscriptions, False)

    def _announce(self, subscriptions: Sequence[Subscription], active: bool) -> None:
        if subscriptions:
            self._publish([s.event(self._new_id(), active) for s in subscriptions])

    def recorded_update(self, doc: dict[str, Any]) -> Update:
        """The event of a recorded subscription, ``active`` as the record says (false: its
        node is gone; true: a node taken for gone announces it again). ValueError for a
        record no hub wrote."""
        return read_record(doc).event(self._new_id(), doc.get("active") is True)

    def held(
        self, after: tuple[int, int] = (0, 0)
    ) -> Iterator[tuple[tuple[int, int], Subscription]]:
        """This node's subscriptions from position ``after`` on (``(serial, index)``, the
        cursor of the API's pages), oldest stream first. Runtime: O(streams) to skip."""
        start, first = after
        for serial, subscriptions in self._held.items():
            if serial < start:
                continue
            for index, subscription in enumerate(subscriptions):
                if serial == start and index < first:
                    continue
                yield (serial, index), subscription

    def find(self, subscription_id: str, subscriber: str) -> Subscription | None:
        """The subscription of this node with that id (held by ``subscriber``), if open."""
        serial = self._serials.get(subscriber)
        if serial is None:
            return None
        return next((s for s in self._held[serial] if s.id == subscription_id), None)

    def __len__(self) -> int:
        return sum(len(s) for s in self._held.values())
