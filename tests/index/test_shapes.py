"""The shape index against the word trie's promise (the same model), and its bookkeeping."""

from __future__ import annotations

from collections import Counter

from hypothesis import given, settings
from hypothesis import strategies as st

from skipfilter.index.pattern import Pattern
from skipfilter.index.shapes import ShapeIndex
from skipfilter.index.word_index import WordIndex
from skipfilter.selectors import DELIMITERS, WORD_SYNTAXES, compile_selector
from tests.index.test_wordtrie import model, patterns_of, topics_of, valid


def probe(shapes: ShapeIndex, syntax: str, topic: str) -> list[Pattern]:
    """What a topic finds through the shapes, as WordIndex asks."""
    facts = WORD_SYNTAXES[syntax]
    words = topic.split(facts.delimiter)
    out: list[Pattern] = []
    for key, by_key in shapes.probes(len(words), facts.dollar_rule and topic[:1] == "$"):
        found = by_key.get(key(words))
        if isinstance(found, list):  # several patterns share the key
            assert len(found) > 1
            out.extend(found)
        elif found is not None:
            out.append(found)
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
    patterns whose words before the multi wildcard fit it ('$' rule, NATS '>' included)."""
    syntax, ops, topics = scenario
    shapes = ShapeIndex(WORD_SYNTAXES[syntax])
    stored: dict[str, Pattern] = {}
    topics = [t for t in topics if t]  # AMQP's "" has no words: TopicIndex's tests cover it
    for adding, text in ops:
        if not valid(text, syntax) or compile_selector(text, syntax).exact is not None:
            continue  # exact selectors go to the exact map, never here
        if adding and text not in stored:
            stored[text] = Pattern(compile_selector(text, syntax))
            shapes.add(stored[text])
        elif not adding and text in stored:
            shapes.remove(stored.pop(text))
        for topic in topics:
            got = Counter(p.selector.text for p in probe(shapes, syntax, topic) if p.selector)
            assert got == model(set(stored), topic, syntax), (topic, sorted(stored))
    for text in list(stored):
        shapes.remove(stored.pop(text))
    assert all(probe(shapes, syntax, topic) == [] for topic in topics)


def test_add_and_remove_say_when_the_shapes_change() -> None:
    shapes = ShapeIndex(WORD_SYNTAXES["mqtt"])
    a, b, c = (Pattern(compile_selector(t, "mqtt")) for t in ("s1/+/t", "s2/+/h", "s1/#"))
    assert shapes.add(a) is True  # a new shape: literals at 0 and 2, three words
    assert shapes.add(b) is False  # the same shape, another key
    before = shapes.probes(3, False)
    assert shapes.add(c) is True
    assert len(shapes.probes(3, False)) == len(before) + 1  # the cached probes were rebuilt
    assert shapes.remove(a) is False and shapes.remove(b) is True
    assert [p.selector.text for p in probe(shapes, "mqtt", "s1/x/t") if p.selector] == ["s1/#"]


def test_word_index_walks_the_trie_where_shapes_are_many() -> None:
    """AMQP-style sets have dozens of shapes per word count: the trie's walk answers there,
    the shapes where they are few; both give the same patterns, tested ones included."""
    index = WordIndex("amqp")
    texts = [
        ".".join(w)
        for w in (
            ("a", "*", "c"),
            ("*", "b", "*"),
            ("a", "#"),
            ("#", "c"),
            ("a", "b", "c"),
            ("*", "*", "*"),
        )
    ]
    for length in range(1, 5):  # every mask of up to four words, with and without '#'
        for mask in range(2**length):
            head = ".".join("*" if mask >> j & 1 else f"w{j}" for j in range(length))
            texts += [head, f"{head}.#"] if "*" in head else [f"{head}.#"]
    patterns = {t: Pattern(compile_selector(t, "amqp")) for t in texts}
    for pattern in patterns.values():
        index.add(pattern)
    for topic in ("a.b.c", "a.x.c", "q.b.r", "a", "w0.w1.w2.w3", "w0.x.w2.w3.c", "w0"):
        out: list[Pattern] = []
        index.collect(topic, out)
        expected = {t for t in texts if compile_selector(t, "amqp").matches(topic)}
        assert {p.selector.text for p in out if p.selector} == expected, topic
    assert index._plans[4] is None  # four words: too many shapes, the trie walks
    assert index._plans[1] is not None  # one word: a few shapes, probed


def test_delimiters_agree() -> None:
    assert all(DELIMITERS[s] == WORD_SYNTAXES[s].delimiter for s in WORD_SYNTAXES)
