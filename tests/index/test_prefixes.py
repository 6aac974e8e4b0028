"""PrefixLengths against the brute force: every present prefix of a topic is probed."""

from __future__ import annotations

from collections import Counter

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from skipfilter.index.prefixes import PrefixLengths

WORDS = st.text(alphabet="ab/", max_size=5)


@settings(max_examples=300, deadline=None)
@given(
    ops=st.lists(st.tuples(st.booleans(), WORDS), max_size=40),
    topics=st.lists(WORDS, max_size=8),
)
def test_every_present_prefix_of_a_topic_is_among_the_lengths(
    ops: list[tuple[bool, str]], topics: list[str]
) -> None:
    prefixes = PrefixLengths()
    present: Counter[str] = Counter()
    for adding, prefix in ops:
        if adding:
            prefixes.add(prefix)
            present[prefix] += 1
        elif present[prefix]:
            prefixes.remove(prefix)
            present[prefix] -= 1
        present += Counter()  # drop zero counts
        assert len(prefixes) == len(present)
        for topic in [*topics, *present]:
            lengths = prefixes.lengths(topic)
            assert list(lengths) == sorted(set(lengths))
            wanted = {len(p) for p in present if topic.startswith(p)}
            assert wanted <= set(lengths), (topic, lengths, sorted(present))


def test_a_shared_head_narrows_the_lengths_probed() -> None:
    prefixes = PrefixLengths()
    for prefix in ["/books/", "/books/archive/", "/users/", "/users", "/orders/x/"]:
        prefixes.add(prefix)
    assert prefixes.lengths("/books/1") == (7, 15)
    assert prefixes.lengths("/users/1") == (6, 7)
    assert prefixes.lengths("/news/1") == ()
    prefixes.add("")
    assert prefixes.lengths("/news/1") == (0,)
    assert prefixes.lengths("/books/1") == (0, 7, 15)


def test_removing_what_was_never_added_is_an_error_and_changes_nothing() -> None:
    prefixes = PrefixLengths()
    prefixes.add("/a/")
    with pytest.raises(KeyError):
        prefixes.remove("/b/")
    assert prefixes.lengths("/a/x") == (3,)
