"""The shape index against the word trie's promise (the same model), and its bookkeeping."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from skipfilter.index.pattern import Pattern
from skipfilter.index.shapes import ShapeIndex
from skipfilter.index.word_index import WordIndex, needs_test
from skipfilter.selectors import DELIMITERS, WORD_SYNTAXES, compile_selector
from tests.index.test_wordtrie import model, patterns_of, topics_of, valid


def probe(shapes: ShapeIndex, syntax: str, topic: str, stored: Iterable[Pattern]) -> list[Pattern]:
    """What a topic finds through the shapes, as WordIndex asks: holder bitmaps, told apart
    by identity and named by the ``stored`` pattern owning each."""
    owner = {id(pattern.sids): pattern for pattern in stored}
    facts = WORD_SYNTAXES[syntax]
    words = topic.split(facts.delimiter)
    out: list[Pattern] = []
    for key, by_key in shapes.probes(len(words), facts.dollar_rule and topic[:1] == "$"):
        holders = by_key.get(key(words))
        if holders is not None:
            out.append(owner[id(holders)])
    return out


@st.composite
def scenarios(draw: st.DrawFn) -> tuple[str, list[tuple[bool, str]], list[str]]:
    syntax = draw(st.sampled_from(sorted(WORD_SYNTAXES)))
    ops = draw(st.lists(st.tuples(st.booleans(), patterns_of(syntax)), max_size=25))
    topics = draw(st.lists(topics_of(syntax), min_size=1, max_size=8))
    return syntax, ops, topics


@settings(max_examples=300, deadline=None)
@given(scenarios())
def test_shape_probes_find_what_the_trie_promises(
    scenario: tuple[str, list[tuple[bool, str]], list[str]],
) -> None:
    """Adds and removes in any order, probes cached and rebuilt: each topic finds exactly the
    patterns matching it ('$' rule, NATS '>' included); those with words after the multi
    wildcard, which need a test, are refused."""
    syntax, ops, topics = scenario
    shapes = ShapeIndex(WORD_SYNTAXES[syntax])
    stored: dict[str, Pattern] = {}
    topics = [t for t in topics if t]  # AMQP's "" has no words: TopicIndex's tests cover it
    for adding, text in ops:
        if not valid(text, syntax) or compile_selector(text, syntax).exact is not None:
            continue  # exact selectors go to the exact map, never here
        pattern = Pattern(compile_selector(text, syntax))
        if needs_test(WORD_SYNTAXES[syntax].words(text), WORD_SYNTAXES[syntax]):
            with pytest.raises(ValueError, match="after its multi wildcard"):
                shapes.add(pattern)
            continue
        if adding and text not in stored:
            stored[text] = pattern
            shapes.add(pattern)
        elif not adding and text in stored:
            shapes.remove(stored.pop(text))
        for topic in topics:
            found = probe(shapes, syntax, topic, stored.values())
            got = Counter(p.selector.text for p in found if p.selector)
            assert got == model(set(stored), topic, syntax), (topic, sorted(stored))
            assert all(p.selector and p.selector.matches(topic) for p in found)
    for text in list(stored):
        shapes.remove(stored.pop(text))
    assert all(probe(shapes, syntax, topic, ()) == [] for topic in topics)


def test_add_and_remove_say_when_the_shapes_change() -> None:
    shapes = ShapeIndex(WORD_SYNTAXES["mqtt"])
    a, b, c = (Pattern(compile_selector(t, "mqtt")) for t in ("s1/+/t", "s2/+/h", "s1/#"))
    assert shapes.add(a) is True  # a new shape: literals at 0 and 2, three words
    assert shapes.add(b) is False  # the same shape, another key
    before = shapes.probes(3, False)
    assert shapes.add(c) is True
    assert len(shapes.probes(3, False)) == len(before) + 1  # the cached probes were rebuilt
    assert shapes.remove(a) is False and shapes.remove(b) is True
    found = probe(shapes, "mqtt", "s1/x/t", (c,))
    assert [p.selector.text for p in found if p.selector] == ["s1/#"]
    assert shapes.probes(3, False)[0][1]["s1"] is c.sids  # the holders themselves, kept current


def test_word_index_walks_the_trie_where_shapes_are_many() -> None:
    """AMQP-style sets have dozens of shapes per word count: the trie's walk answers there,
    the shapes where they are few, and the walk wherever a pattern needs a test (``#.c``);
    every way gives the holders of exactly the matching patterns."""
    texts = [
        ".".join(w)
        for w in (
            ("a", "*", "c"),
            ("*", "b", "*"),
            ("a", "#"),
            ("a", "b", "c"),
            ("*", "*", "*"),
        )
    ]
    for length in range(1, 5):  # every mask of up to four words, with and without '#'
        for mask in range(2**length):
            head = ".".join("*" if mask >> j & 1 else f"w{j}" for j in range(length))
            texts += [head, f"{head}.#"] if "*" in head else [f"{head}.#"]
    for extra in ([], ["#.c", "a.#.c"]):  # patterns proved by their words; then tested ones
        index = WordIndex("amqp")
        patterns = {t: Pattern(compile_selector(t, "amqp")) for t in texts + extra}
        for sid, pattern in enumerate(patterns.values()):
            pattern.sids.add(sid)
            index.add(pattern)
        for topic in ("a.b.c", "a.x.c", "q.b.r", "a", "w0.w1.w2.w3", "w0.x.w2.w3.c", "w0"):
            expected = {t for t in patterns if compile_selector(t, "amqp").matches(topic)}
            out: list[Pattern] = []
            index.collect(topic, out)
            assert {p.selector.text for p in out if p.selector} == expected, topic
            found, k = index.union_words(topic, topic.split("."), False)
            names = list(patterns)
            assert {names[sid] for sid in found or ()} == expected and k == len(expected)
        assert index._plans[4] is None  # four words: too many shapes, the trie walks
        # one word: a few shapes, probed unless a pattern needing a test is filed
        assert (index._plans[1] is None) == bool(extra)
        assert index.shapes() == len(shapes_of(texts))
        for text in extra:  # the tested patterns go: the shapes answer again
            index.remove(patterns.pop(text))
        found, _ = index.union_words("w0.x", ["w0", "x"], False)
        expected = {t for t in patterns if compile_selector(t, "amqp").matches("w0.x")}
        assert {names[sid] for sid in found or ()} == expected
        assert index._plans[2] is not None


def shapes_of(texts: list[str]) -> ShapeIndex:
    """The shapes of ``texts`` alone (tested patterns are never filed by shape)."""
    shapes = ShapeIndex(WORD_SYNTAXES["amqp"])
    for text in set(texts):
        shapes.add(Pattern(compile_selector(text, "amqp")))
    return shapes


def test_delimiters_agree() -> None:
    assert all(DELIMITERS[s] == WORD_SYNTAXES[s].delimiter for s in WORD_SYNTAXES)
