"""TopicIndex against a brute-force oracle in every syntax, with private updates and threads."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

import skipfilter.index.topic_index as index_module
from skipfilter import InvalidSelector
from skipfilter.errors import InvalidTopic
from skipfilter.index import TopicIndex, Tuning
from skipfilter.index.path_choice import WALK_EVERY
from skipfilter.index.table import SelectorTable
from skipfilter.selectors import WORD_SYNTAXES, compile_selector, matches, topic_problem
from tests.index.concurrency import check_linearizable

# Per syntax: selectors and topics over a small alphabet, so matches happen often.
SELECTORS = {
    "mercure": [
        "*",
        "/a",
        "/a/b",
        "/b",
        "/a/{x}",
        "/{x}/b",
        "/a{/x}",
        "{+p}",
        "/a/{x}{?q}",
        "/{x}",
        "/a/{x",
        "/a/{x}/b",
        "/c/{x}",
        "/c/{y}",
        "/c{/y*}",
        "{/x,y}",
    ],
    "amqp": [
        "#",
        "a",
        "a.b",
        "a.*",
        "*.b",
        "a.#",
        "#.b",
        "a.#.b",
        "*",
        "*.*",
        "b.#",
        "c.*.a",
        "",
        "#.#",
        "#.*",
        "a.#.#",
        "*.#.b",
    ],
    "nats": [">", "a", "a.b", "a.*", "*.b", "a.>", "*.>", "*", "b.*", "c.*.a"],
    "mqtt": ["#", "a", "a/b", "a/+", "+/b", "a/#", "+", "+/+", "$s/#", "$s/a", "c/+/a", "b/#"],
    "regex": [r"a", r"a\.b", r"a\..*", r".*\.b", r"(a|b)\.b", r"c.*", r"[ab]", r".*"],
}
TOPICS = {
    "mercure": [
        "/a",
        "/a/b",
        "/b",
        "/b/b",
        "/a/1",
        "/a/b/b",
        "/a?q=1",
        "/c/1",
        "/c/1/2",
        "/c",
        "",
        "/a/{x}",
        "/a/{x",
        "/1,2",
    ],
    "amqp": [
        "a",
        "a.b",
        "b",
        "b.b",
        "a.c",
        "a.b.b",
        "c.d.a",
        "",
        "a..b",
        "c.a.a",
        "a.*",
        ".",
        "a.b.c.d.e",
    ],
    "nats": ["a", "a.b", "b", "b.b", "a.c", "a.b.b", "c.d.a", "c.a", "a.*", "a..b", "", "a*"],
    "mqtt": [
        "a",
        "a/b",
        "b",
        "b/b",
        "a/c",
        "a/b/b",
        "$s/a",
        "$s",
        "c/d/a",
        "",
        "a/",
        "a/+",
        "/",
        "/a",
        "a//b",
    ],
    "regex": ["a", "a.b", "b", "b.b", "a.c", "c", "cab", ""],
}


class IndexMachine(RuleBasedStateMachine):
    """Subscribe/unsubscribe/match against an oracle that tests every subscriber."""

    def __init__(self) -> None:
        super().__init__()
        self.syntax = "mercure"
        self.index = TopicIndex()
        self.oracle: dict[int, tuple[list[str], list[str] | None]] = {}

    @initialize(
        syntax=st.sampled_from(sorted(SELECTORS)),
        threshold=st.sampled_from([0, 1, 8]),
        cache_size=st.sampled_from([1, 2, 1000]),
        memo_min=st.sampled_from([1, 3]),
        memo_eager=st.sampled_from([2, 8]),
        seen_window=st.sampled_from([1, 4096]),
        levels=st.sampled_from(["auto", "always", "never"]),
        crossover=st.sampled_from([0, 50, 200]),
        filing=st.sampled_from([1, 2, 1024]),
    )
    def make(
        self,
        syntax: str,
        threshold: int,
        cache_size: int,
        memo_min: int,
        memo_eager: int,
        seen_window: int,
        levels: str,
        crossover: int,
        filing: int,
    ) -> None:
        tuning = Tuning(
            memo_min_bitmaps=memo_min,
            memo_eager_bitmaps=memo_eager,
            seen_window=seen_window,
            group_cache_threshold=threshold,
            level_index=levels,  # type: ignore[arg-type]
            level_crossover=crossover,
            level_filing_batch=filing,  # 1, 2: lookups while the level index catches up
        )
        self.syntax = syntax
        self.index = TopicIndex(syntax, cache_size=cache_size, first_id=2**32 - 4, tuning=tuning)

    @rule(data=st.data())
    def subscribe(self, data: st.DataObject) -> None:
        pool = SELECTORS[self.syntax]
        selectors = data.draw(st.lists(st.sampled_from(pool), min_size=1, max_size=3))
        allowed = data.draw(st.none() | st.lists(st.sampled_from(pool), max_size=2))
        sid = self.index.subscribe(selectors, allowed=allowed, payload=("p", len(self.oracle)))
        assert sid not in self.oracle
        self.oracle[sid] = (selectors, allowed)

    @precondition(lambda self: bool(self.oracle))
    @rule(data=st.data())
    def unsubscribe(self, data: st.DataObject) -> None:
        sid = data.draw(st.sampled_from(sorted(self.oracle)))
        assert self.index.unsubscribe(sid)
        assert not self.index.unsubscribe(sid)
        del self.oracle[sid]

    @precondition(lambda self: self.syntax in WORD_SYNTAXES)
    @rule(words=st.integers(0, 7))
    def switch_path(self, words: int) -> None:
        """Flip the path that answers topics of ``words`` words (trie <-> level index), as
        the learned choice does when a pattern mix changes, and sample at the next lookup."""
        for table in (self.index._subscribed, self.index._authorized):
            assert isinstance(table, SelectorTable)  # one syntax: no MixedTable
            assert table._words is not None
            if table._words._levels is None:  # Tuning(level_index="never"): one path
                return
            choice = table._words._choice
            if choice.level[words] is None:  # not priced yet: price it now
                choice.observe(words, 0.0)
            choice.level[words] = not choice.level[words]
            table._words._tick = 1  # price the next lookup
            choice._walks[words] = WALK_EVERY - 1  # and walk then, on the level path

    @rule(data=st.data(), private=st.booleans())
    def match(self, data: st.DataObject, private: bool) -> None:
        topics = data.draw(st.lists(st.sampled_from(TOPICS[self.syntax]), min_size=1, max_size=3))
        syntax = self.syntax

        def hit(selectors: list[str] | None) -> bool:
            return any(matches(s, t, syntax) for s in selectors or () for t in topics)

        expected = sorted(
            sid
            for sid, (sels, allowed) in self.oracle.items()
            if hit(sels) and (not private or hit(allowed))
        )
        if any(topic_problem(syntax, t) for t in topics):  # a name the broker refuses
            with pytest.raises(InvalidTopic):
                self.index.match(topics, private=private)
            return
        got = self.index.match(topics, private=private)
        assert list(got) == expected, (topics, private)
        for _ in range(2):  # seen twice: memoized now
            assert list(self.index.match(topics, private=private)) == expected
        got.clear()  # the result is the caller's: clearing it changes nothing
        assert list(self.index.match(topics, private=private)) == expected
        assert len(list(self.index.payloads(expected))) == len(expected)

    @invariant()
    def sizes_agree(self) -> None:
        assert len(self.index) == len(self.oracle)


TestIndexMachine = IndexMachine.TestCase
TestIndexMachine.settings = settings(max_examples=200, stateful_step_count=30, deadline=None)


def test_private_update_needs_subscription_and_authorization_on_any_topic() -> None:
    idx = TopicIndex()
    subscribed_only = idx.subscribe(["/books/{id}"])
    both = idx.subscribe(["/books/{id}"], allowed=["/users/alice"])
    authorized_only = idx.subscribe(["/news"], allowed=["*"])
    public = idx.match(["/books/1", "/users/alice"])
    assert list(public) == [subscribed_only, both]
    private = idx.match(["/books/1", "/users/alice"], private=True)
    assert list(private) == [both]  # authorized through a different topic of the update
    assert list(idx.match(["/books/1"], private=True)) == []
    assert list(idx.match(["/news"], private=True)) == [authorized_only]


def test_many_templates_in_one_prefix_group_use_the_cache_and_stay_exact() -> None:
    idx = TopicIndex()
    sids = [idx.subscribe([f"https://example.com/{{a}}/{i}/{{b}}"]) for i in range(50)]
    assert idx.stats()["subscribed_cached_groups"] == 1
    assert list(idx.match(["https://example.com/x/7/y"])) == [sids[7]]
    late = idx.subscribe(["https://example.com/{a}/7/{b}"])  # same selector: deduplicated
    assert list(idx.match(["https://example.com/x/7/y"])) == [sids[7], late]
    idx.unsubscribe(sids[7])
    assert list(idx.match(["https://example.com/x/7/y"])) == [late]
    assert idx.stats()["subscribed_patterns"] == 50


def test_ids_cross_two_to_the_32() -> None:
    idx = TopicIndex(first_id=2**32 - 1)
    a = idx.subscribe(["/a"])
    b = idx.subscribe(["/{x}"])
    assert (a, b) == (2**32 - 1, 2**32)
    assert list(idx.match(["/a"])) == [a, b]


@pytest.mark.parametrize(
    ("call", "error", "message"),
    [
        (lambda i: i.subscribe("/a"), TypeError, "not a single string"),
        (lambda i: i.subscribe([]), ValueError, "at least one selector"),
        (lambda i: i.subscribe(["/a", 3]), TypeError, "got int"),
        (lambda i: i.subscribe(["/a"], allowed="/a"), TypeError, "allowed must be a list"),
        (lambda i: i.match("/a"), TypeError, "not a single string"),
    ],
)
def test_bad_input_is_named_and_changes_nothing(call, error, message) -> None:  # type: ignore[no-untyped-def]
    idx = TopicIndex()
    keep = idx.subscribe(["/a"])
    with pytest.raises(error, match=message):
        call(idx)
    assert len(idx) == 1 and list(idx.match(["/a"])) == [keep]


def test_invalid_selector_rejects_the_whole_subscription() -> None:
    idx = TopicIndex("nats")
    with pytest.raises(InvalidSelector, match="column"):
        idx.subscribe(["a.b", "a.>.b"])
    assert len(idx) == 0 and list(idx.match(["a.b"])) == []
    assert idx.stats()["subscribed_exact_topics"] == 0


def test_unparsable_mercure_template_is_an_exact_selector() -> None:
    idx = TopicIndex()
    sid = idx.subscribe(["https://x/{id"])
    assert list(idx.match(["https://x/{id"])) == [sid]
    assert list(idx.match(["https://x/1"])) == []


def test_unknown_syntax_is_named() -> None:
    with pytest.raises(ValueError, match="unknown syntax 'x'"):
        TopicIndex("x")


@pytest.mark.parametrize(
    ("knobs", "error", "message"),
    [
        ({"seen_window": 0}, ValueError, "Tuning.seen_window must be at least 1, got 0"),
        ({"memo_min_bitmaps": -1}, ValueError, "memo_min_bitmaps must be at least 1"),
        ({"group_cache_threshold": -1}, ValueError, "group_cache_threshold must be at least 0"),
        ({"memo_eager_bitmaps": 2.5}, TypeError, "memo_eager_bitmaps must be an int"),
        ({"seen_window": True}, TypeError, "seen_window must be an int"),
    ],
)
def test_bad_tuning_is_named(
    knobs: dict[str, object], error: type[Exception], message: str
) -> None:
    with pytest.raises(error, match=message):
        Tuning(**knobs)  # type: ignore[arg-type]


def test_tuning_is_passed_per_index() -> None:
    """Two indexes with other tunings in one process: the eager memo kicks in only where
    asked (no module global to patch)."""
    eager, lazy = TopicIndex("amqp", tuning=Tuning(memo_eager_bitmaps=2)), TopicIndex("amqp")
    for idx in (eager, lazy):
        idx.subscribe(["a.*"])
        idx.subscribe(["*.b"])
        idx.match(["a.b"])
    assert isinstance(eager._subscribed, SelectorTable)  # one syntax: no MixedTable
    assert isinstance(lazy._subscribed, SelectorTable)
    assert "a.b" in eager._subscribed._memo
    assert "a.b" not in lazy._subscribed._memo
    with pytest.raises(TypeError, match="tuning must be a Tuning"):
        TopicIndex(tuning={"seen_window": 1})  # type: ignore[arg-type]


def test_non_positive_cache_size_is_named() -> None:
    with pytest.raises(ValueError, match="cache_size must be positive, got 0"):
        TopicIndex("amqp", cache_size=0)


def test_threads_respect_completed_subscribes_and_unsubscribes() -> None:
    """Every match reflects every subscribe/unsubscribe that returned before it began."""
    check_linearizable(
        TopicIndex("amqp", cache_size=4),
        ["a.*", "a.#", "*.b", "a.b", "#", "b.*"],
        ["a.b", "a.c", "b.b", "c.c"],
        lambda pattern, topic: matches(pattern, topic, "amqp"),
    )


@given(st.text(alphabet="ab{}*#./+>$ \t\x00", max_size=8) | st.text(max_size=12))
def test_plainly_exact_shortcut_agrees_with_the_compiler(text: str) -> None:
    for syntax, plainly_exact in index_module._PLAINLY_EXACT.items():
        if plainly_exact(text):
            assert compile_selector(text, syntax).exact == text, (syntax, text)


@pytest.mark.parametrize(
    ("syntax", "text"),
    [
        ("mercure", "https://example.com/books/1"),
        ("amqp", "stock.nyse.ibm"),
        ("nats", "orders.eu.created"),
        ("mqtt", "site7/dev81/temp"),
    ],
)
def test_plainly_exact_shortcut_takes_the_usual_exact_topic(syntax: str, text: str) -> None:
    """Subscribing with an exact topic skips the compiler (the shortcut is not vacuous)."""
    assert index_module._PLAINLY_EXACT[syntax](text)


def test_get_returns_what_was_registered() -> None:
    idx = TopicIndex()
    sid = idx.subscribe(["/a", "/b/{x}", "/a"], allowed=["*"], payload={"conn": 1})
    sub = idx.get(sid)
    assert sub is not None
    assert (sub.selectors, sub.allowed, sub.payload) == (("/a", "/b/{x}"), ("*",), {"conn": 1})
    assert idx.get(sid + 1) is None


@pytest.mark.parametrize(
    ("syntax", "selector", "matching", "not_matching"),
    [
        ("amqp", "a.#.b", ["a.b", "a.x.y.b"], ["a", "a.c", "b"]),
        ("amqp", "#.b", ["b", "x.b"], ["x", "b.x"]),
        ("amqp", "a.#", ["a", "a.x.y"], ["b", "ab"]),
        ("nats", "a.>", ["a.b", "a.b.c"], ["a", "b.a"]),
        ("mqtt", "+/b", ["x/b", "/b"], ["$SYS/b", "x/c"]),
        ("mqtt", "#", ["x", "x/y", "/"], ["$SYS", "$SYS/x"]),
        ("mqtt", "a/#", ["a", "a/b/c"], ["b/a"]),
    ],
)
def test_word_syntaxes_confirm_what_their_trie_only_suggests(
    syntax: str, selector: str, matching: list[str], not_matching: list[str]
) -> None:
    """A word trie over-approximates (words after ``#``, NATS ``>``, MQTT ``$``): a
    candidate the syntax rejects must not be delivered."""
    idx = TopicIndex(syntax)
    sid = idx.subscribe([selector])
    for topic in matching:
        assert list(idx.match([topic])) == [sid], topic
    for topic in not_matching:
        assert list(idx.match([topic])) == [], topic
