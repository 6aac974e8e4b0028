"""Mercure 1.0 subscription events and the subscriptions API (draft-08 §8), and the 0.x ones
compatibility mode keeps: the documents and records first, then a real hub on loopback."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from skipfilter.hub.protocol.matchers import LEGACY
from skipfilter.hub.update import Update
from skipfilter.hub.v1_subscriptions import Subscription, SubscriptionBook, read_record
from skipfilter.selectors import TypedSelector

SUBS = "/.well-known/mercure/subscriptions"

# -- documents, events and records (no server) ------------------------------------------

matchers = st.tuples(st.text(min_size=1), st.sampled_from(["exact", "urlpattern", LEGACY]))
payloads = st.none() | st.dictionaries(st.text(max_size=5), st.integers(), max_size=3)


@given(matchers, st.text(min_size=1), payloads, st.booleans())
def test_a_record_reads_back_as_the_subscription_it_describes(
    matcher: tuple[str, str], subscriber: str, payload: Any, active: bool
) -> None:
    subscription = Subscription(matcher, subscriber, payload)
    assert read_record(subscription.document(active)) == subscription
    if subscription.legacy:  # what older nodes recorded: the 0.x document
        assert read_record(subscription.legacy_document(active, context=False)) == subscription


def test_a_record_no_hub_wrote_is_refused() -> None:
    good = Subscription(("https://e.com/:id", "urlpattern"), "urn:uuid:1", {"a": 1}).document()
    for forged in (
        {**good, "id": "https://example.com/not-a-subscription"},
        {**good, "id": SUBS + "/exact/https%3A%2F%2Fe.com%2F%3Aid/urn%3Auuid%3A1"},  # wrong type
        {**good, "match_type": "regex"},
        {**good, "match_type": "URLPATTERN"},
        {**good, "match": 3},
        {**good, "subscriber": None},
        {**good, "payload": "not an object"},
        {k: v for k, v in good.items() if k != "match_type"},
    ):
        with pytest.raises(ValueError):
            read_record(forged)


def test_a_1_0_event_is_private_typed_mercure_with_the_listed_members() -> None:
    matcher = ("https://example.com/books/:id", "urlpattern")
    update = Subscription(matcher, "urn:uuid:a b", {"user": "ann"}).event("urn:uuid:e", False)
    topic = SUBS + "/urlpattern/https%3A%2F%2Fexample.com%2Fbooks%2F%3Aid/urn%3Auuid%3Aa%20b"
    assert (update.id, update.topics, update.private, update.type) == (
        "urn:uuid:e",
        (topic,),
        True,
        "mercure",
    )
    assert b"event: mercure\n" in update.encode()
    assert json.loads(update.data) == {
        "id": topic,
        "type": "subscription",
        "match_type": "urlpattern",
        "match": "https://example.com/books/:id",
        "subscriber": "urn:uuid:a b",
        "active": False,
        "payload": {"user": "ann"},
    }


def test_a_0_x_event_keeps_the_0_x_topic_and_json_ld_document() -> None:
    update = Subscription(("https://e.com/{id}", LEGACY), "urn:uuid:1").event("e", True)
    assert update.type is None and update.private  # a 0.x page's onmessage gets it
    topic = SUBS + "/https%3A%2F%2Fe.com%2F%7Bid%7D/urn%3Auuid%3A1"
    assert update.topics == (topic,)
    assert json.loads(update.data) == {
        "@context": "https://mercure.rocks/",
        "id": topic,
        "type": "Subscription",
        "subscriber": "urn:uuid:1",
        "topic": "https://e.com/{id}",
        "active": True,
    }


@dataclass
class _Grants:
    payloads: dict[str, Any]

    def payload_for(self, selector: TypedSelector) -> Any:
        return self.payloads.get(selector.text)


@dataclass
class _Stream:
    id: str
    topics: tuple[TypedSelector, ...]
    claims: _Grants | None = None


@dataclass
class _Presence:
    records: dict[str, dict[str, Any]] = field(default_factory=dict)

    def add(self, key: str, doc: dict[str, Any]) -> None:
        self.records[key] = doc

    def remove(self, key: str) -> None:
        del self.records[key]


def test_the_book_announces_one_event_per_matcher_and_subscriber_and_records_them() -> None:
    published: list[Update] = []
    ids = iter(range(1000))
    book = SubscriptionBook(published.extend, lambda: f"urn:uuid:{next(ids)}")
    presence = book.presence = _Presence()
    a = _Stream(
        "urn:uuid:a",
        (TypedSelector("https://e.com/:x", "urlpattern"), TypedSelector("https://e.com/1")),
        _Grants({"https://e.com/1": {"p": 1}}),
    )
    b = _Stream("urn:uuid:b", (TypedSelector("https://e.com/1"),))
    book.opened(a)
    book.opened(b)
    docs = [json.loads(u.data) for u in published]
    assert [(d["match"], d["subscriber"], d.get("payload")) for d in docs] == [
        ("https://e.com/:x", "urn:uuid:a", None),
        ("https://e.com/1", "urn:uuid:a", {"p": 1}),
        ("https://e.com/1", "urn:uuid:b", None),
    ]
    assert len({u.id for u in published}) == 3 and len(book) == 3
    assert sorted(presence.records) == sorted(d["id"] for d in docs)
    assert [s.subscriber for _, s in book.held()] == ["urn:uuid:a", "urn:uuid:a", "urn:uuid:b"]
    ((position, _),) = list(book.held())[2:]
    assert [s.subscriber for _, s in book.held(position)] == ["urn:uuid:b"]
    assert book.find(docs[1]["id"], "urn:uuid:a") == read_record(docs[1])
    published.clear()
    book.closed(a)
    book.closed(a)  # once only
    ended = [json.loads(u.data) for u in published]
    assert [(d["match"], d["active"], d.get("payload")) for d in ended] == [
        ("https://e.com/:x", False, None),
        ("https://e.com/1", False, {"p": 1}),  # the end carries the payload the start did
    ]
    assert list(presence.records) == [docs[2]["id"]] and len(book) == 1
    assert book.find(docs[1]["id"], "urn:uuid:a") is None
    revived = book.recorded_update({**docs[2], "active": False})
    assert json.loads(revived.data)["active"] is False and revived.type == "mercure"
