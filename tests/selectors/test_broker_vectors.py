"""The brokers' own test vectors, as data: RabbitMQ's topic exchange and the NATS server's
sublist. Each file says where its facts come from; every implementation must agree."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from skipfilter.bench.registry import IMPLEMENTATIONS, make_matcher
from skipfilter.errors import InvalidSelector, InvalidTopic
from skipfilter.selectors import compile_selector, matches, topic_problem

VECTORS = Path(__file__).parent / "vectors"


def load(name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((VECTORS / name).read_text())
    assert data["source"]
    return data


RABBIT = load("rabbitmq_topic.json")
NATS = load("nats_sublist.json")
AMQP_IMPLS = sorted(name for name, impl in IMPLEMENTATIONS.items() if "amqp" in impl.syntaxes)
NATS_IMPLS = sorted(name for name, impl in IMPLEMENTATIONS.items() if "nats" in impl.syntaxes)


def routes(bindings: dict[str, str], key: str) -> list[str]:
    return sorted((q for q, b in bindings.items() if matches(b, key, "amqp")), key=_queue_order)


def _queue_order(queue: str) -> int:
    return int(queue[1:])


@pytest.mark.parametrize("key", sorted(RABBIT["routes"]))
def test_rabbitmq_routes_by_the_selectors(key: str) -> None:
    assert routes(RABBIT["bindings"], key) == RABBIT["routes"][key]


@pytest.mark.parametrize("name", AMQP_IMPLS)
def test_rabbitmq_routes_by_every_matcher(name: str) -> None:
    """Subscribe t1-t26, route every key; remove five bindings, route again."""
    matcher = make_matcher(name, "amqp")
    queue_of: dict[int, str] = {}
    sid_of: dict[str, int] = {}
    for queue, binding in RABBIT["bindings"].items():
        sid = matcher.subscribe([binding])
        queue_of[sid], sid_of[queue] = queue, sid

    def routed(key: str) -> list[str]:
        return sorted((queue_of[s] for s in matcher.match([key])), key=_queue_order)

    for key, expected in RABBIT["routes"].items():
        assert routed(key) == expected, (name, key)
    after = RABBIT["removed_then"]
    for queue in after["removed"]:
        assert matcher.unsubscribe(sid_of[queue])
    removed = set(after["removed"])
    for key, expected in RABBIT["routes"].items():
        assert routed(key) == [q for q in expected if q not in removed], (name, key)
    for key, expected in after["routes"].items():
        assert routed(key) == expected, (name, key)


@pytest.mark.parametrize(("subject", "valid"), sorted(NATS["publishable"].items()))
def test_nats_publishable_subjects(subject: str, valid: bool) -> None:
    assert (topic_problem("nats", subject) is None) is valid
    for name in NATS_IMPLS:
        matcher = make_matcher(name, "nats")
        matcher.subscribe([">"])
        if valid:
            assert len(matcher.match([subject])) == 1, name
        else:
            with pytest.raises(InvalidTopic) as refused:
                matcher.match([subject])
            assert refused.value.column is not None and refused.value.topic == subject


@pytest.mark.parametrize(("subject", "valid"), sorted(NATS["subscribable"].items()))
def test_nats_subscribable_subjects(subject: str, valid: bool) -> None:
    if valid:
        compile_selector(subject, "nats")
    else:
        with pytest.raises(InvalidSelector):
            compile_selector(subject, "nats")


@pytest.mark.parametrize(("subject", "pattern", "expected"), NATS["matches"])
def test_nats_matches(subject: str, pattern: str, expected: bool) -> None:
    assert matches(pattern, subject, "nats") is expected
    for name in NATS_IMPLS:
        matcher = make_matcher(name, "nats")
        sid = matcher.subscribe([pattern])
        assert (sid in matcher.match([subject])) is expected, name


@pytest.mark.parametrize(
    ("topic", "column"),
    [("sensors/+/temp", 9), ("a/#", 3), ("#", 1), ("", 1), ("x+", 2)],
)
def test_mqtt_topic_names_refused_with_the_column(topic: str, column: int) -> None:
    for name in sorted(n for n, impl in IMPLEMENTATIONS.items() if "mqtt" in impl.syntaxes):
        matcher = make_matcher(name, "mqtt")
        matcher.subscribe(["#"])
        with pytest.raises(InvalidTopic) as refused:
            matcher.match(["ok/topic", topic])
        assert refused.value.column == column, name
        assert len(matcher.match(["ok/topic"])) == 1  # nothing lost by the refusal
