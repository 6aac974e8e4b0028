"""Every Matcher implementation against a brute-force oracle, against each other, under threads.

The oracle is the most obvious matcher: each subscriber's selectors tested one by one
with :func:`skipfilter.selectors.matches`, Mercure rules for private updates.
"""

from __future__ import annotations

import random
import sys
import threading
from collections.abc import Callable, Sequence
from typing import Any

import pytest
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule, run_state_machine_as_test

from skipfilter.baselines import CachedScan, CtrieMatcher, LinearScan, LockedTrie, locked_trie
from skipfilter.baselines.paho import PahoMatcher
from skipfilter.bench.registry import IMPLEMENTATIONS, make_matcher
from skipfilter.bench.workloads import AMQP_TOKENS, amqp, amqp_pattern, respell
from skipfilter.errors import InvalidSelector, InvalidTopic
from skipfilter.index import TopicIndex
from skipfilter.matcher import Matcher
from skipfilter.selectors import TypedSelector, compile_selector, matches, topic_problem
from tests.mutants import mutant_search

COMBOS = [(name, syntax) for name, impl in IMPLEMENTATIONS.items() for syntax in impl.syntaxes]
TINY_CACHE = 2  # so that the caches evict all the time


# -- the oracle ---------------------------------------------------------------------------


def texts(selectors: Sequence[str | TypedSelector]) -> tuple[str, ...]:
    """A workload's selectors as the text they are (a single-syntax workload types none)."""
    plain = tuple(s for s in selectors if isinstance(s, str))
    assert len(plain) == len(selectors), selectors
    return plain


class Oracle:
    """sid -> (selectors, allowed), matched by brute force."""

    def __init__(self, syntax: str) -> None:
        self.syntax = syntax
        self.subs: dict[int, tuple[tuple[str, ...], tuple[str, ...]]] = {}

    def hits(self, selectors: Sequence[str], topics: Sequence[str]) -> bool:
        return any(matches(s, t, self.syntax) for s in selectors for t in topics)

    def match(self, topics: Sequence[str], private: bool) -> set[int]:
        return {
            sid
            for sid, (selectors, allowed) in self.subs.items()
            if self.hits(selectors, topics) and (not private or self.hits(allowed, topics))
        }


# -- random selectors and topics per syntax, over tiny alphabets ---------------------------


def _valid(syntax: str) -> Callable[[str], bool]:
    def check(text: str) -> bool:
        try:
            compile_selector(text, syntax)
        except InvalidSelector:
            return False
        return True

    return check


def _joined(words: list[str], sep: str, lo: int = 1, hi: int = 4) -> st.SearchStrategy[str]:
    return st.lists(st.sampled_from(words), min_size=lo, max_size=hi).map(sep.join)


_MERCURE_TEMPLATES = ["*", "/a/{x}", "/{x}/b", "{/x}", "/a{/x}", "/a/{x}/b", "{+x}", "/b{?q}"]
_REGEXES = ["a.*", "[ab]/b", "a/b", ".*", "(a|b)/.*", "b", "a/[^/]*/b"]
_URL_PATTERNS = [
    "*",
    "https://a.com/:x",
    "https://*.a.com/*",
    "http{s}?://a.com/b/:x",
    "https://a.com/(a|b)/*",
    "https://A.com:443/b",
]
_URLS = st.tuples(
    st.sampled_from(["https://a.com", "https://A.com:443", "http://a.com", "https://b.a.com", "a"]),
    _joined(["a", "b", "%61"], "/", lo=0).map("/".__add__),
).map("".join)

SELECTORS: dict[str, st.SearchStrategy[str]] = {
    "amqp": _joined(["a", "b", "", "*", "#"], "."),
    "nats": _joined(["a", "b", "*", ">"], ".").filter(_valid("nats")),
    "mqtt": _joined(["a", "b", "$x", "", "+", "#"], "/").filter(_valid("mqtt")),
    "mercure": st.one_of(
        st.sampled_from(_MERCURE_TEMPLATES), _joined(["a", "b", "c"], "/").map("/".__add__)
    ),
    "regex": st.one_of(st.sampled_from(_REGEXES), _joined(["a", "b"], "/")),
    "urlpattern": st.one_of(st.sampled_from(_URL_PATTERNS), _URLS.filter(_valid("urlpattern"))),
}
TOPICS: dict[str, st.SearchStrategy[str]] = {
    "amqp": _joined(["a", "b", "", "*"], ".", hi=5),
    "nats": _joined(["a", "b", "", "*"], ".", hi=5),
    "mqtt": _joined(["a", "b", "$x", "", "+"], "/", hi=5),
    "mercure": _joined(["a", "b", "c"], "/").map("/".__add__),
    "regex": _joined(["a", "b", "c"], "/"),
    "urlpattern": _URLS,
}


def machine_for(
    name: str, syntax: str, cache_size: int = TINY_CACHE
) -> type[RuleBasedStateMachine]:
    """A state machine driving ``name`` (tiny caches) and the oracle with the same operations."""
    selectors = st.lists(SELECTORS[syntax], min_size=1, max_size=3)
    allowed = st.none() | st.lists(SELECTORS[syntax], max_size=2)
    topics = st.lists(TOPICS[syntax], min_size=1, max_size=2)

    class MatcherMachine(RuleBasedStateMachine):
        def __init__(self) -> None:
            super().__init__()
            self.matcher = make_matcher(name, syntax, cache_size=cache_size)
            self.oracle = Oracle(syntax)

        @rule(selectors=selectors, allowed=allowed)
        def subscribe(self, selectors: list[str], allowed: list[str] | None) -> None:
            sid = self.matcher.subscribe(selectors, allowed=allowed)
            assert sid not in self.oracle.subs
            self.oracle.subs[sid] = (tuple(selectors), tuple(allowed or ()))

        @rule(data=st.data())
        def unsubscribe(self, data: st.DataObject) -> None:
            known = sorted(self.oracle.subs)
            sid = data.draw(st.sampled_from(known) if known else st.integers(0, 5))
            expected = self.oracle.subs.pop(sid, None) is not None
            assert self.matcher.unsubscribe(sid) is expected
            assert self.matcher.unsubscribe(sid) is False

        @rule(topics=topics, private=st.booleans())
        def match(self, topics: list[str], private: bool) -> None:
            if any(topic_problem(syntax, t) for t in topics):  # every matcher refuses alike
                with pytest.raises(InvalidTopic):
                    self.matcher.match(topics, private=private)
                return
            got = set(self.matcher.match(topics, private=private))
            assert got == self.oracle.match(topics, private), (topics, private)

        @invariant()
        def length(self) -> None:
            assert len(self.matcher) == len(self.oracle.subs)

    MatcherMachine.__name__ = f"MatcherMachine_{name}_{syntax}"
    return MatcherMachine


MACHINE_SETTINGS = settings(max_examples=60, stateful_step_count=30, deadline=None)


@pytest.mark.parametrize(("name", "syntax"), COMBOS)
def test_against_oracle(name: str, syntax: str) -> None:
    run_state_machine_as_test(machine_for(name, syntax), settings=MACHINE_SETTINGS)


def test_oracle_machine_catches_a_stale_cache(monkeypatch: pytest.MonkeyPatch) -> None:
    """The machine is not toothless: a LockedTrie whose subscribe skips the cache patch fails."""

    def insert_without_patch(self: Any, selector: Any, sid: int) -> None:
        node = self._root
        for word in self.split(selector):
            node = node.children.setdefault(word, locked_trie._Node())
        node.sids.add(sid)

    monkeypatch.setattr(locked_trie._Trie, "insert", insert_without_patch)
    with pytest.raises(AssertionError):
        run_state_machine_as_test(
            machine_for("lockedtrie", "amqp", cache_size=64),
            settings=mutant_search(steps=30),
        )


# -- all implementations agree on the amqp workload ----------------------------------------


def to_mqtt(text: str) -> str:
    """An amqp_pattern / AMQP topic in MQTT syntax: same meaning ('#' only ever last)."""
    return respell(text, "amqp", "mqtt")


def test_all_agree_on_the_amqp_workload() -> None:
    work = amqp(1500, 200, seed=7)
    rng = random.Random(7)
    allowed = [(amqp_pattern(rng, 3),) for _ in work.subscribers]
    private = [rng.random() < 0.3 for _ in work.messages]
    oracle = Oracle("amqp")
    for sid, sub in enumerate(work.subscribers):
        oracle.subs[sid] = (texts(sub.selectors), allowed[sid])
    expected = [oracle.match(m.topics, p) for m, p in zip(work.messages, private, strict=True)]
    assert sum(map(len, expected)) > 1000  # a workload where little matches proves little

    checked = set()
    for name, impl in IMPLEMENTATIONS.items():
        syntax = "amqp" if "amqp" in impl.syntaxes else "mqtt"
        conv: Callable[[str], str] = (lambda s: s) if syntax == "amqp" else to_mqtt
        matcher = impl.make(syntax)
        for sub, allow in zip(work.subscribers, allowed, strict=True):
            matcher.subscribe([conv(s) for s in texts(sub.selectors)], [conv(a) for a in allow])
        for message, priv, want in zip(work.messages, private, expected, strict=True):
            got = matcher.match([conv(t) for t in message.topics], private=priv)
            assert set(got) == want, (name, message)
        checked.add(name)
    assert checked == set(IMPLEMENTATIONS)


# -- real threads -------------------------------------------------------------------------


def _stress(name: str, syntax: str, threads: int, ops: int) -> None:
    """Threads subscribe, unsubscribe and match; every match respects completed operations.

    A sid enters ``live`` after its subscribe returned and leaves it before its
    unsubscribe starts; it enters ``dead`` after the unsubscribe returned. A match must
    contain every matching sid live both before and after it, and no sid dead before it.
    """
    matcher = make_matcher(name, syntax, cache_size=8)
    conv: Callable[[str], str] = (lambda s: s) if syntax == "amqp" else to_mqtt
    lock = threading.Lock()
    live: dict[int, str] = {}
    dead: set[int] = set()
    selectors: dict[int, str] = {}
    seen: list[tuple[str, set[int]]] = []
    errors: list[BaseException] = []
    barrier = threading.Barrier(threads)

    def worker(seed: int) -> None:
        rng = random.Random(seed)
        own: list[int] = []
        barrier.wait()
        try:
            for _ in range(ops):
                roll = rng.random()
                if roll < 0.3:
                    pattern = conv(amqp_pattern(rng, 3))
                    sid = matcher.subscribe([pattern])
                    with lock:
                        live[sid] = selectors[sid] = pattern
                    own.append(sid)
                elif roll < 0.45 and own:
                    sid = own.pop(rng.randrange(len(own)))
                    with lock:
                        del live[sid]
                    assert matcher.unsubscribe(sid)
                    with lock:
                        dead.add(sid)
                else:
                    words = [rng.choice(AMQP_TOKENS[:3]) for _ in range(rng.randint(1, 3))]
                    topic = conv(".".join(words))
                    with lock:
                        before, gone = dict(live), set(dead)
                    got = set(matcher.match([topic]))
                    with lock:
                        still = {sid for sid in before if sid in live}
                    for sid in still:
                        if matches(before[sid], topic, syntax):
                            assert sid in got, (topic, before[sid], sid)
                    assert not got & gone, (topic, got & gone)
                    with lock:
                        seen.append((topic, got))
        except BaseException as exc:  # reported by the main thread
            errors.append(exc)

    workers = [threading.Thread(target=worker, args=(i,), daemon=True) for i in range(threads)]
    old_interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-5)  # switch often, to interleave inside operations
    try:
        for thread in workers:
            thread.start()
        for thread in workers:
            thread.join(timeout=60)
    finally:
        sys.setswitchinterval(old_interval)
    assert not any(thread.is_alive() for thread in workers), "a thread hung"
    if errors:
        raise errors[0]
    for topic, got in seen:  # no false positives, whatever the interleaving
        for sid in got:
            assert matches(selectors[sid], topic, syntax), (topic, selectors[sid])
    assert sum(map(len, (g for _, g in seen))) > 0
    assert len(matcher) == len(live)


@pytest.mark.parametrize("threads", [1, 2, 4, 8])
@pytest.mark.parametrize("name", sorted(IMPLEMENTATIONS))
def test_threads_respect_completed_operations(name: str, threads: int) -> None:
    syntax = "amqp" if "amqp" in IMPLEMENTATIONS[name].syntaxes else "mqtt"
    _stress(name, syntax, threads, ops=1200 // threads)


# -- the registry and the edges of each implementation -------------------------------------


@pytest.mark.parametrize(("name", "syntax"), COMBOS)
def test_every_implementation_is_a_matcher(name: str, syntax: str) -> None:
    matcher = make_matcher(name, syntax)
    assert isinstance(matcher, Matcher)
    assert matcher.syntax == syntax
    with pytest.raises(TypeError):
        matcher.subscribe("a")
    with pytest.raises(TypeError):
        matcher.match("a")
    with pytest.raises(ValueError, match="at least one selector"):
        matcher.subscribe([])
    assert matcher.match([]) == type(matcher.match([]))()


def test_classes_refuse_syntaxes_they_lack_by_name() -> None:
    with pytest.raises(ValueError, match="LockedTrie supports"):
        LockedTrie("mercure")
    with pytest.raises(ValueError, match="CtrieMatcher supports"):
        CtrieMatcher("nats")
    with pytest.raises(ValueError, match="mqtt selectors only"):
        PahoMatcher("amqp")


@pytest.mark.parametrize("size", [0, -1])
def test_cache_size_must_be_positive(size: int) -> None:
    with pytest.raises(ValueError, match="cache_size must be positive"):
        CachedScan("amqp", cache_size=size)
    with pytest.raises(ValueError, match="cache_size must be positive"):
        LockedTrie("amqp", cache_size=size)


@pytest.mark.parametrize("name", [n for n, i in IMPLEMENTATIONS.items() if "mqtt" in i.syntaxes])
def test_mqtt_dollar_rule_and_invalid_filters(name: str) -> None:
    matcher = make_matcher(name, "mqtt")
    hash_all = matcher.subscribe(["#"])
    plus = matcher.subscribe(["+/info"])
    sys_all = matcher.subscribe(["$SYS/#"])
    assert set(matcher.match(["$SYS/info"])) == {sys_all}
    assert set(matcher.match(["a/info"])) == {hash_all, plus}
    assert set(matcher.match(["$SYS"])) == {sys_all}  # '#' also matches the parent level
    with pytest.raises(InvalidSelector, match="'#' must be the last level"):
        matcher.subscribe(["a/#/b"])
    assert len(matcher) == 3


def test_lockedtrie_cache_is_patched_and_invalidated() -> None:
    trie = LockedTrie("amqp", cache_size=4)
    first = trie.subscribe(["a.*"])
    assert set(trie.match(["a.b"])) == {first}  # now cached
    second = trie.subscribe(["#"])
    both = trie.subscribe(["a.b", "a.#"])  # two patterns reach a.b
    assert set(trie.match(["a.b"])) == {first, second, both}
    assert trie.unsubscribe(first)
    assert set(trie.match(["a.b"])) == {second, both}
    for i in range(10):  # overflow the cache: the sweep keeps the newest half
        trie.match([f"x.{i}"])
    assert set(trie.match(["a.b"])) == {second, both}


def test_cachedscan_bounds_its_cache() -> None:
    scan = CachedScan("amqp", cache_size=3)
    sids = [scan.subscribe([f"a.{i}", "b.*"]) for i in range(5)]
    for i in range(5):
        assert set(scan.match([f"a.{i}"])) == {sids[i]}
    assert len(scan._cache) == 3
    assert isinstance(scan, LinearScan)


def test_topicindex_satisfies_the_protocol_directly() -> None:
    assert isinstance(TopicIndex("amqp"), Matcher)
