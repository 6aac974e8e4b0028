"""Each syntax's per-message topic check refuses exactly what topic_problem names."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from skipfilter.errors import InvalidTopic
from skipfilter.selectors import SYNTAXES, topic_checker, topic_problem

# Words of the syntaxes' delimiters, wildcards and refused characters, and plain letters.
TOPICS = st.text(alphabet="ab/.+#*>\x00 \t", max_size=8)


@pytest.mark.parametrize("syntax", SYNTAXES)
@given(topics=st.lists(TOPICS, min_size=1, max_size=3))
def test_the_check_refuses_a_topic_exactly_when_it_has_a_problem(
    syntax: str, topics: list[str]
) -> None:
    check = topic_checker(syntax)
    problems = [topic_problem(syntax, topic) for topic in topics]
    first = next((p for p in problems if p is not None), None)
    if first is None:
        check(topics)
        return
    with pytest.raises(InvalidTopic) as refused:
        check(topics)
    assert str(refused.value).startswith(first.split(" in ")[0])


@pytest.mark.parametrize("syntax", SYNTAXES)
def test_the_check_refuses_a_bare_string(syntax: str) -> None:
    with pytest.raises(TypeError, match="not a single string"):
        topic_checker(syntax)("a/b")
