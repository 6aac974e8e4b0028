"""The IoT-shaped workloads are what docs/benchmarks.md says they are, and reproducible."""

from __future__ import annotations

from collections import Counter

import pytest

from skipfilter.bench import workloads
from skipfilter.index import TopicIndex
from skipfilter.selectors import compile_selector, topic_problem


def _shape(text: str) -> str:
    """A filter's shape: its wildcards kept, literal words as 'w'."""
    return "/".join(w if w in ("+", "#") else "w" for w in text.split("/"))


def _first(subscriber: workloads.Subscriber) -> str:
    """A subscriber's first selector, as text (these workloads hold no typed selectors)."""
    text = subscriber.selectors[0]
    assert isinstance(text, str), text
    return text


def test_iot_fleet_has_the_issue_shares_and_never_seen_topics() -> None:
    work = workloads.iot_fleet(20_000, 2_000, seed=1)
    assert work == workloads.iot_fleet(20_000, 2_000, seed=1)  # seeded
    shares = Counter(_shape(_first(s)) for s in work.subscribers)
    expected = {"w/w/w": 0.55, "w/w/#": 0.20, "w/+/w": 0.15, "+/w/+": 0.07, "w/#": 0.03}
    for shape, share in expected.items():
        assert shares[shape] / 20_000 == pytest.approx(share, abs=0.01), shape
    topics = [m.topics[0] for m in work.messages]
    assert len(set(topics)) == len(topics)
    assert {len(t.split("/")) for t in topics} == {3, 4}
    assert all(topic_problem("mqtt", t) is None for t in topics)
    sites = {_first(s).split("/")[0] for s in work.subscribers} - {"+"}
    assert len(sites) == 50


def test_industrial_topics_are_six_levels_and_reach_many_subscribers() -> None:
    work = workloads.industrial(10_000, 300, seed=2)
    assert all(compile_selector(_first(s), "mqtt") for s in work.subscribers)
    topics = [m.topics[0] for m in work.messages]
    assert len(set(topics)) == len(topics)
    assert {len(t.split("/")) for t in topics} == {6}
    idx = TopicIndex("mqtt")
    for sub in work.subscribers:
        idx.subscribe(list(sub.selectors))
    mean = sum(len(idx.match([t])) for t in topics) / len(topics)
    assert 80 < mean < 140  # ~1,070 at 100,000 subscribers: ten times fewer here


def test_asking_for_more_unique_readings_than_exist_is_refused() -> None:
    with pytest.raises(ValueError, match="need more sites or devices"):
        workloads.iot_fleet(10, 30, sites=1, devices=2)
    with pytest.raises(ValueError, match="need a bigger plant"):
        workloads.industrial(10, 10**6)
