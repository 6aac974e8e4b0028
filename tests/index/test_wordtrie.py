"""Tests of skipfilter.index.wordtrie: candidates against brute force, tightness, pruning."""

from __future__ import annotations

from collections import Counter

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from skipfilter.errors import InvalidSelector
from skipfilter.index.wordtrie import WordTrie
from skipfilter.selectors import DELIMITERS, WORD_SYNTAXES, compile_selector

SYNTAXES = tuple(WORD_SYNTAXES)
LITERALS = ["a", "b", "", "$s"]
TOPIC_WORDS = [*LITERALS, "*", "#", "+", ">"]  # wildcard characters are literal in topics


def make_trie(syntax: str) -> WordTrie[str]:
    words = WORD_SYNTAXES[syntax]
    return WordTrie(words.delimiter, words.single, words.multi, words.multi_min)


def candidates(trie: WordTrie[str], topic: str, syntax: str = "amqp") -> list[str]:
    """The trie's walk as TopicIndex asks for it: MQTT's '$' rule applied."""
    out: list[str] = []
    words = WORD_SYNTAXES[syntax]
    trie.walk(topic.split(words.delimiter), out, words.dollar_rule and topic[:1] == "$")
    return out


def valid(pattern: str, syntax: str) -> bool:
    try:
        compile_selector(pattern, syntax)
    except InvalidSelector:
        return False
    return True


def model(patterns: set[str], topic: str, syntax: str) -> Counter[str]:
    """What the trie promises: the literal/single words before the first multi fit the topic's
    first words, and either a multi follows with at least its least word count left or the
    topic has exactly those words; under MQTT a '$' topic skips wildcard-first patterns."""
    facts = WORD_SYNTAXES[syntax]
    sep, single, multi = DELIMITERS[syntax], facts.single, facts.multi
    words = topic.split(sep)
    out: Counter[str] = Counter()
    for pattern in patterns:
        pwords = pattern.split(sep)
        head = pwords[: pwords.index(multi)] if multi in pwords else pwords
        fits = len(head) <= len(words) and all(
            p in (single, w) for p, w in zip(head, words, strict=False)
        )
        if multi in pwords:
            fits = fits and len(words) - len(head) >= facts.multi_min
        else:
            fits = fits and len(head) == len(words)
        if facts.dollar_rule and topic[:1] == "$" and pwords[0] in (single, multi):
            fits = False
        if fits:
            out[pattern] += 1
    return out


def patterns_of(syntax: str) -> st.SearchStrategy[str]:
    sep = DELIMITERS[syntax]
    words = st.sampled_from([*LITERALS, WORD_SYNTAXES[syntax].single, WORD_SYNTAXES[syntax].multi])
    return st.lists(words, min_size=1, max_size=4).map(sep.join)


def topics_of(syntax: str) -> st.SearchStrategy[str]:
    words = st.sampled_from(TOPIC_WORDS)
    return st.lists(words, min_size=1, max_size=5).map(DELIMITERS[syntax].join)


@st.composite
def scenarios(draw: st.DrawFn) -> tuple[str, list[tuple[bool, str]], list[str]]:
    syntax = draw(st.sampled_from(SYNTAXES))
    ops = draw(st.lists(st.tuples(st.booleans(), patterns_of(syntax)), max_size=25))
    topics = draw(st.lists(topics_of(syntax), min_size=1, max_size=8))
    return syntax, ops, topics


def check(trie: WordTrie[str], stored: set[str], topics: list[str], syntax: str) -> None:
    assert len(trie) == len(stored)
    for topic in topics:
        got = candidates(trie, topic, syntax)
        counts = Counter(got)
        assert all(n == 1 for n in counts.values()), got  # each item at most once
        assert counts == model(stored, topic, syntax)  # exactly the promised shape
        matching = {p for p in stored if compile_selector(p, syntax).test(topic)}
        assert matching <= counts.keys(), (topic, matching - counts.keys())  # a superset


@settings(max_examples=200, deadline=None)
@given(scenarios())
def test_candidates_superset_of_matches(
    scenario: tuple[str, list[tuple[bool, str]], list[str]],
) -> None:
    syntax, ops, topics = scenario
    sep = DELIMITERS[syntax]
    trie = make_trie(syntax)
    stored: set[str] = set()
    for adding, pattern in ops:
        if not valid(pattern, syntax):
            continue
        if adding and pattern not in stored:
            trie.add(pattern.split(sep), pattern)
            stored.add(pattern)
        elif pattern in stored:
            trie.remove(pattern.split(sep), pattern)
            stored.discard(pattern)
        else:
            with pytest.raises(KeyError):
                trie.remove(pattern.split(sep), pattern)
        check(trie, stored, topics, syntax)
    for pattern in sorted(stored):
        trie.remove(pattern.split(sep), pattern)
    assert len(trie) == 0
    assert trie._node_count() == 0
    assert all(candidates(trie, topic) == [] for topic in topics)


@pytest.mark.parametrize(
    ("syntax", "patterns", "topic", "expected"),
    [
        ("amqp", ["a.b", "c.*", "a.#"], "a.b", {"a.b", "a.#"}),
        ("amqp", ["a.b", "c.*", "a.#"], "a", {"a.#"}),  # '#' may match zero words
        ("amqp", ["a.b", "c.*", "a.#"], "c.x", {"c.*"}),
        ("amqp", ["a.b", "c.*", "a.#"], "c", set()),
        ("amqp", ["a.b", "c.*", "a.#"], "c.x.y", set()),
        ("amqp", ["*.b", "*.*.b", "#.b", "a.#.b"], "a.b", {"*.b", "#.b", "a.#.b"}),
        ("amqp", ["a.*", "*"], "a.*", {"a.*"}),  # a '*' in a topic is a literal word
        ("amqp", ["a..b", "a.*.b"], "a..b", {"a..b", "a.*.b"}),  # "" is a word
        ("nats", ["a.>", "a.*", "b.>"], "a", set()),  # '>' needs one token
        ("nats", ["a.>", "a.*", "b.>"], "a.x.y", {"a.>"}),
        ("nats", [">", "*.>"], "a", {">"}),
        ("mqtt", ["+/b", "$s/#", "#", "a/+"], "$s/b", {"$s/#"}),  # the '$' rule
        ("mqtt", ["+/b", "$s/#", "#", "a/+"], "a/b/c", {"#"}),
        ("mqtt", ["+/b", "$s/+", "#"], "$s/b", {"$s/+"}),
        ("mqtt", ["$s/#", "+"], "$t", set()),
    ],
)
def test_candidates_are_tight(
    syntax: str, patterns: list[str], topic: str, expected: set[str]
) -> None:
    trie = make_trie(syntax)
    for pattern in patterns:
        trie.add(pattern.split(DELIMITERS[syntax]), pattern)
    got = candidates(trie, topic, syntax)
    assert len(got) == len(set(got))
    assert set(got) == expected


def test_candidates_append_to_out() -> None:
    trie = make_trie("amqp")
    trie.add(["a", "#"], "a.#")
    out = ["already"]
    trie.candidates("a.b", out)
    assert out == ["already", "a.#"]


@pytest.mark.parametrize(
    ("words", "item"),
    [
        (["x", "y"], "x.y"),  # no such path
        (["a", "b"], "other"),  # the path exists, the item is not there
        (["a", "*"], "a.b"),  # stored under other words
        (["a", "#"], "a.b"),  # tails, not ends
        (["a"], "a.#"),  # ends, not tails
        (["a", "b", "c"], "a.b"),  # the walk runs past the item's node
    ],
)
def test_remove_absent_raises_and_changes_nothing(words: list[str], item: str) -> None:
    trie = make_trie("amqp")
    for pattern in ("a.b", "a.#", "a.*.c"):
        trie.add(pattern.split("."), pattern)
    before = (len(trie), trie._node_count(), sorted(candidates(trie, "a.b")))
    with pytest.raises(KeyError):
        trie.remove(words, item)
    assert (len(trie), trie._node_count(), sorted(candidates(trie, "a.b"))) == before


def test_remove_prunes_only_empty_nodes() -> None:
    trie = make_trie("amqp")
    trie.add(["a", "*", "c"], "a.*.c")
    trie.add(["a", "#"], "a.#")
    assert trie._node_count() == 3
    trie.remove(["a", "*", "c"], "a.*.c")
    assert trie._node_count() == 1  # "a" keeps its tails
    assert candidates(trie, "a.x.c") == ["a.#"]
    trie.remove(["a", "#", "ignored"], "a.#")  # words after the multi do not matter
    assert (len(trie), trie._node_count()) == (0, 0)


def test_add_twice_under_same_words_raises() -> None:
    trie = make_trie("mqtt")
    trie.add(["a", "+"], "p")
    with pytest.raises(ValueError, match="already stored"):
        trie.add(["a", "+"], "p")
    assert len(trie) == 1
    assert candidates(trie, "a/b", "mqtt") == ["p"]


def test_constructor_rejects_ambiguous_wildcards() -> None:
    with pytest.raises(ValueError, match="wildcards"):
        WordTrie(".", "*", "*")
    with pytest.raises(ValueError, match="delimiter"):
        WordTrie("", "*", "#")
    with pytest.raises(ValueError, match="multi_min must be 0 or 1, got 2"):
        WordTrie(".", "*", "#", multi_min=2)
