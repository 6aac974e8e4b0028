"""What URL Patterns may cost a TopicIndex (library users, Spark): the hub's bounds.

The issue's hostile subscription (ten ``\\w{150}`` groups) grew a process by hundreds of
megabytes; over-limit patterns are refused naming the limit, before anything is compiled or
filed; and what an index compiled is freed once no subscriber holds it.
"""

from __future__ import annotations

import gc

import pytest

from rigs.resident import resident_bytes
from skipfilter import PatternTooCostly, TopicIndex
from skipfilter.selectors.urlpattern import PATTERN_COST_LIMIT, SUBSCRIPTION_COST_LIMIT
from skipfilter.selectors.urlpattern.compile import compiled_count

HOSTILE = [rf"https://e.com/{i}/:id(\w{{150}})" for i in range(10)]


def test_the_issues_subscription_costs_megabytes_not_hundreds() -> None:
    """Ten ``\\w{150}`` patterns (ASCII, as the standard means): a few megabytes at most
    (it was ~30 MB each), matched as before, and freed when the subscriber leaves."""
    index = TopicIndex("urlpattern", base_url="https://hub.example/")
    gc.collect()
    before, compiled = resident_bytes(), compiled_count()
    sid = index.subscribe(HOSTILE)
    assert compiled_count() == compiled + 10
    assert resident_bytes() - before < 40 * 2**20
    assert set(index.match(["https://e.com/3/" + "a" * 150])) == {sid}
    assert not index.match(["https://e.com/3/" + "a" * 149 + "é"])
    index.unsubscribe(sid)
    index.match(["https://e.com/3/" + "b" * 150])
    assert compiled_count() == compiled  # nothing holds them: freed


def test_a_pattern_past_the_limit_is_refused_naming_it() -> None:
    index = TopicIndex("urlpattern")
    keep = index.subscribe(["https://example.com/books/:id"])
    gc.collect()  # what earlier tests left for the collector goes now, not mid-test
    compiled = compiled_count()
    with pytest.raises(PatternTooCostly, match="PATTERN_COST_LIMIT") as info:
        index.subscribe(["https://example.com/x", r"https://e.com/:id(\p{L}{150})"])
    assert info.value.limit == PATTERN_COST_LIMIT
    del info
    gc.collect()
    assert len(index) == 1 and compiled_count() == compiled
    assert set(index.match(["https://example.com/books/1"])) == {keep}
    assert not index.match(["https://example.com/x"])


def test_a_subscription_past_the_limit_is_refused_naming_it() -> None:
    """Six patterns each under the per-pattern limit, past the subscription's together (the
    allowed selectors count too); nothing is filed and nothing stays compiled."""
    each = [rf"https://e.com/{i}/:id(.{{200}})" for i in range(6)]
    index = TopicIndex("urlpattern")
    gc.collect()  # what earlier tests left for the collector goes now, not mid-test
    compiled = compiled_count()
    with pytest.raises(PatternTooCostly, match="SUBSCRIPTION_COST_LIMIT") as info:
        index.subscribe(each)
    assert info.value.limit == SUBSCRIPTION_COST_LIMIT
    del info  # its traceback holds what was compiled before the refusal
    gc.collect()
    with pytest.raises(PatternTooCostly, match="SUBSCRIPTION_COST_LIMIT"):
        index.subscribe(each[:3], allowed=each[3:])
    gc.collect()
    assert len(index) == 0 and compiled_count() == compiled
    index.subscribe(each[:3])  # what fits is accepted
    index.subscribe(each[3:])  # and another subscription has its own budget
    assert len(index) == 2


def test_plain_and_held_patterns_cost_nothing_more() -> None:
    """Patterns a subscriber holds already, and plainly literal ones, spend none of the
    budget: a hundred subscribers to the same costly patterns are all accepted."""
    each = [rf"https://e.com/{i}/:id(.{{200}})" for i in range(4)]
    index = TopicIndex("urlpattern")
    for _ in range(100):
        index.subscribe(each + [f"https://example.com/{'a' * 3000}/{i}" for i in range(20)])
    assert len(index) == 100
