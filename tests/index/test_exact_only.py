"""A match while only exact topics are filed skips URL resolution and the memos (what a hub
worker whose subscribers want given topics pays per update it delivers to nobody, issue
42). Whatever the subscriptions come and go, it must answer what testing every subscriber
answers: exact topics compare as published (no URL canonicalisation), a URL Pattern or
``*`` filed in either role sends the match the long way, private updates need an allowed
topic."""

from __future__ import annotations

from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from skipfilter.index import TopicIndex
from skipfilter.selectors import TypedSelector, compile_selector
from tests.selectors.urloracle import urlpattern_oracle

BASE = "https://example.com/"
#: Topics that are equal only as URLs (host case, default port, dot segments), or not URLs.
TOPICS = [
    "https://example.com/a",
    "https://EXAMPLE.com/a",
    "https://example.com:443/a",
    "https://example.com/b/../a",
    "https://example.com/b",
    "/a",
    "a",
    "é",
    "",
]
#: Exact selectors mostly, now and then a URL Pattern, ``*`` or a 0.x template (mixed mode).
SELECTORS = st.one_of(
    st.sampled_from(TOPICS).map(TypedSelector),
    st.sampled_from(
        [
            TypedSelector("*"),
            TypedSelector("https://example.com/:x", "urlpattern"),
            TypedSelector("/a", "urlpattern"),
            TypedSelector("https://example.com/{x}", "mercure"),
        ]
    ),
)


def _hit(selector: TypedSelector, topic: str) -> bool:
    if selector.text == "*":
        return True
    if selector.syntax == "exact":
        return selector.text == topic
    if selector.syntax == "urlpattern":
        return urlpattern_oracle(selector.text, topic, BASE)
    return compile_selector(selector.text, selector.syntax).matches(topic)


class ExactOnlyMachine(RuleBasedStateMachine):
    """Subscribe/unsubscribe/match against an oracle that tests every subscriber."""

    def __init__(self) -> None:
        super().__init__()
        self.index = TopicIndex("urlpattern", base_url=BASE)
        self.oracle: dict[int, tuple[list[TypedSelector], list[TypedSelector] | None]] = {}
        self.mixed = False

    @initialize(mixed=st.booleans(), cache_size=st.sampled_from([1, 1000]))
    def make(self, mixed: bool, cache_size: int) -> None:
        extra = ("mercure",) if mixed else ()
        self.index = TopicIndex("urlpattern", cache_size, base_url=BASE, extra_syntaxes=extra)
        self.mixed = mixed

    @rule(data=st.data())
    def subscribe(self, data: st.DataObject) -> None:
        drawn = SELECTORS if self.mixed else SELECTORS.filter(lambda s: s.syntax != "mercure")
        selectors = data.draw(st.lists(drawn, min_size=1, max_size=3))
        allowed = data.draw(st.none() | st.lists(drawn, max_size=2))
        sid = self.index.subscribe(selectors, allowed=allowed, payload=None)
        self.oracle[sid] = (selectors, allowed)

    @precondition(lambda self: bool(self.oracle))
    @rule(data=st.data())
    def unsubscribe(self, data: st.DataObject) -> None:
        sid = data.draw(st.sampled_from(sorted(self.oracle)))
        assert self.index.unsubscribe(sid)
        del self.oracle[sid]

    @rule(topics=st.lists(st.sampled_from(TOPICS), min_size=1, max_size=3), private=st.booleans())
    def match(self, topics: list[str], private: bool) -> None:
        def hit(selectors: list[TypedSelector] | None) -> bool:
            return any(_hit(s, t) for s in selectors or () for t in topics)

        expected = sorted(
            sid
            for sid, (selectors, allowed) in self.oracle.items()
            if hit(selectors) and (not private or hit(allowed))
        )
        for _ in range(2):  # the second time, from a memo on the long way
            assert list(self.index.match(topics, private=private)) == expected, topics

    @invariant()
    def sizes_agree(self) -> None:
        assert len(self.index) == len(self.oracle)


TestExactOnly = ExactOnlyMachine.TestCase
TestExactOnly.settings = settings(max_examples=150, stateful_step_count=25, deadline=None)
