"""The level index against brute force: random subscribe/unsubscribe/match sequences per
word syntax, checked with compile_selector (zero-word '#', NATS '>', MQTT '$' topics, AMQP
empty words and the routing key "")."""

from __future__ import annotations

from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from skipfilter.errors import InvalidSelector
from skipfilter.index.level_index import LevelIndex
from skipfilter.selectors import WORD_SYNTAXES, compile_selector, topic_problem

# Tiny alphabets and short texts, so that matches, '$' topics and zero-word tails are common.
WORDS = {
    "amqp": ["a", "b", "", "*", "#"],
    "nats": ["a", "b", "*", ">"],
    "mqtt": ["a", "$s", "", "+", "#"],
}
TOPIC_WORDS = {"amqp": ["a", "b", "", "*"], "nats": ["a", "b", "a*"], "mqtt": ["a", "$s", ""]}


def _texts(syntax: str, words: list[str], lo: int) -> st.SearchStrategy[str]:
    sep = WORD_SYNTAXES[syntax].delimiter
    return st.lists(st.sampled_from(words), min_size=lo, max_size=3).map(sep.join)


class LevelMachine(RuleBasedStateMachine):
    """A LevelIndex and the compiled patterns it holds, matched one by one."""

    def __init__(self) -> None:
        super().__init__()
        self.syntax = "amqp"
        self.index = LevelIndex(WORD_SYNTAXES["amqp"], depth=4)
        self.filed: dict[int, tuple[str, list[str]]] = {}
        self.next_sid = 2**32 - 3  # across the 32-bit boundary

    @initialize(syntax=st.sampled_from(sorted(WORDS)), depth=st.sampled_from([2, 4, 16]))
    def make(self, syntax: str, depth: int) -> None:
        self.syntax = syntax
        self.index = LevelIndex(WORD_SYNTAXES[syntax], depth=depth)

    @rule(data=st.data())
    def add(self, data: st.DataObject) -> None:
        text = data.draw(_texts(self.syntax, WORDS[self.syntax], 0))
        try:
            compile_selector(text, self.syntax)
        except InvalidSelector:
            return
        words = self.index.words_of(text)
        if words is None:  # TopicIndex keeps it in the trie (test_index covers that)
            return
        sid, self.next_sid = self.next_sid, self.next_sid + 1
        self.index.add(words, sid)
        self.filed[sid] = (text, words)

    @precondition(lambda self: bool(self.filed))
    @rule(data=st.data())
    def remove(self, data: st.DataObject) -> None:
        sid = data.draw(st.sampled_from(sorted(self.filed)))
        _, words = self.filed.pop(sid)
        self.index.remove(words, sid)

    @rule(data=st.data())
    def match(self, data: st.DataObject) -> None:
        topic = data.draw(_texts(self.syntax, TOPIC_WORDS[self.syntax], 1) | st.just(""))
        if topic_problem(self.syntax, topic) is not None:
            return
        expected = sorted(
            sid
            for sid, (text, _) in self.filed.items()
            if compile_selector(text, self.syntax).matches(topic)
        )
        for _ in range(2):  # the second time from the kept ORs
            got = self.index.match(topic)
            assert (sorted(got) if got is not None else []) == expected, topic
            if got is not None:
                got.clear()  # the answer is the caller's: clearing it changes nothing

    @invariant()
    def size(self) -> None:
        assert len(self.index) == len(self.filed)


TestLevelMachine = LevelMachine.TestCase
TestLevelMachine.settings = settings(max_examples=300, stateful_step_count=40, deadline=None)


def test_edge_rules() -> None:
    """The rules a wrong level index gets wrong first, one by one."""
    mqtt = LevelIndex(WORD_SYNTAXES["mqtt"], depth=8)
    mqtt.add(["+"], 1)
    mqtt.add(["#"], 2)
    mqtt.add(["$s", "#"], 3)
    mqtt.add(["a", "#"], 4)
    assert sorted(mqtt.match("$s") or ()) == [3]  # wildcard-first filters skip '$' topics
    assert sorted(mqtt.match("a") or ()) == [1, 2, 4]  # 'a/#' matches 'a' (zero words)
    assert sorted(mqtt.match("a/b/c") or ()) == [2, 4]
    nats = LevelIndex(WORD_SYNTAXES["nats"], depth=8)
    nats.add(["a", ">"], 1)
    assert nats.match("a") is None and sorted(nats.match("a.b.c") or ()) == [1]
    amqp = LevelIndex(WORD_SYNTAXES["amqp"], depth=8)
    for sid, words in enumerate([[], ["#"], ["*"], ["", "#"], ["a", "", "*"]]):
        amqp.add(words, sid)
    assert sorted(amqp.match("") or ()) == [0, 1]  # "" has no words: '*' needs one
    assert sorted(amqp.match(".") or ()) == [1, 3]
    assert sorted(amqp.match("a..b") or ()) == [1, 4]
    amqp.match("a..b")  # now kept: the kept ORs follow later changes
    amqp.add(["a", "", "b"], 9)
    amqp.remove(["a", "", "*"], 4)
    assert sorted(amqp.match("a..b") or ()) == [1, 9]


def test_words_of_files_only_a_trailing_multi_wildcard() -> None:
    amqp = LevelIndex(WORD_SYNTAXES["amqp"], depth=4)
    assert amqp.words_of("a.#.#") == ["a", "#"]
    assert amqp.words_of("#.b") is None  # words after '#': the trie tests those
    assert amqp.words_of("a.b.c.d") is None  # too deep
    assert amqp.words_of("") == []  # the AMQP binding "" has no words
    mqtt = LevelIndex(WORD_SYNTAXES["mqtt"], depth=4)
    assert mqtt.words_of("") == [""]
