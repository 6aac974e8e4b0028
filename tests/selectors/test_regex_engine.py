"""The regex syntax matches in linear time (RE2), refuses what needs backtracking by name,
and refuses a program past its memory bound instead of building it (issue 39)."""

from __future__ import annotations

import re
import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from skipfilter import InvalidSelector, TopicIndex
from skipfilter.selectors import compile_selector
from skipfilter.selectors.selector import regex_of


@pytest.mark.parametrize("pattern", ["(a+)+$", "(a|a)*b", "(a*)*b", "(?:a|aa)+c"])
def test_nested_repeats_match_a_topic_in_linear_time(pattern: str) -> None:
    """``(a+)+$`` took 12 s on one 29-character topic with Python's ``re``."""
    index = TopicIndex("regex")
    index.subscribe([pattern])
    start = time.thread_time()
    assert not index.match(["a" * 29 + "!", "a" * 5000 + "!"])
    assert time.thread_time() - start < 0.1


@pytest.mark.parametrize(
    ("pattern", "named"),
    [
        (r"(a)\1", "backreference"),
        ("(?P<x>a)(?P=x)", "backreference"),
        ("a(?!b)", "lookaround"),
        ("(?<=a)b", "lookaround"),
        ("(?>a)", "atomic"),
    ],
)
def test_backtracking_constructs_are_refused_by_name(pattern: str, named: str) -> None:
    with pytest.raises(InvalidSelector, match=named):
        compile_selector(pattern, "regex")


def test_a_program_past_the_memory_bound_is_refused_not_built() -> None:
    start = time.thread_time()
    with pytest.raises(InvalidSelector, match="bytes of program"):
        compile_selector(r"\p{L}{1000}", "regex")
    assert time.thread_time() - start < 1.0


def test_a_lone_surrogate_topic_matches_nothing_and_the_source_is_kept() -> None:
    selector = compile_selector("a.*", "regex")
    assert not selector.matches("a\ud800") and selector.matches("ab")
    assert regex_of(selector) == "a.*"


_ATOMS = st.sampled_from(["a", "b", ".", "[ab]", "(?:a|b)", "(?:ab)", "[^a]"])
_QUANT = st.sampled_from(["", "*", "+", "?", "{2}", "{1,3}"])


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(_ATOMS, _QUANT), min_size=1, max_size=5), st.text("ab\n", max_size=8))
def test_re2_agrees_with_python_re_on_the_common_syntax(
    parts: list[tuple[str, str]], topic: str
) -> None:
    pattern = "".join(a + q for a, q in parts)
    assert compile_selector(pattern, "regex").matches(topic) is bool(re.fullmatch(pattern, topic))
