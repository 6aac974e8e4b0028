"""Bad input to the library's entry points raises TypeError or ValueError naming the argument
(docs/semantics.md, "Bad input"), and changes nothing: what a caller reads to fix its call,
instead of ``'NoneType' object is not subscriptable`` from deep inside a lookup."""

from __future__ import annotations

import re
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from skipfilter import SkipFilter, TopicIndex

#: Per syntax: a selector, and topics it can publish to (the first matches the selector).
CASES = {
    "mercure": ("https://e.com/books/{id}", ["https://e.com/books/1", "https://e.com/a"]),
    "regex": ("^https://e\\.com/books/.*$", ["https://e.com/books/1", "https://e.com/a"]),
    "urlpattern": ("https://e.com/books/:id", ["https://e.com/books/1", "https://e.com/a"]),
    "amqp": ("books.*", ["books.1", "authors.2"]),
    "nats": ("books.*", ["books.1", "authors.2"]),
    "mqtt": ("books/+", ["books/1", "authors/2"]),
}

#: Values that are not a topic: every type a caller plausibly passes by mistake.
NOT_TEXT = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.floats(allow_nan=False),
    st.binary(max_size=8),
    st.lists(st.text(max_size=3), max_size=2),
    st.dictionaries(st.text(max_size=2), st.integers(), max_size=2),
    st.tuples(st.text(max_size=2)),
)
#: Values that are not a list of topics (a list or tuple of str).
NOT_A_LIST = st.one_of(
    NOT_TEXT.filter(lambda v: not isinstance(v, list | tuple)),
    st.text(max_size=5),
    st.frozensets(st.text(max_size=3), max_size=2),
)


NO_LIST = "must be a list of selectors, (got |not a single string)"


def index(syntax: str) -> TopicIndex:
    selector, _ = CASES[syntax]
    idx = TopicIndex(syntax)
    idx.subscribe([selector])
    idx.subscribe([CASES[syntax][1][1]])
    return idx


@pytest.mark.parametrize("syntax", sorted(CASES))
@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_match_names_the_topic_that_is_no_str(syntax: str, data: st.DataObject) -> None:
    idx = index(syntax)
    topics = list(CASES[syntax][1])
    expected = idx.match(topics)
    bad = data.draw(NOT_TEXT)
    at = data.draw(st.integers(0, len(topics)))
    given_topics = [*topics[:at], bad, *topics[at:]]
    as_tuple = data.draw(st.booleans())
    with pytest.raises(TypeError) as caught:
        idx.match(tuple(given_topics) if as_tuple else given_topics)
    assert str(caught.value).startswith(f"topics[{at}] must be a str, got {type(bad).__name__}")
    assert idx.match(topics) == expected  # nothing disturbed


@pytest.mark.parametrize("syntax", sorted(CASES))
@settings(max_examples=60, deadline=None)
@given(bad=NOT_A_LIST)
def test_match_names_topics_that_are_no_list(syntax: str, bad: Any) -> None:
    idx = index(syntax)
    with pytest.raises(TypeError, match=r"^topics must be a list of") as caught:
        idx.match(bad)
    if not isinstance(bad, str | bytes):
        assert type(bad).__name__ in str(caught.value)


@pytest.mark.parametrize("syntax", sorted(CASES))
def test_match_still_answers_lists_and_tuples_and_sequences(syntax: str) -> None:
    idx = index(syntax)
    topics = CASES[syntax][1]

    class Topics(list[str]):
        pass

    assert idx.match(topics) == idx.match(tuple(topics)) == idx.match(Topics(topics))
    assert list(idx.match([topics[0]])) == [0] and list(idx.match([topics[1]])) == [1]


def test_the_issues_examples() -> None:
    idx = TopicIndex("mercure")
    idx.subscribe(["https://e.com/a"])
    # deliberately ill-typed, hence the ignores: the runtime check is what is tested
    with pytest.raises(TypeError, match=re.escape("topics[0] must be a str, got NoneType")):
        idx.match([None])  # type: ignore[list-item]
        # was: 'NoneType' object is not subscriptable
    with pytest.raises(TypeError, match=re.escape("topics must be a list of str, got NoneType")):
        idx.match(None)  # type: ignore[arg-type]
        # was: object of type 'NoneType' has no len()
    with pytest.raises(TypeError, match=re.escape("topics[1] must be a str, got bytes")):
        idx.match(["https://e.com/a", b"https://e.com/a"])  # type: ignore[list-item]
        # was: silently matched nothing


@pytest.mark.parametrize("syntax", sorted(CASES))
@settings(max_examples=40, deadline=None)
@given(bad=NOT_A_LIST.filter(lambda v: not isinstance(v, str | frozenset | dict)))
def test_subscribe_names_selectors_and_allowed_that_are_no_list(syntax: str, bad: Any) -> None:
    idx = index(syntax)
    selector = CASES[syntax][0]
    with pytest.raises(TypeError, match="^selectors " + NO_LIST):
        idx.subscribe(bad)
    if bad is not None:  # allowed=None: no private updates
        with pytest.raises(TypeError, match="^allowed " + NO_LIST):
            idx.subscribe([selector], allowed=bad)
    with pytest.raises(TypeError, match=r"^selectors must be strings or TypedSelectors, got "):
        idx.subscribe([selector, 7])  # type: ignore[list-item]
    assert len(idx) == 2  # nothing was added


def test_unsubscribe_of_an_unknown_id_is_false_and_changes_nothing() -> None:
    idx = index("mercure")
    for unknown in (99, -1, "0", None, 2**70):
        assert idx.unsubscribe(unknown) is False  # type: ignore[arg-type]
    assert len(idx) == 2 and list(idx.match(CASES["mercure"][1])) == [0, 1]


def test_match_any_and_match_ids_of_no_keys_are_empty() -> None:
    sf: SkipFilter[int, int] = SkipFilter(lambda value, key: value % key == 0)
    sf.add(4)
    assert sf.match_any() == []  # Go's MatchAny ORs no bitmaps: no values
    assert list(sf.match_ids()) == []
    assert sf.match_any(2) == [4]


@settings(max_examples=40, deadline=None)
@given(
    bad=st.one_of(
        st.lists(st.integers(), max_size=2),
        st.dictionaries(st.integers(), st.integers(), max_size=1),
        st.sets(st.integers(), max_size=2),
    ),
    before=st.integers(0, 2),
)
def test_skipfilter_names_the_key_or_value_that_is_not_hashable(bad: Any, before: int) -> None:
    sf: SkipFilter[int, int] = SkipFilter(lambda value, key: value % key == 0)
    sf.add(4)
    keys = [2] * before + [bad]
    for match in (sf.match_any, sf.match_ids):
        with pytest.raises(TypeError, match=re.escape(f"keys[{before}] must be hashable, got ")):
            match(*keys)
    for change in (sf.add, sf.remove):
        with pytest.raises(TypeError, match=r"^value must be hashable, got "):
            change(bad)
    assert list(sf) == [4] and sf.match_any(2) == [4]


def test_a_test_functions_own_type_error_is_not_renamed() -> None:
    sf: SkipFilter[int, Any] = SkipFilter(lambda value, key: value % key == 0)
    sf.add(4)
    with pytest.raises(TypeError, match="unsupported operand"):
        sf.match_any("x")  # hashable: the error is the test's, passed on as it is


@pytest.mark.parametrize(
    ("kwargs", "error", "message"),
    [
        ({"size": -1}, ValueError, "size must be positive, got -1"),
        ({"size": 0}, ValueError, "size must be positive, got 0"),
        ({"size": 1.5}, TypeError, "size must be an int, got float"),
        ({"size": True}, TypeError, "size must be an int, got bool"),
        ({"first_id": -1}, ValueError, "first_id must be in [0, 2**64), got -1"),
        ({"first_id": "1"}, TypeError, "first_id must be an int, got str"),
    ],
)
def test_skipfilter_arguments(kwargs: dict[str, Any], error: type[Exception], message: str) -> None:
    with pytest.raises(error, match=re.escape(message)):
        SkipFilter(lambda value, key: True, **kwargs)
