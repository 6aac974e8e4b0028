"""Tests of the Ctrie: oracle-checked operation sequences, snapshots, threads, pruning."""

from __future__ import annotations

import random
import sys
import threading
import time
from collections.abc import Hashable, Iterable

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
)

from skipfilter.baselines.ctrie import AMQP, MQTT, Config, Ctrie, ReadOnlyError, matches
from skipfilter.errors import SkipFilterError

# -- the oracle: a dict of patterns and the most obvious matcher ------------------------


def word_match(pattern: list[str], topic: list[str]) -> bool:
    """AMQP 0-9-1: '*' is exactly one word, '#' zero or more, anything else itself."""
    if not pattern:
        return not topic
    head, rest = pattern[0], pattern[1:]
    if head == "#":
        return word_match(rest, topic) or (bool(topic) and word_match(pattern, topic[1:]))
    if not topic:
        return False
    return (head == "*" or head == topic[0]) and word_match(rest, topic[1:])


def normalized(pattern: str) -> str:
    """The pattern's path in the trie: runs of '#' collapsed."""
    words: list[str] = []
    for word in pattern.split("."):
        if not (word == "#" and words and words[-1] == "#"):
            words.append(word)
    return ".".join(words)


class Oracle:
    """Pattern, as spelled -> subscribers, matched by brute force: ``#`` and ``#.#`` are
    two subscriptions, whatever the trie shares between them."""

    def __init__(self, pairs: dict[str, set[Hashable]] | None = None) -> None:
        self.pairs: dict[str, set[Hashable]] = {p: set(s) for p, s in (pairs or {}).items()}

    def copy(self) -> Oracle:
        return Oracle(self.pairs)

    def subscribe(self, pattern: str, sub: Hashable) -> None:
        self.pairs.setdefault(pattern, set()).add(sub)

    def unsubscribe(self, pattern: str, sub: Hashable) -> bool:
        key = pattern
        subs = self.pairs.get(key, set())
        if sub not in subs:
            return False
        subs.discard(sub)
        if not subs:
            del self.pairs[key]
        return True

    def subscribers(self, topic: str) -> set[Hashable]:
        words = topic.split(".")
        return {
            sub
            for pattern, subs in self.pairs.items()
            if word_match(pattern.split("."), words)
            for sub in subs
        }

    def prefixes(self) -> int:
        """I-nodes a fully pruned trie holds: the root plus one per distinct proper prefix."""
        prefixes: set[tuple[str, ...]] = set()
        for pattern in self.pairs:
            words = normalized(pattern).split(".")
            prefixes.update(tuple(words[:k]) for k in range(1, len(words)))
        return 1 + len(prefixes)


WORDS = ["a", "b", ""]
pattern_words = st.sampled_from([*WORDS, "*", "#"])
topic_words = st.sampled_from([*WORDS, "*", "#"])  # wildcard characters are literal in topics
patterns = st.lists(pattern_words, min_size=1, max_size=4).map(".".join)
topics = st.lists(topic_words, min_size=1, max_size=5).map(".".join)
subscribers = st.integers(0, 5)


# -- semantics --------------------------------------------------------------------------


@given(patterns, topics)
@settings(max_examples=400)
def test_matches_agrees_with_oracle(pattern: str, topic: str) -> None:
    assert matches(pattern, topic) == word_match(pattern.split("."), topic.split("."))


@pytest.mark.parametrize(
    ("pattern", "topic", "expected"),
    [
        ("a.#.b", "a.b", True),
        ("a.#.b", "a.x.y.b", True),
        ("a.#.#.b", "a.b", True),
        ("a.*.b", "a.b", False),
        ("a.*.b", "a..b", True),  # empty words are words
        ("#", "", True),
        ("*", "", True),
        ("a.#", "a", True),
        ("#.a", "a", True),
        ("*.#", "", True),
        ("*.*", "a", False),
        ("a.b", "a.b.c", False),
        ("a*.b", "ax.b", False),  # a wildcard inside a word is literal
        ("a*.b", "a*.b", True),
    ],
)
def test_trie_lookup_examples(pattern: str, topic: str, expected: bool) -> None:
    trie = Ctrie()
    trie.subscribe(pattern, "s")
    assert (trie.subscribers(topic) == {"s"}) is expected
    assert matches(pattern, topic) is expected


def test_multi_wildcard_runs_share_a_path_but_each_spelling_is_its_own_subscription() -> None:
    trie = Ctrie()
    trie.subscribe("a.#.#.#.b", 1)
    trie.subscribe("a.#.b", 2)
    assert trie._node_count() == 3  # one path: root, a, a.#
    assert trie.topics() == ["a.#.#.#.b", "a.#.b"]
    assert not trie.unsubscribe("a.#.#.b", 1)  # a third spelling, never subscribed
    assert trie.unsubscribe("a.#.#.#.b", 1)
    assert trie.subscriptions() == {"a.#.b": {2}}


def test_two_spellings_of_one_subscriber_are_two_subscriptions() -> None:
    """Issue 14: unsubscribing '#.#' used to drop the same subscriber's '#' too."""
    trie = Ctrie()
    trie.subscribe("#", "alice")
    trie.subscribe("#.#", "alice")
    assert trie.unsubscribe("#.#", "alice")
    assert trie.subscribers("a.b") == {"alice"}
    assert trie.subscriptions() == {"#": {"alice"}}
    assert not trie.unsubscribe("#.#", "alice")
    assert trie.unsubscribe("#", "alice")
    assert trie.subscribers("a.b") == set() and trie._node_count() == 1


def test_mqtt_preset() -> None:
    trie = Ctrie(MQTT)
    trie.subscribe("sport/+/player1", "a")
    trie.subscribe("sport/#", "b")
    trie.subscribe("sport/tennis/*", "c")  # '*' is literal in MQTT
    assert trie.subscribers("sport/tennis/player1") == {"a", "b"}
    assert trie.subscribers("sport") == {"b"}
    assert trie.subscribers("sport/tennis/*") == {"b", "c"}
    assert matches("sport/+/player1", "sport/x/player1", MQTT)
    assert Config.amqp() == AMQP == Config()


@pytest.mark.parametrize(
    ("kwargs", "bad"),
    [
        ({"single": ""}, "single"),
        ({"single": "#"}, "single"),
        ({"multi": "a.b"}, "multi"),
        ({"delimiter": ""}, "delimiter"),
    ],
)
def test_config_rejects_bad_syntax(kwargs: dict[str, str], bad: str) -> None:
    with pytest.raises(ValueError, match=bad):
        Config(**kwargs)


def test_subscribe_is_idempotent_and_unsubscribe_reports() -> None:
    trie = Ctrie()
    trie.subscribe("a.b", "x")
    trie.subscribe("a.b", "x")
    assert trie.subscriptions() == {"a.b": {"x"}}
    assert trie.unsubscribe("a.b", "x") is True
    assert trie.unsubscribe("a.b", "x") is False
    assert trie.unsubscribe("never.there", "x") is False
    assert trie.unsubscribe("a", "x") is False


# -- random operation sequences against the oracle ----------------------------------------


class CtrieMachine(RuleBasedStateMachine):
    """The live trie equals the oracle; every retired trie still equals its own frozen oracle."""

    def __init__(self) -> None:
        super().__init__()
        self.trie = Ctrie()
        self.oracle = Oracle()
        self.frozen: list[tuple[Ctrie, Oracle]] = []

    @initialize()
    def start(self) -> None:
        assert self.trie._node_count() == 1

    @rule(pattern=patterns, sub=subscribers)
    def subscribe(self, pattern: str, sub: int) -> None:
        self.trie.subscribe(pattern, sub)
        self.oracle.subscribe(pattern, sub)

    @rule(pattern=patterns, sub=subscribers)
    def unsubscribe_any(self, pattern: str, sub: int) -> None:
        assert self.trie.unsubscribe(pattern, sub) == self.oracle.unsubscribe(pattern, sub)

    @precondition(lambda self: self.oracle.pairs)
    @rule(data=st.data())
    def unsubscribe_existing(self, data: st.DataObject) -> None:
        pattern = data.draw(st.sampled_from(sorted(self.oracle.pairs)))
        sub = data.draw(st.sampled_from(sorted(self.oracle.pairs[pattern], key=repr)))
        assert self.oracle.unsubscribe(pattern, sub)
        assert self.trie.unsubscribe(pattern, sub)

    @rule(topic=topics)
    def lookup(self, topic: str) -> None:
        assert self.trie.subscribers(topic) == self.oracle.subscribers(topic)

    @precondition(lambda self: self.frozen)
    @rule(topic=topics, data=st.data())
    def lookup_frozen(self, topic: str, data: st.DataObject) -> None:
        trie, oracle = data.draw(st.sampled_from(self.frozen))
        assert trie.subscribers(topic) == oracle.subscribers(topic)

    @rule()
    def read_only_snapshot(self) -> None:
        self.frozen.append((self.trie.read_only_snapshot(), self.oracle.copy()))

    @rule(continue_on_copy=st.booleans())
    def fork(self, continue_on_copy: bool) -> None:
        """Take a writable snapshot; keep writing to one of the two, retire the other."""
        copy = self.trie.snapshot()
        retired = (
            (self.trie, self.oracle.copy()) if continue_on_copy else (copy, self.oracle.copy())
        )
        self.frozen.append(retired)
        if continue_on_copy:
            self.trie = copy

    @precondition(lambda self: self.frozen)
    @rule(data=st.data())
    def resume_frozen_copy(self, data: st.DataObject) -> None:
        """A writable snapshot of a retired trie starts from exactly its state."""
        trie, oracle = data.draw(st.sampled_from(self.frozen))
        self.frozen.append((self.trie, self.oracle.copy()))
        self.trie, self.oracle = trie.snapshot(), oracle.copy()

    @invariant()
    def live_trie_equals_oracle(self) -> None:
        assert self.trie.subscriptions() == self.oracle.pairs
        assert self.trie.topics() == sorted(self.oracle.pairs)
        # Removal prunes: no I-node survives that no subscribed pattern needs.
        assert self.trie._node_count() == self.oracle.prefixes()

    @invariant()
    def retired_tries_unchanged(self) -> None:
        for trie, oracle in self.frozen[-6:]:
            assert trie.subscriptions() == oracle.pairs


CtrieMachine.TestCase.settings = settings(max_examples=250, stateful_step_count=40, deadline=None)
TestCtrieMachine = CtrieMachine.TestCase


# -- snapshots ----------------------------------------------------------------------------


def fill(trie: Ctrie, oracle: Oracle, rng: random.Random, n: int) -> None:
    for _ in range(n):
        pattern = ".".join(rng.choice([*WORDS, "*", "#", "c"]) for _ in range(rng.randint(1, 4)))
        sub = rng.randrange(20)
        trie.subscribe(pattern, sub)
        oracle.subscribe(pattern, sub)


def churn(trie: Ctrie, oracle: Oracle, rng: random.Random, n: int) -> None:
    for _ in range(n):
        if oracle.pairs and rng.random() < 0.5:
            pattern = rng.choice(sorted(oracle.pairs))
            sub = rng.choice(sorted(oracle.pairs[pattern], key=repr))
            assert trie.unsubscribe(pattern, sub) and oracle.unsubscribe(pattern, sub)
        else:
            fill(trie, oracle, rng, 1)


def test_snapshots_keep_their_state_after_writes() -> None:
    rng = random.Random(1)
    trie, oracle = Ctrie(), Oracle()
    fill(trie, oracle, rng, 200)
    frozen, before = trie.read_only_snapshot(), oracle.copy()
    copy, copy_oracle = trie.snapshot(), oracle.copy()

    churn(trie, oracle, rng, 500)
    assert trie.subscriptions() == oracle.pairs
    assert frozen.subscriptions() == before.pairs
    assert copy.subscriptions() == before.pairs
    for topic in ("a.b", "a..c", "b", "", "c.c.c"):
        assert frozen.subscribers(topic) == before.subscribers(topic)

    churn(copy, copy_oracle, rng, 500)  # the copy diverges on its own
    assert copy.subscriptions() == copy_oracle.pairs
    assert trie.subscriptions() == oracle.pairs
    assert frozen.subscriptions() == before.pairs
    assert copy_oracle.pairs != oracle.pairs


def test_read_only_snapshot_refuses_writes() -> None:
    trie = Ctrie()
    trie.subscribe("a.*", 1)
    frozen = trie.read_only_snapshot()
    assert frozen.read_only and not trie.read_only
    with pytest.raises(ReadOnlyError, match="read-only"):
        frozen.subscribe("a.b", 2)
    with pytest.raises(SkipFilterError):
        frozen.unsubscribe("a.*", 1)
    assert frozen.read_only_snapshot() is frozen
    thawed = frozen.snapshot()  # writable, and independent of both
    thawed.subscribe("b", 3)
    trie.subscribe("c", 4)
    assert thawed.subscriptions() == {"a.*": {1}, "b": {3}}
    assert frozen.subscriptions() == {"a.*": {1}}
    assert trie.subscriptions() == {"a.*": {1}, "c": {4}}


def test_snapshot_of_snapshot_chain() -> None:
    trie = Ctrie()
    states = []
    for i in range(30):
        trie.subscribe(f"x.{i % 3}.#", i)
        states.append((trie.snapshot(), trie.subscriptions()))
        if i % 2:
            trie = trie.snapshot()
    for snap, expected in states:
        assert snap.subscriptions() == expected


# -- pruning ------------------------------------------------------------------------------


def test_unsubscribing_everything_prunes_to_the_root() -> None:
    rng = random.Random(7)
    trie, oracle = Ctrie(), Oracle()
    for round_ in range(3):
        fill(trie, oracle, rng, 400)
        assert trie._node_count() == oracle.prefixes() > 30
        if round_ == 1:
            trie = trie.snapshot()  # pruning works across generations too
        pairs = [(p, s) for p, subs in oracle.pairs.items() for s in subs]
        rng.shuffle(pairs)
        for pattern, sub in pairs:
            assert trie.unsubscribe(pattern, sub)
            oracle.unsubscribe(pattern, sub)
        assert trie.subscriptions() == {}
        assert trie._node_count() == 1


# -- real threads -------------------------------------------------------------------------


def matching_topic(pattern: str, rng: random.Random) -> str:
    """A topic the pattern matches: wildcards replaced by random words."""
    out: list[str] = []
    for word in pattern.split("."):
        if word == "*":
            out.append(rng.choice(WORDS))
        elif word == "#":
            out.extend(rng.choice(WORDS) for _ in range(rng.randint(0, 2)))
        else:
            out.append(word)
    return ".".join(out)


THREAD_PATTERNS = [
    ".".join(words)
    for words in (
        ("a",),
        ("a", "b"),
        ("a", "*"),
        ("a", "#"),
        ("#",),
        ("*", "b"),
        ("a", "b", "c"),
        ("a", "#", "c"),
        ("b", "", "a"),
        ("", "*"),
        ("a", "b", "c", "d"),
        ("*", "*", "c"),
    )
]


def run_threads(n_threads: int, overlapping: bool, snapshots: bool, seconds: float) -> None:
    """Threads subscribe/unsubscribe/look up their own pairs and check what they see.

    Disjoint: each thread owns its subscribers, so it can check every lookup exactly
    for them. Overlapping: threads share patterns and subscribers, each (pattern,
    subscriber) pair owned by one thread; a thread checks its held pairs are found.
    """
    trie = Ctrie()
    barrier = threading.Barrier(n_threads + snapshots)
    errors: list[BaseException] = []
    finals: list[Oracle] = [Oracle() for _ in range(n_threads)]
    stop = time.monotonic() + seconds
    subs_per_thread = 4
    all_pairs = [(p, s) for p in THREAD_PATTERNS for s in range(subs_per_thread * n_threads)]

    def owned(t: int) -> list[tuple[str, int]]:
        if overlapping:
            return [pair for k, pair in enumerate(all_pairs) if k % n_threads == t]
        return [(p, s) for p, s in all_pairs if s // subs_per_thread == t]

    def worker(t: int) -> None:
        rng = random.Random(t)
        mine = owned(t)
        my_subs = {s for _, s in mine}
        local = finals[t]
        barrier.wait()
        try:
            while time.monotonic() < stop:
                pattern, sub = rng.choice(mine)
                roll = rng.random()
                if roll < 0.4:
                    trie.subscribe(pattern, sub)
                    local.subscribe(pattern, sub)
                    topic = matching_topic(pattern, rng)
                    assert sub in trie.subscribers(topic), (pattern, sub, topic)
                elif roll < 0.8:
                    assert trie.unsubscribe(pattern, sub) == local.unsubscribe(pattern, sub)
                    topic = matching_topic(pattern, rng)
                else:
                    topic = ".".join(rng.choice(WORDS) for _ in range(rng.randint(1, 4)))
                found = trie.subscribers(topic)
                expected = local.subscribers(topic)
                if overlapping:
                    assert expected <= found, (topic, expected - found)
                else:
                    assert found & my_subs == expected, (topic, found & my_subs, expected)
        except BaseException as exc:  # reported by the main thread
            errors.append(exc)

    def snapshotter() -> None:
        rng = random.Random(-1)
        barrier.wait()
        try:
            while time.monotonic() < stop:
                if rng.random() < 0.5:
                    frozen = trie.read_only_snapshot()
                    first = frozen.subscriptions()
                    time.sleep(0.001)
                    assert frozen.subscriptions() == first
                else:
                    copy = trie.snapshot()
                    copy.subscribe("a.b", "ghost")
                    assert "ghost" not in trie.subscribers("a.b")
                    assert "ghost" in copy.subscribers("a.b")
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(t,), daemon=True) for t in range(n_threads)]
    if snapshots:
        threads.append(threading.Thread(target=snapshotter, daemon=True))
    old_interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-5)  # switch threads often, to interleave inside operations
    try:
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=seconds + 20)
    finally:
        sys.setswitchinterval(old_interval)
    assert not any(thread.is_alive() for thread in threads), "a thread hung"
    if errors:
        raise errors[0]

    expected = Oracle()
    for local in finals:
        for pattern, subs in local.pairs.items():
            for sub in subs:
                expected.subscribe(pattern, sub)
    assert trie.subscriptions() == expected.pairs
    for topic in ("a", "a.b", "a.b.c", "b..a", ".x", "a.b.c.d", "q.r.c"):
        assert trie.subscribers(topic) == expected.subscribers(topic)

    remove_all(trie, expected.pairs.items())
    assert trie.subscriptions() == {}
    if snapshots:
        # A removal racing a snapshot may leave its tombs for the next writer on
        # that path to prune: walk every path once.
        for pattern in THREAD_PATTERNS:
            trie.subscribe(pattern, "sweep")
            assert trie.unsubscribe(pattern, "sweep")
    assert trie._node_count() == 1


def remove_all(trie: Ctrie, pairs: Iterable[tuple[str, set[Hashable]]]) -> None:
    for pattern, subs in list(pairs):
        for sub in subs:
            assert trie.unsubscribe(pattern, sub)


@pytest.mark.parametrize("n_threads", [1, 2, 4, 8])
@pytest.mark.parametrize("overlapping", [False, True], ids=["disjoint", "overlapping"])
def test_threads_agree_with_oracle(n_threads: int, overlapping: bool) -> None:
    run_threads(n_threads, overlapping, snapshots=False, seconds=0.4)


@pytest.mark.parametrize("n_threads", [2, 6])
def test_threads_with_concurrent_snapshots(n_threads: int) -> None:
    run_threads(n_threads, overlapping=n_threads > 2, snapshots=True, seconds=0.8)
