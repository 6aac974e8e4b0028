"""TopicIndex on random word-syntax patterns (level index and trie mixed) against brute force."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from skipfilter.errors import InvalidSelector
from skipfilter.index import TopicIndex, Tuning
from skipfilter.index.tuning import LevelMode
from skipfilter.selectors import WORD_SYNTAXES, compile_selector, matches, topic_problem

WORDS = {
    "amqp": ["a", "b", "", "*", "#"],
    "nats": ["a", "b", "*", ">"],
    "mqtt": ["a", "$b", "", "+", "#"],
}
TOPIC_WORDS = {"amqp": ["a", "b", "", "*"], "nats": ["a", "b"], "mqtt": ["a", "$b", "b", ""]}


def _valid(syntax: str, text: str) -> bool:
    try:
        compile_selector(text, syntax)
    except InvalidSelector:
        return False
    return True


@st.composite
def cases(draw: st.DrawFn) -> tuple[str, list[str], list[int], list[str]]:
    syntax = draw(st.sampled_from(sorted(WORDS)))
    sep = WORD_SYNTAXES[syntax].delimiter
    joined = st.lists(st.sampled_from(WORDS[syntax]), min_size=0, max_size=6).map(sep.join)
    patterns = draw(st.lists(joined.filter(lambda t: _valid(syntax, t)), min_size=1, max_size=12))
    gone = draw(st.lists(st.integers(0, len(patterns) - 1), max_size=4, unique=True))
    words = st.lists(st.sampled_from(TOPIC_WORDS[syntax]), min_size=0, max_size=7)
    topics = draw(st.lists(words.map(sep.join), min_size=1, max_size=8))
    return syntax, patterns, gone, [t for t in topics if topic_problem(syntax, t) is None]


@settings(max_examples=400, deadline=None)
@given(
    cases(),
    st.sampled_from(["auto", "always", "never"]),
    st.sampled_from([0, 50, 200]),
    st.sampled_from([1, 3, 1024]),
)
def test_topic_index_with_levels_agrees_with_brute_force(
    case: tuple[str, list[str], list[int], list[str]],
    levels: LevelMode,
    crossover: int,
    filing: int,
) -> None:
    """Zero-word multi wildcards, NATS '>' needing a word, MQTT's '$' rule, AMQP's ""
    with no words, patterns too deep for the index: every answer as the selectors say,
    whichever path answers."""
    syntax, patterns, gone, topics = case
    tuning = Tuning(level_index=levels, level_crossover=crossover, level_filing_batch=filing)
    idx = TopicIndex(syntax, tuning=tuning)
    sids = [idx.subscribe([p]) for p in patterns]
    for i in gone:
        assert idx.unsubscribe(sids[i])
    live = {sid: p for i, (sid, p) in enumerate(zip(sids, patterns, strict=True)) if i not in gone}
    for topic in topics:
        expected = sorted(sid for sid, p in live.items() if matches(p, topic, syntax))
        assert list(idx.match([topic])) == expected, (topic, live)
