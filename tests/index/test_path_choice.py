"""The default TopicIndex picks the level index or the patterns' bitmaps per word count, from
what it learns, and switches as the pattern mix changes: answers checked by brute force."""

from __future__ import annotations

import random

import pytest

from skipfilter.index import TopicIndex, Tuning
from skipfilter.index.path_choice import ANSWER_IDS, LEARN_EVERY, PathChoice, trie_cost
from skipfilter.index.word_paths import EAGER_SHAPES
from skipfilter.selectors import matches


def test_trie_cost_counts_patterns_and_answer_size() -> None:
    assert trie_cost(0, 0) == 0
    assert trie_cost(3, 0) == 3
    assert trie_cost(4, ANSWER_IDS) == 8  # a 4096-id answer doubles each OR's cost


def test_first_lookup_decides_then_hysteresis() -> None:
    choice = PathChoice(crossover=2.0, counts=8)
    assert choice.level[3] is None  # not priced yet
    choice.observe(3, 9.0)  # above 2 * (3 + 1): the level index, at once
    assert choice.level[3] is True
    for _ in range(3):  # the mean drifts down, still above 3/4 of the threshold
        choice.observe(3, 6.5)
    assert choice.level[3] is True
    for _ in range(20):
        choice.observe(3, 1.0)
    assert choice.level[3] is False
    choice.observe(3, 8.5)  # one costly lookup does not flip it back
    assert choice.level[3] is False
    assert choice.level[2] is None  # each word count learns on its own


def test_walks_are_due_one_priced_lookup_in_walk_every() -> None:
    from skipfilter.index.path_choice import WALK_EVERY

    choice = PathChoice(crossover=2.0, counts=4)
    due = [choice.walk_due(1) for _ in range(3 * WALK_EVERY)]
    assert due.count(True) == 3 and due[WALK_EVERY - 1]


def _iot_like(idx: TopicIndex, rng: random.Random, count: int) -> dict[int, str]:
    """Device filters: a topic reaches a filter or two of a subscriber each."""
    filters = {}
    for _ in range(count):
        site, device = rng.randrange(40), rng.randrange(400)
        text = rng.choice([f"s{site}/d{device}/t", f"s{site}/d{device}/#", f"s{site}/+/t"])
        filters[idx.subscribe([text])] = text
    return filters


def _fan_out(idx: TopicIndex, rng: random.Random, count: int) -> dict[int, str]:
    """AMQP-style filters: wildcards everywhere, so a topic reaches dozens of them."""
    filters = {}
    for _ in range(count):
        words = [rng.choice(["+", "s1", "s2", "d1", "t"]) for _ in range(3)]
        text = "/".join(words) if rng.random() < 0.7 else "/".join(words[:2]) + "/#"
        filters[idx.subscribe([text])] = text
    return filters


def _check(idx: TopicIndex, filters: dict[int, str], topics: list[str]) -> None:
    for topic in topics:
        expected = [sid for sid, text in sorted(filters.items()) if matches(text, topic, "mqtt")]
        assert list(idx.match([topic])) == expected, topic


def _level_counts(idx: TopicIndex) -> int:
    return idx.stats()["subscribed_level_word_counts"]


def test_default_switches_paths_as_the_pattern_mix_changes() -> None:
    """IoT-like filters: the patterns' bitmaps answer. Add fan-out filters: topics of three
    words now reach dozens of patterns and the level index takes over. Unsubscribe them
    again: back to the bitmaps. Every answer on the way is checked by brute force."""
    rng = random.Random(7)
    idx = TopicIndex("mqtt", tuning=Tuning(level_crossover=100))
    filters = _iot_like(idx, rng, 600)

    def topics() -> list[str]:  # new ones each time, so that no memo answers them
        return [f"s{rng.randrange(40)}/d{rng.randrange(10**6)}/t" for _ in range(8 * LEARN_EVERY)]

    _check(idx, filters, topics())
    assert _level_counts(idx) == 0
    fan = _fan_out(idx, rng, 600)
    filters.update(fan)
    _check(idx, filters, [*topics(), "s1/d1/t", "s2/t/t", "d1/s1/t"])
    assert _level_counts(idx) == 1  # three-word topics: the level index
    for sid in fan:
        assert idx.unsubscribe(sid)
        del filters[sid]
    # The level path's periodic walks (one lookup in 64) see the change.
    _check(idx, filters, [topic for _ in range(8) for topic in topics()])
    assert _level_counts(idx) == 0


def _unfiled(idx: TopicIndex) -> int:
    return idx.stats()["subscribed_level_unfiled"]


def test_subscribers_are_filed_by_level_only_once_a_word_count_chooses_it() -> None:
    """IoT-like filters never need the level index: their subscribes do not file there.
    Once fan-out filters make three-word topics choose it, each such lookup files a batch
    (the patterns answer meanwhile), then the level index answers and later subscribes
    file at once. Every answer on the way is checked by brute force."""
    rng = random.Random(11)
    idx = TopicIndex("mqtt", tuning=Tuning(level_crossover=50, level_filing_batch=100))
    filters = _iot_like(idx, rng, 300)
    _check(idx, filters, [f"s{rng.randrange(40)}/d{rng.randrange(10**6)}/t" for _ in range(64)])
    wild = sum(1 for text in filters.values() if "+" in text or "#" in text)
    assert _level_counts(idx) == 0 and _unfiled(idx) == wild  # exact filters: not patterns
    fan = _fan_out(idx, rng, 300)
    filters.update(fan)
    held = _unfiled(idx)
    assert held == wild + sum(1 for text in fan.values() if "+" in text or "#" in text)
    lookups = 0
    while not _level_counts(idx):  # a word count is priced one lookup in LEARN_EVERY
        _check(idx, filters, [f"s1/d{rng.randrange(10**6)}/t"])
        lookups += 1
        assert lookups <= 8 * LEARN_EVERY  # (a running mean: a few priced lookups)
    assert _unfiled(idx) == held  # chosen, nobody filed yet: the next lookups file
    lookups = 0
    while _unfiled(idx):
        _check(idx, filters, [f"s1/d{rng.randrange(10**6)}/t"])
        lookups += 1
    assert lookups == -(-held // 100)  # 100 a lookup
    _check(idx, filters, ["s1/d1/t", "s2/t/t", "d1/s1/t", "t/t/t"])
    assert _level_counts(idx) == 1
    filters.update(_iot_like(idx, rng, 10))
    assert _unfiled(idx) == 0  # filed at once now
    _check(idx, filters, [f"s{rng.randrange(40)}/d{rng.randrange(40)}/t" for _ in range(32)])


def test_a_filter_set_of_many_shapes_is_filed_by_level_as_it_comes() -> None:
    """Wildcards anywhere (more shapes than EAGER_SHAPES): the level index will be wanted,
    so the subscribers held back are filed at once, and later ones as they come."""
    rng = random.Random(5)
    idx = TopicIndex("mqtt")
    filters = _iot_like(idx, rng, 200)
    assert _unfiled(idx) > 0
    shapes = [
        "/".join("+" if mask >> i & 1 else f"w{i}" for i in range(length)) + tail
        for length in range(1, 6)
        for mask in range(1, 1 << length)
        for tail in ("", "/#")
    ]
    assert len(shapes) > EAGER_SHAPES
    for text in shapes:
        filters[idx.subscribe([text])] = text
    assert _unfiled(idx) == 0
    filters.update(_iot_like(idx, rng, 50))
    assert _unfiled(idx) == 0
    topics = ["w0/w1/w2", "w0/x/w2/w3/w4", "s1/d1/t", "w0", "x/w1/w2/w3/w4/w5"]
    _check(
        idx,
        filters,
        [*topics, *(f"s{rng.randrange(40)}/d{rng.randrange(400)}/t" for _ in range(40))],
    )


@pytest.mark.parametrize("mode", ["always", "never"])
def test_forced_paths_never_switch(mode: str) -> None:
    rng = random.Random(3)
    idx = TopicIndex("mqtt", tuning=Tuning(level_index=mode, level_crossover=100))  # type: ignore[arg-type]
    filters = _fan_out(idx, rng, 300)
    topics = ["s1/s2/t", "t/t/t", "s1/d1/x", "s1/s2"] * (4 * LEARN_EVERY)
    _check(idx, filters, topics)
    assert _level_counts(idx) == (1 if mode == "always" else 0) * 17


def test_unknown_level_mode_is_named() -> None:
    with pytest.raises(ValueError, match=r"Tuning\.level_index must be one of 'auto', 'always'"):
        Tuning(level_index="sometimes")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"Tuning\.level_crossover must be at least 0"):
        Tuning(level_crossover=-1)
