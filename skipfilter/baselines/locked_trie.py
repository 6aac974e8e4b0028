"""LockedTrie: a NATS-sublist style word trie with a result cache, under one lock.

- :class:`LockedTrie` -- a word trie with single/multi wildcards under one lock and a
  bounded per-topic result cache patched on subscribe and invalidated on unsubscribe,
  as the NATS server's sublist does (AMQP, NATS and MQTT syntaxes).
- :data:`TRIE_SYNTAXES` -- the syntaxes it supports.

Thread-safe: every method takes the instance's one lock, so each operation is
linearizable.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Sequence
from itertools import count

from pyroaring import BitMap64

from skipfilter.baselines.base import compiled
from skipfilter.matcher import SelectorInput, registration
from skipfilter.selectors import WORD_SYNTAXES, Selector, WordSyntax, topic_checker

__all__ = ["TRIE_SYNTAXES", "LockedTrie"]


#: Selector syntaxes :class:`LockedTrie` supports.
TRIE_SYNTAXES: tuple[str, ...] = tuple(WORD_SYNTAXES)


class _Node:
    """A trie node: children by word (wildcards under their own word) and the sids ending here."""

    __slots__ = ("children", "sids")

    def __init__(self) -> None:
        self.children: dict[str, _Node] = {}
        self.sids = BitMap64()


class _Trie:
    """Word trie of patterns with a bounded topic -> sids cache; the caller holds the lock.

    Cache upkeep follows NATS' sublist: a subscribe adds the sid to every cached topic
    its pattern matches, an unsubscribe drops the cached topics its pattern matches
    (a sid may reach a topic through several patterns, so patching a removal is unsafe),
    and an overfull cache is swept down to half, oldest entries first.
    """

    __slots__ = ("_cache", "_cache_size", "_root", "_words")

    def __init__(self, words: WordSyntax, cache_size: int) -> None:
        self._words = words
        self._root = _Node()
        self._cache: dict[str, BitMap64] = {}
        self._cache_size = cache_size

    def split(self, selector: Selector) -> tuple[str, ...]:
        """The pattern's words, runs of the multi wildcard collapsed (``a.#.#`` is ``a.#``)."""
        multi = self._words.multi
        out: list[str] = []
        for word in self._words.words(selector.text):
            if not (word == multi and out and out[-1] == multi):
                out.append(word)
        return tuple(out)

    def insert(self, selector: Selector, sid: int) -> None:
        """Add ``sid`` under the pattern and to the cached topics it matches: O(d + cache)."""
        node = self._root
        for word in self.split(selector):
            child = node.children.get(word)
            if child is None:
                child = node.children[word] = _Node()
            node = child
        node.sids.add(sid)
        if selector.exact is not None:
            cached = self._cache.get(selector.exact)
            if cached is not None:
                cached.add(sid)
            return
        test = selector.test
        for topic, cached in self._cache.items():
            if test(topic):
                cached.add(sid)

    def remove(self, selector: Selector, sid: int) -> None:
        """Drop ``sid`` from the pattern, prune emptied nodes, evict matching cached topics."""
        path: list[tuple[_Node, str]] = []
        node = self._root
        for word in self.split(selector):
            child = node.children.get(word)
            if child is None:
                return
            path.append((node, word))
            node = child
        node.sids.discard(sid)
        for parent, word in reversed(path):
            child = parent.children[word]
            if child.sids or child.children:
                break
            del parent.children[word]
        if selector.exact is not None:
            self._cache.pop(selector.exact, None)
            return
        test = selector.test
        for topic in [t for t in self._cache if test(t)]:
            del self._cache[topic]

    def lookup(self, topic: str) -> BitMap64:
        """The sids whose patterns match ``topic`` (a cached bitmap: do not mutate)."""
        cached = self._cache.get(topic)
        if cached is not None:
            return cached
        found: dict[int, BitMap64] = {}
        words = self._words.words(topic)
        dollar = self._words.dollar_rule and topic.startswith("$")
        self._collect(self._root, words, 0, found, dollar)
        result = BitMap64()
        result.update(*found.values())  # in place: faster than BitMap64.union for many
        cache = self._cache
        if len(cache) >= self._cache_size:  # sweep: keep the newer half
            for old in list(cache)[: len(cache) - self._cache_size // 2]:
                del cache[old]
        cache[topic] = result
        return result

    def _collect(
        self, node: _Node, words: list[str], k: int, found: dict[int, BitMap64], dollar: bool
    ) -> None:
        """Add the sid bitmaps of patterns below ``node`` that match ``words[k:]``."""
        children = node.children
        if not children:
            if k == len(words) and node.sids:
                found[id(node)] = node.sids
            return
        n = len(words)
        if k == n:
            if node.sids:
                found[id(node)] = node.sids
        else:
            word = words[k]
            syntax = self._words
            wild = not (dollar and k == 0)
            if word != syntax.single and word != syntax.multi:
                child = children.get(word)
                if child is not None:
                    self._collect(child, words, k + 1, found, dollar)
            if wild:
                child = children.get(syntax.single)
                if child is not None:
                    self._collect(child, words, k + 1, found, dollar)
        child = children.get(self._words.multi)
        if child is not None and not (dollar and k == 0):
            for j in range(k + self._words.multi_min, n + 1):
                self._collect(child, words, j, found, dollar)


class LockedTrie:
    """NATS-sublist style: a word trie with ``*``/``#`` (or ``>``, ``+``) under one lock.

    Patterns live in a trie keyed by word; each node holds the bitmap of subscribers
    whose pattern ends there. A bounded per-topic result cache (``cache_size`` topics,
    NATS uses 1024) serves repeated topics; a subscribe patches it and an unsubscribe
    invalidates the entries its patterns match, exactly as the sublist does. Allowed
    selectors (private updates) live in a second trie.

    Runtime: :meth:`match` O(1) per cached topic, else O(nodes visited) -- the topic's
    words along exact and ``*`` branches, every suffix below a ``#``; :meth:`subscribe`
    and :meth:`unsubscribe` O(pattern words + cached topics) per selector.
    Thread-safe: one lock serialises every operation.
    """

    def __init__(self, syntax: str = "amqp", cache_size: int = 1024) -> None:
        if syntax not in WORD_SYNTAXES:
            raise ValueError(
                f"LockedTrie supports {', '.join(TRIE_SYNTAXES)} selectors, not {syntax!r}"
            )
        if cache_size <= 0:
            raise ValueError(f"cache_size must be positive, got {cache_size}")
        self._syntax = syntax
        self._check_topics = topic_checker(syntax)  # as TopicIndex checks them
        self._ids = count()
        self._lock = threading.Lock()
        self._subscribers: dict[int, tuple[tuple[Selector, ...], tuple[Selector, ...]]] = {}
        self._subscribed = _Trie(WORD_SYNTAXES[syntax], cache_size)
        self._authorized = _Trie(WORD_SYNTAXES[syntax], cache_size)

    @property
    def syntax(self) -> str:
        """The selector syntax."""
        return self._syntax

    def _prepare(self, selectors: Iterable[SelectorInput], what: str) -> tuple[Selector, ...]:
        return compiled(selectors, self._syntax, what, exact=False)

    def subscribe(
        self,
        selectors: Iterable[SelectorInput],
        allowed: Iterable[SelectorInput] | None = None,
        payload: object = None,
    ) -> int:
        """Add a subscriber to both tries; return its id. O(selectors x (words + cache))."""
        compiled, authorized = registration(selectors, allowed, self._prepare)
        with self._lock:
            sid = next(self._ids)
            self._subscribers[sid] = (compiled, authorized)
            for selector in compiled:
                self._subscribed.insert(selector, sid)
            for selector in authorized:
                self._authorized.insert(selector, sid)
        return sid

    def unsubscribe(self, sid: int) -> bool:
        """Remove a subscriber from both tries. O(selectors x (words + cache))."""
        with self._lock:
            entry = self._subscribers.pop(sid, None)
            if entry is None:
                return False
            for selector in entry[0]:
                self._subscribed.remove(selector, sid)
            for selector in entry[1]:
                self._authorized.remove(selector, sid)
            return True

    def match(self, topics: Sequence[str], private: bool = False) -> BitMap64:
        """Union of the per-topic results; private: AND the allowed trie's. Fresh bitmap."""
        self._check_topics(topics)
        lock = self._lock
        lock.acquire()  # as TopicIndex.match takes its lock (cheaper than `with`)
        try:
            result = BitMap64()
            if topics:
                result = BitMap64.union(*[self._subscribed.lookup(t) for t in topics])
            if private and result:
                result &= BitMap64.union(*[self._authorized.lookup(t) for t in topics])
            return result
        finally:
            lock.release()

    def __len__(self) -> int:
        return len(self._subscribers)
