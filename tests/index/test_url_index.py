"""TopicIndex("urlpattern"): Mercure 1.0 subscriptions (exact and URL Pattern matchers, for
one subscriber and in ``allowed``) against brute force with the ``urlpattern`` package.

The state machine draws the cases that break naive indexes (tests/selectors/urlcases.py):
upper-case hosts, explicit default ports, percent-encoded and non-ASCII paths, trailing
slashes, hostname wildcards, regexp groups, optional and repeated groups, ``*``, relative
patterns and topics under per-subscription and per-update base URLs, topics that are no
URL; with tiny caches, so memos and per-bucket caches are emptied and rebuilt all the time.
"""

from __future__ import annotations

import re

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
from skipfilter.selectors.urlpattern import Resolver
from skipfilter.selectors.urlpattern.canonical import indexed, key_of
from tests.index.concurrency import check_linearizable
from tests.index.strategies import tunings
from tests.mutants import mutant_search
from tests.selectors import urlcases
from tests.selectors.urloracle import urlpattern_oracle, urlpattern_valid

HUB = "https://example.com/.well-known/mercure"

#: A subscriber as the oracle keeps it: (exact topics, URL patterns), each with the base
#: the subscription gave (None: the index's).
Matchers = tuple[tuple[str, ...], tuple[str, ...]]


def typed(draw: st.DrawFn) -> TypedSelector | str:
    """One Mercure 1.0 matcher: exact (often a topic, so that it matches), a URL Pattern
    typed or plain, or ``*`` of either type."""
    kind = draw(st.sampled_from(["exact", "exact", "pattern", "typed", "star"]))
    if kind == "exact":
        return TypedSelector(draw(urlcases.topics), "exact")
    if kind == "star":
        return TypedSelector("*", draw(st.sampled_from(["exact", "urlpattern"])))
    text = draw(urlcases.patterns)
    return TypedSelector(text, "urlpattern") if kind == "typed" else text


matchers = st.composite(typed)()


class Oracle:
    """Each subscriber's matchers, tested one by one with the ``urlpattern`` package."""

    def __init__(self, base: str | None) -> None:
        self.base = base
        self.subs: dict[
            int, tuple[list[TypedSelector | str], list[TypedSelector | str] | None, str | None]
        ] = {}

    def hit(
        self,
        matchers: list[TypedSelector | str],
        base: str | None,
        topics: list[str],
        topic_base: str | None,
    ) -> bool:
        for matcher in matchers:
            text, kind = (
                (matcher.text, matcher.syntax)
                if isinstance(matcher, TypedSelector)
                else (matcher, "urlpattern")
            )
            for topic in topics:
                if text == "*" or (kind == "exact" and text == topic):
                    return True
                if kind != "exact" and urlpattern_oracle(text, topic, base, topic_base):
                    return True
        return False

    def match(self, topics: list[str], private: bool, base: str | None) -> list[int]:
        topic_base = base if base is not None else self.base
        return sorted(
            sid
            for sid, (selectors, allowed, sub_base) in self.subs.items()
            if self.hit(selectors, sub_base or self.base, topics, topic_base)
            and (not private or self.hit(allowed or [], sub_base or self.base, topics, topic_base))
        )


def _valid(matchers: list[TypedSelector | str], base: str | None) -> bool:
    for matcher in matchers:
        if isinstance(matcher, TypedSelector) and matcher.syntax == "exact":
            continue
        text = matcher.text if isinstance(matcher, TypedSelector) else matcher
        if not urlpattern_valid(text, base):
            return False
    return True


class UrlIndexMachine(RuleBasedStateMachine):
    """Subscribe, unsubscribe and match (public and private) against the oracle."""

    def __init__(self) -> None:
        super().__init__()
        self.index = TopicIndex("urlpattern")
        self.oracle = Oracle(None)

    @initialize(
        base=st.sampled_from(urlcases.BASES),
        cache_size=st.sampled_from([1, 2, 1000]),
        tuning=tunings,
    )
    def make(self, base: str | None, cache_size: int, tuning: Tuning) -> None:
        self.index = TopicIndex("urlpattern", cache_size=cache_size, tuning=tuning, base_url=base)
        self.oracle = Oracle(base)

    @rule(data=st.data())
    def subscribe(self, data: st.DataObject) -> None:
        selectors = data.draw(st.lists(matchers, min_size=1, max_size=3))
        allowed = data.draw(st.none() | st.lists(matchers, max_size=2))
        base = data.draw(st.sampled_from([None, None, *urlcases.BASES[1:]]))
        effective = base or self.oracle.base
        if not _valid(selectors, effective) or not _valid(allowed or [], effective):
            with pytest.raises(InvalidSelector):
                self.index.subscribe(selectors, allowed=allowed, base_url=base)
            return
        sid = self.index.subscribe(selectors, allowed=allowed, base_url=base)
        assert sid not in self.oracle.subs
        self.oracle.subs[sid] = (selectors, allowed, base)

    @precondition(lambda self: bool(self.oracle.subs))
    @rule(data=st.data())
    def unsubscribe(self, data: st.DataObject) -> None:
        sid = data.draw(st.sampled_from(sorted(self.oracle.subs)))
        assert self.index.unsubscribe(sid)
        assert not self.index.unsubscribe(sid)
        del self.oracle.subs[sid]

    @rule(data=st.data(), private=st.booleans())
    def match(self, data: st.DataObject, private: bool) -> None:
        topics = data.draw(st.lists(urlcases.topics, min_size=1, max_size=3))
        if data.draw(st.booleans()):  # topics the subscribers hold as exact matchers
            held = [
                m.text
                for sub in self.oracle.subs.values()
                for m in sub[0]
                if isinstance(m, TypedSelector)
            ]
            if held:
                topics.append(data.draw(st.sampled_from(held)))
        base = data.draw(st.sampled_from([None, None, *urlcases.BASES[1:]]))
        expected = self.oracle.match(topics, private, base)
        for _ in range(3):  # new, seen once, memoized
            got = self.index.match(topics, private=private, base_url=base)
            assert list(got) == expected, (topics, private, base)
        got.clear()  # the caller's own bitmap: clearing it changes nothing
        assert list(self.index.match(topics, private=private, base_url=base)) == expected

    @invariant()
    def sizes_agree(self) -> None:
        assert len(self.index) == len(self.oracle.subs)


TestUrlIndexMachine = UrlIndexMachine.TestCase
TestUrlIndexMachine.settings = settings(max_examples=150, stateful_step_count=30, deadline=None)


def test_the_machine_catches_a_naive_canonical_form(monkeypatch: pytest.MonkeyPatch) -> None:
    """Not toothless: an index that files topics by their text split naively (no host case,
    default ports, dot segments or percent-encoding rules) is caught."""

    def naive(self: Resolver, topic: str) -> tuple[str, str] | None:
        parts = re.match(r"([a-z]+)://([^/:?#]*)(?::([0-9]*))?([^?#]*)", topic)
        if parts is None:
            return None
        key = key_of(parts[1], parts[2], parts[3] or "", parts[4] or "/")
        return key, indexed(key, topic)

    monkeypatch.setattr(Resolver, "resolve", naive)
    with pytest.raises(AssertionError):
        run_state_machine_as_test(
            UrlIndexMachine,
            settings=mutant_search(steps=20),
        )


# -- examples a user relies on -------------------------------------------------------------


def test_mixed_subscription_public_and_private() -> None:
    index = TopicIndex("urlpattern", base_url=HUB)
    alice = index.subscribe(
        [
            TypedSelector("https://example.com/foo", "exact"),
            TypedSelector("https://example.com/bar/:id", "urlpattern"),
            "https://example.com/baz/:id",
        ],
        allowed=[
            TypedSelector("/users/42/*", "urlpattern"),
            TypedSelector("https://example.com/foo"),
        ],
    )
    bob = index.subscribe([TypedSelector("*", "exact")])
    assert set(index.match(["https://EXAMPLE.com:443/bar/1"])) == {alice, bob}
    assert set(index.match(["https://example.com:443/bar/1"])) == {alice, bob}
    assert set(index.match(["https://example.com/Foo"])) == {bob}  # exact is byte for byte
    assert set(index.match(["https://EXAMPLE.com/foo"])) == {bob}  # ...never canonicalized
    assert set(index.match(["https://example.com/baz/1", "/users/42/books"], private=True)) == {
        alice
    }
    assert set(index.match(["https://example.com/baz/1"], private=True)) == set()
    assert set(index.match(["https://example.com/foo"], private=True)) == {alice}
    assert set(index.match(["not a url at all"])) == {bob}


def test_exact_matchers_are_never_resolved() -> None:
    index = TopicIndex("urlpattern", base_url=HUB)
    relative = index.subscribe([TypedSelector("/books/1", "exact")])
    assert set(index.match(["/books/1"])) == {relative}
    assert set(index.match(["https://example.com/books/1"])) == set()


def test_relative_patterns_resolve_per_subscription_and_topics_per_update() -> None:
    index = TopicIndex("urlpattern", base_url=HUB)
    here = index.subscribe(["/books/:id"])
    there = index.subscribe(["/books/:id"], base_url="https://other.example/hub")
    assert set(index.match(["/books/1"])) == {here}
    assert set(index.match(["/books/1"], base_url="https://other.example/x")) == {there}
    assert set(index.match(["https://other.example/books/1"])) == {there}
    assert index.stats()["subscribed_patterns"] == 2


def test_without_a_base_relative_topics_match_no_pattern_and_relative_patterns_are_refused() -> (
    None
):
    index = TopicIndex("urlpattern")
    everything = index.subscribe(["*", "https://example.com/:x"])
    assert set(index.match(["/books/1"])) == {everything}
    assert set(index.match(["https://example.com/books"])) == {everything}
    with pytest.raises(InvalidSelector, match="relative URL pattern '/books/:id' needs a base URL"):
        index.subscribe(["/books/:id"])
    assert len(index) == 1


def test_literal_patterns_are_one_probe_and_share_the_canonical_form() -> None:
    index = TopicIndex("urlpattern")
    sids = [index.subscribe([f"https://example.com/users/{i}"]) for i in range(1000)]
    stats = index.stats()
    assert stats["subscribed_literal_keys"] == 1000 and stats["subscribed_prefix_groups"] == 0
    assert set(index.match(["https://EXAMPLE.COM:443/users/7?tab=books#top"])) == {sids[7]}


def test_templates_are_filed_by_origin_and_literal_path() -> None:
    """Each template is filed under its origin and literal path start (a never-seen topic
    tests only the groups it starts with), host wildcards under their host suffix."""
    index = TopicIndex("urlpattern")
    sections = [index.subscribe([f"https://example.com/s{n}/:id"]) for n in range(50)]
    deep = index.subscribe(["https://example.com/s7/:id/:rest"])
    hosts = index.subscribe(["https://*.example.com/:kind(news|blog)/*"])
    anywhere = index.subscribe(["*://*/books/:id"])
    stats = index.stats()
    assert stats["subscribed_prefix_groups"] == 50  # s7/:id/:rest shares s7/:id's group
    assert stats["subscribed_host_groups"] == 1 and stats["subscribed_unfiled_patterns"] == 1
    assert set(index.match(["https://example.com/s7/1"])) == {sections[7]}
    assert set(index.match(["https://EXAMPLE.com/s7/1/2"])) == {deep}
    assert set(index.match(["https://a.b.example.com/news/x"])) == {hosts}
    assert set(index.match(["wss://x.y/books/1", "https://example.com/s3/1"])) == {
        anywhere,
        sections[3],
    }


def test_get_returns_exact_matchers_typed() -> None:
    index = TopicIndex("urlpattern")
    sid = index.subscribe(
        [TypedSelector("https://example.com/a", "exact"), "https://example.com/:x"],
        allowed=[TypedSelector("*", "exact")],
        payload="p",
    )
    got = index.get(sid)
    assert got is not None
    assert set(got.selectors) == {TypedSelector("https://example.com/a"), "https://example.com/:x"}
    assert got.allowed == ("*",)


def test_typed_selectors_of_another_syntax_are_refused_naming_it() -> None:
    index = TopicIndex("urlpattern")
    with pytest.raises(ValueError, match="holds urlpattern and exact selectors, not mqtt"):
        index.subscribe([TypedSelector("a/#", "mqtt")])
    with pytest.raises(TypeError, match="strings or TypedSelectors"):
        index.subscribe([42])  # type: ignore[list-item]
    with pytest.raises(ValueError, match="base_url applies to the urlpattern syntax"):
        TopicIndex("mercure").match(["/a"], base_url=HUB)
    assert len(index) == 0


def test_exact_typed_selectors_in_other_syntaxes() -> None:
    """A template's text as an exact topic in a mercure index; a NATS subject as itself."""
    mercure = TopicIndex("mercure")
    literal = mercure.subscribe([TypedSelector("https://example.com/{id}", "exact")])
    template = mercure.subscribe(["https://example.com/{id}"])
    assert set(mercure.match(["https://example.com/{id}"])) == {literal, template}
    assert set(mercure.match(["https://example.com/1"])) == {template}
    got = mercure.get(literal)
    assert got is not None and got.selectors == (TypedSelector("https://example.com/{id}"),)
    nats = TopicIndex("nats")
    sid = nats.subscribe([TypedSelector("a.b", "exact"), TypedSelector("c.*", "nats")])
    assert set(nats.match(["a.b"])) == set(nats.match(["c.d"])) == {sid}


def test_threads_respect_completed_subscribes_and_unsubscribes() -> None:
    """Every match reflects every subscribe/unsubscribe that returned before it began."""
    check_linearizable(
        TopicIndex("urlpattern", cache_size=4, base_url=HUB),
        ["https://example.com/:x", "/books/*", "https://*.example.com/*", "https://example.com/a"],
        ["https://example.com/a", "/books/1", "https://b.example.com/x", "nope"],
        lambda pattern, topic: urlpattern_oracle(pattern, topic, HUB),
        threads=2,
    )
