"""TopicIndex with ``extra_syntaxes``: selectors of several syntaxes in one id space.

The state machine subscribes and unsubscribes subscribers holding exact topics, plain
selectors and typed selectors of every syntax the index holds (``allowed`` lists mixing
syntaxes too), round-trips them through ``get()``, and checks public and private matches
against an oracle that tests each selector with its own syntax's matcher (URL Patterns:
the ``urlpattern`` package, straight).
"""

from __future__ import annotations

import pytest
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
    run_state_machine_as_test,
)

from skipfilter import InvalidSelector, TopicIndex, Tuning, TypedSelector
from skipfilter.errors import InvalidTopic
from skipfilter.index.mixed_table import MixedTable
from skipfilter.selectors import compile_selector, topic_problem
from tests.index.concurrency import check_linearizable
from tests.index.strategies import tunings
from tests.index.test_index import SELECTORS, TOPICS
from tests.mutants import mutant_search
from tests.selectors import urlcases
from tests.selectors.urloracle import urlpattern_oracle, urlpattern_valid

HUB = "https://example.com/.well-known/mercure"

#: (primary syntax, extra syntaxes): the hub's compatibility mode first, then others.
CONFIGS = [
    ("urlpattern", ("mercure",)),
    ("urlpattern", ("regex", "mercure")),
    ("urlpattern", ("amqp",)),
    ("mercure", ("regex", "amqp")),
    ("amqp", ("mercure",)),
    ("nats", ("mercure", "regex")),
    ("mqtt", ("amqp",)),
    ("regex", ("mercure",)),
]

#: Selectors that meet URL topics, per syntax, beside the pools of tests/index/test_index.
URL_SELECTORS = {
    "mercure": [
        "https://example.com/books/{id}",
        "https://example.com/{a}/{b}",
        "https://example.com/books{/id}{?q}",
        "{+any}",
        "https://example.com/books/1",
        "/books/{id}",
    ],
    "regex": [r"https://example\.com/books/.*", r".*/1", r"/books/1"],
    "amqp": ["#", "*", "https://example.*"],
}
URL_TOPICS = [
    "https://example.com/books/1",
    "https://EXAMPLE.com/books/1",
    "https://example.com/books/1?q=2",
    "https://example.com/Books/1",
    "/books/1",
    "https://example.com/a/b",
    "not a url",
    "*",
]

#: A subscriber as the oracle keeps it: its selectors and allowed ones, as given.
Given = list[TypedSelector | str]


class MixedMachine(RuleBasedStateMachine):
    """Subscribe, unsubscribe, round-trip and match against an oracle of every selector."""

    def __init__(self) -> None:
        super().__init__()
        self.syntax, self.extras = CONFIGS[0]
        self.base: str | None = HUB
        self.index = TopicIndex(self.syntax, base_url=HUB, extra_syntaxes=self.extras)
        self.subs: dict[int, tuple[Given, Given | None, object]] = {}

    @initialize(
        config=st.sampled_from(CONFIGS),
        cache_size=st.sampled_from([1, 2, 1000]),
        tuning=tunings,
    )
    def make(self, config: tuple[str, tuple[str, ...]], cache_size: int, tuning: Tuning) -> None:
        self.syntax, self.extras = config
        self.base = HUB if self.syntax == "urlpattern" else None
        self.index = TopicIndex(
            self.syntax,
            cache_size=cache_size,
            tuning=tuning,
            base_url=self.base,
            extra_syntaxes=self.extras,
            first_id=2**32 - 3,
        )

    # -- what the machine draws ------------------------------------------------------------

    def _url_mode(self) -> bool:
        return self.syntax == "urlpattern"

    def _text(self, draw: st.DrawFn, syntax: str) -> str:
        if syntax == "urlpattern":
            return draw(urlcases.patterns)
        pool = SELECTORS[syntax] + (URL_SELECTORS.get(syntax, []) if self._url_mode() else [])
        return draw(st.sampled_from(pool))

    def _topics(self) -> st.SearchStrategy[str]:
        if self._url_mode():
            return st.one_of(st.sampled_from(URL_TOPICS), urlcases.topics)
        pool = sorted({t for s in (self.syntax, *self.extras) for t in TOPICS[s]})
        return st.sampled_from(pool)

    def _selector(self, draw: st.DrawFn) -> TypedSelector | str:
        """An exact topic, a selector in the primary syntax (plain or typed), one typed in an
        extra syntax, or ``*`` typed exact or in an extra syntax."""
        kind = draw(st.sampled_from(["exact", "plain", "typed", "extra", "extra", "star"]))
        if kind == "exact":
            return TypedSelector(draw(self._topics()), "exact")
        if kind == "star":
            return TypedSelector("*", draw(st.sampled_from(["exact", *self.extras])))
        if kind == "extra":
            syntax = draw(st.sampled_from(self.extras))
            return TypedSelector(self._text(draw, syntax), syntax)
        text = self._text(draw, self.syntax)
        return TypedSelector(text, self.syntax) if kind == "typed" else text

    def _selectors(self, least: int, most: int) -> st.SearchStrategy[Given]:
        return st.lists(st.composite(self._selector)(), min_size=least, max_size=most)

    # -- the oracle ------------------------------------------------------------------------

    def _typed(self, selector: TypedSelector | str) -> tuple[str, str]:
        if isinstance(selector, str):
            return selector, self.syntax
        return selector.text, selector.syntax

    def _valid(self, selectors: Given) -> bool:
        for selector in selectors:
            text, kind = self._typed(selector)
            if kind == "urlpattern" and not urlpattern_valid(text, self.base):
                return False
            if kind not in ("exact", "urlpattern"):
                try:
                    compile_selector(text, kind)
                except InvalidSelector:
                    return False
        return True

    def _hit(self, selectors: Given | None, topics: list[str]) -> bool:
        for selector in selectors or ():
            text, kind = self._typed(selector)
            for topic in topics:
                if kind == "exact":
                    star = text == "*" and self.syntax in ("mercure", "urlpattern")
                    if star or text == topic:
                        return True
                elif kind == "urlpattern":
                    if urlpattern_oracle(text, topic, self.base):
                        return True
                elif compile_selector(text, kind).matches(topic):
                    return True
        return False

    def expected(self, topics: list[str], private: bool) -> list[int]:
        return sorted(
            sid
            for sid, (selectors, allowed, _) in self.subs.items()
            if self._hit(selectors, topics) and (not private or self._hit(allowed, topics))
        )

    # -- rules -----------------------------------------------------------------------------

    @rule(data=st.data())
    def subscribe(self, data: st.DataObject) -> None:
        selectors = data.draw(self._selectors(1, 3))
        allowed = data.draw(st.none() | self._selectors(0, 3))
        payload = ("p", len(self.subs))
        if not self._valid(selectors) or not self._valid(allowed or []):
            before = len(self.index)
            with pytest.raises(InvalidSelector):
                self.index.subscribe(selectors, allowed=allowed, payload=payload)
            assert len(self.index) == before
            return
        sid = self.index.subscribe(selectors, allowed=allowed, payload=payload)
        assert sid not in self.subs
        self.subs[sid] = (selectors, allowed, payload)

    @precondition(lambda self: bool(self.subs))
    @rule(data=st.data())
    def round_trip(self, data: st.DataObject) -> None:
        """What get() returns subscribes to the same subscription."""
        sid = data.draw(st.sampled_from(sorted(self.subs)))
        got = self.index.get(sid)
        assert got is not None and got.payload == self.subs[sid][2]
        again = self.index.subscribe(got.selectors, allowed=got.allowed, payload=got.payload)
        self.subs[again] = self.subs[sid]
        twin = self.index.get(again)
        assert twin is not None
        assert (twin.selectors, twin.allowed) == (got.selectors, got.allowed)

    @precondition(lambda self: bool(self.subs))
    @rule(data=st.data())
    def unsubscribe(self, data: st.DataObject) -> None:
        sid = data.draw(st.sampled_from(sorted(self.subs)))
        assert self.index.unsubscribe(sid)
        assert not self.index.unsubscribe(sid)
        del self.subs[sid]

    @rule(data=st.data(), private=st.booleans())
    def match(self, data: st.DataObject, private: bool) -> None:
        topics = data.draw(st.lists(self._topics(), min_size=1, max_size=3))
        if data.draw(st.booleans()):  # a topic some subscriber holds as an exact selector
            held = [
                s.text
                for sub in self.subs.values()
                for s in sub[0]
                if isinstance(s, TypedSelector) and s.syntax == "exact"
            ]
            if held:
                topics.append(data.draw(st.sampled_from(held)))
        if any(topic_problem(self.syntax, t) for t in topics):  # the primary refuses it
            with pytest.raises(InvalidTopic):
                self.index.match(topics, private=private)
            return
        expected = self.expected(topics, private)
        for _ in range(3):  # new, seen once, memoized
            got = self.index.match(topics, private=private)
            assert list(got) == expected, (topics, private)
        got.clear()  # the caller's own bitmap: clearing it changes nothing
        assert list(self.index.match(topics, private=private)) == expected
        assert len(list(self.index.payloads(expected))) == len(expected)

    @invariant()
    def sizes_agree(self) -> None:
        assert len(self.index) == len(self.subs)


TestMixedMachine = MixedMachine.TestCase
TestMixedMachine.settings = settings(max_examples=200, stateful_step_count=30, deadline=None)


def test_the_machine_catches_an_index_that_skips_the_extra_syntaxes(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Not toothless: answering from the primary table alone is caught."""

    def primary_only(self: MixedTable, topics: list[str]) -> object:
        return self._primary.answer(topics)

    monkeypatch.setattr(MixedTable, "answer", primary_only)
    with pytest.raises(AssertionError):
        run_state_machine_as_test(
            MixedMachine,
            settings=mutant_search(steps=20),
        )


# -- examples a user relies on -------------------------------------------------------------


def test_compatibility_mode_public_and_private_across_syntaxes() -> None:
    """Mercure 0.x templates beside 1.0 URL Patterns: one bitmap per update; a private
    update needs a subscribed selector and an allowed one, of either syntax."""
    index = TopicIndex("urlpattern", base_url=HUB, extra_syntaxes=("mercure",))
    old = index.subscribe(
        [TypedSelector("https://example.com/books/{id}", "mercure")],
        allowed=[TypedSelector("https://example.com/books/:id", "urlpattern")],
    )
    new = index.subscribe(
        ["https://example.com/books/:id"],
        allowed=[TypedSelector("https://example.com/books/{id}", "mercure")],
    )
    everything = index.subscribe([TypedSelector("*", "mercure")], allowed=["*"])
    exact = index.subscribe([TypedSelector("https://example.com/books/1", "mercure")])
    assert set(index.match(["https://example.com/books/1"])) == {old, new, everything, exact}
    assert set(index.match(["https://example.com/books/1"], private=True)) == {
        old,
        new,
        everything,
    }
    # A URI template compares the topic as published; a URL Pattern its canonical URL.
    assert set(index.match(["https://EXAMPLE.com/books/1"])) == {new, everything}
    assert set(index.match(["/books/1"])) == {new, everything}  # resolved against the hub
    assert set(index.match(["not a url"], private=True)) == {everything}


def test_get_round_trips_typed_selectors_of_every_syntax() -> None:
    index = TopicIndex("urlpattern", base_url=HUB, extra_syntaxes=("mercure", "regex"))
    selectors: list[str | TypedSelector] = [
        "https://example.com/a/:x",
        TypedSelector("https://example.com/{x}", "mercure"),
        TypedSelector("/b/.*", "regex"),
        TypedSelector("https://example.com/a", "exact"),
    ]
    sid = index.subscribe(selectors, allowed=[TypedSelector("*", "mercure")], payload="p")
    got = index.get(sid)
    assert got is not None
    assert set(got.selectors) == set(selectors)
    assert got.allowed == (TypedSelector("*", "mercure"),)
    # An exact topic written in an extra syntax is filed (and returned) as exact.
    literal = index.subscribe([TypedSelector("https://example.com/b/c", "mercure")])
    shown = index.get(literal)
    assert shown is not None and shown.selectors == (TypedSelector("https://example.com/b/c"),)
    again = index.subscribe(shown.selectors)
    assert set(index.match(["https://example.com/b/c"])) == {literal, again}


def test_one_syntax_stays_as_it_was() -> None:
    """No extra syntax: the tables are the syntax's own, the error names only it."""
    index = TopicIndex("urlpattern", base_url=HUB)
    assert index.extra_syntaxes == ()
    assert not isinstance(index._subscribed, MixedTable)
    assert repr(index) == "TopicIndex(syntax='urlpattern', subscribers=0)"
    with pytest.raises(ValueError, match="holds urlpattern and exact selectors, not mercure"):
        index.subscribe([TypedSelector("/a/{x}", "mercure")])


@pytest.mark.parametrize(
    ("syntax", "extras", "error", "message"),
    [
        ("urlpattern", "mercure", TypeError, "not a single string"),
        ("urlpattern", (1,), TypeError, "extra_syntaxes must be strings, got int"),
        ("urlpattern", None, TypeError, "a sequence of syntax names, got NoneType"),
        ("urlpattern", ("uri",), ValueError, "unknown extra syntax 'uri'; expected one of"),
        ("urlpattern", ("urlpattern",), ValueError, "'urlpattern' is the index's own syntax"),
        ("urlpattern", ("mercure", "mercure"), ValueError, "'mercure' is given twice"),
        ("mercure", ("urlpattern",), ValueError, "'urlpattern' cannot be an extra syntax"),
        ("mercure", ("nats",), ValueError, "'nats' cannot be an extra syntax: it refuses"),
        ("urlpattern", ("mqtt",), ValueError, "'mqtt' cannot be an extra syntax: it refuses"),
        ("mercure", ("unknown",), ValueError, "unknown extra syntax"),
    ],
)
def test_bad_extra_syntaxes_are_named(
    syntax: str, extras: object, error: type[Exception], message: str
) -> None:
    with pytest.raises(error, match=message):
        TopicIndex(syntax, extra_syntaxes=extras)  # type: ignore[arg-type]


def test_typed_selectors_outside_the_index_are_refused_naming_them() -> None:
    index = TopicIndex("urlpattern", base_url=HUB, extra_syntaxes=("mercure",))
    with pytest.raises(
        ValueError, match=r"holds urlpattern, mercure and exact selectors, not amqp \('a\.#'\)"
    ):
        index.subscribe(["/a/:x"], allowed=[TypedSelector("a.#", "amqp")])
    with pytest.raises(InvalidSelector):  # a bad URL Pattern beside a good template
        index.subscribe([TypedSelector("/a/{x}", "mercure"), "https://example.com/("])
    with pytest.raises(ValueError, match="base_url applies to the urlpattern syntax"):
        TopicIndex("mercure", base_url=HUB, extra_syntaxes=("regex",))
    assert len(index) == 0


def test_stats_count_each_syntax_apart() -> None:
    index = TopicIndex("urlpattern", base_url=HUB, extra_syntaxes=("mercure",))
    index.subscribe(
        [TypedSelector("/a/{x}", "mercure"), TypedSelector("/b", "mercure"), "/c/:x"],
        allowed=[TypedSelector("/d/{x}", "mercure")],
    )
    stats = index.stats()
    assert stats["subscribed_exact_topics"] == 1 and stats["subscribed_patterns"] == 1
    assert stats["subscribed_mercure_patterns"] == 1 and stats["allowed_mercure_patterns"] == 1
    assert "subscribed_mercure_exact_topics" not in stats


def test_threads_respect_completed_subscribes_and_unsubscribes() -> None:
    """Every match reflects every subscribe/unsubscribe that returned before it began."""
    patterns: list[str | TypedSelector] = [
        "https://example.com/:x",
        TypedSelector("https://example.com/{x}", "mercure"),
        TypedSelector("/books/{id}", "mercure"),
        TypedSelector("https://example.com/a", "exact"),
        "/books/*",
    ]

    def matches(pattern: TypedSelector | str, topic: str) -> bool:
        if isinstance(pattern, str):
            return urlpattern_oracle(pattern, topic, HUB)
        if pattern.syntax == "exact":
            return pattern.text == topic
        return compile_selector(pattern.text, pattern.syntax).matches(topic)

    check_linearizable(
        TopicIndex("urlpattern", cache_size=4, base_url=HUB, extra_syntaxes=("mercure",)),
        patterns,
        ["https://example.com/a", "/books/1", "https://example.com/b/c", "nope"],
        matches,
        threads=2,
    )
