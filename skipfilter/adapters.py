"""Tries that do not speak :class:`~skipfilter.matcher.Matcher` natively, adapted to it,
and a registry so tests and benchmarks swap implementations with one line.

- :class:`CtrieMatcher` -- the Ctrie (matchbox port): one trie of subscribed patterns,
  one of allowed patterns; AMQP and MQTT syntaxes.
- :class:`PahoMatcher` -- paho-mqtt's ``MQTTMatcher``, a third-party Python trie; MQTT only.
- :data:`IMPLEMENTATIONS`, :data:`SUPPORTED_SYNTAXES`, :func:`make_matcher` -- the registry.

Both adapters validate selectors with :func:`~skipfilter.selectors.compile_selector`
first, so every implementation rejects exactly the same input.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Hashable, Iterable, Sequence
from itertools import count

from paho.mqtt.matcher import MQTTMatcher
from pyroaring import BitMap64

from skipfilter.baselines import TRIE_SYNTAXES, CachedScan, LinearScan, LockedTrie
from skipfilter.ctrie import AMQP, MQTT, Config, Ctrie
from skipfilter.index import TopicIndex
from skipfilter.matcher import Matcher, check_selector_list, check_topics, registration
from skipfilter.selectors import SYNTAXES, compile_selector

__all__ = [
    "IMPLEMENTATIONS",
    "SUPPORTED_SYNTAXES",
    "CtrieMatcher",
    "PahoMatcher",
    "make_matcher",
]


def _texts(selectors: Iterable[str], syntax: str, what: str) -> tuple[str, ...]:
    """Validate ``selectors`` (InvalidSelector as every implementation raises); deduplicate."""
    check_selector_list(selectors, what)
    texts = tuple(dict.fromkeys(selectors))
    for text in texts:
        compile_selector(text, syntax)
    return texts


_CTRIE_CONFIGS = {"amqp": AMQP, "mqtt": MQTT}


class _Role:
    """The Ctries of one role (subscribed or allowed).

    MQTT's ``$`` rule (a filter starting with a wildcard never matches a topic starting
    with ``$``) is not a Ctrie feature, so under MQTT the patterns whose first level is
    a wildcard live in a second Ctrie that ``$`` topics skip.
    """

    __slots__ = ("dollar_rule", "plain", "wild_first", "wildcards")

    def __init__(self, config: Config, dollar_rule: bool) -> None:
        self.plain = Ctrie(config)
        self.wild_first = Ctrie(config)
        self.dollar_rule = dollar_rule
        self.wildcards = (config.single, config.multi)

    def _trie(self, pattern: str) -> Ctrie:
        if self.dollar_rule and pattern.split("/", 1)[0] in self.wildcards:
            return self.wild_first
        return self.plain

    def subscribe(self, pattern: str, sid: int) -> None:
        self._trie(pattern).subscribe(pattern, sid)

    def unsubscribe(self, pattern: str, sid: int) -> None:
        self._trie(pattern).unsubscribe(pattern, sid)

    def lookup(self, topic: str, out: set[Hashable]) -> None:
        out |= self.plain.subscribers(topic)
        if not (self.dollar_rule and topic.startswith("$")):
            out |= self.wild_first.subscribers(topic)


class CtrieMatcher:
    """:class:`~skipfilter.ctrie.Ctrie` behind the Matcher interface (AMQP and MQTT syntaxes).

    Each selector is a (pattern, sid) pair in the subscribed Ctrie, each allowed
    selector one in the allowed Ctrie. Lookups take no lock; a small lock guards only
    the sid -> patterns table. Runtime: :meth:`match` as ``Ctrie.subscribers`` per
    topic plus building the bitmap; :meth:`subscribe` and :meth:`unsubscribe` one
    Ctrie write per selector. Thread-safe; once subscribe/unsubscribe returns, every
    later match reflects it (each pattern write is linearizable).
    """

    def __init__(self, syntax: str = "amqp") -> None:
        config = _CTRIE_CONFIGS.get(syntax)
        if config is None:
            raise ValueError(f"CtrieMatcher supports amqp and mqtt selectors, not {syntax!r}")
        self._syntax = syntax
        self._ids = count()
        self._lock = threading.Lock()
        self._patterns: dict[int, tuple[tuple[str, ...], tuple[str, ...]]] = {}
        self._subscribed = _Role(config, syntax == "mqtt")
        self._authorized = _Role(config, syntax == "mqtt")

    @property
    def syntax(self) -> str:
        """The selector syntax."""
        return self._syntax

    def subscribe(
        self, selectors: Iterable[str], allowed: Iterable[str] | None = None, payload: object = None
    ) -> int:
        """Insert every (pattern, sid) pair; return the sid once all are visible."""
        texts, authorized = registration(
            selectors, allowed, lambda items, what: _texts(items, self._syntax, what)
        )
        with self._lock:
            sid = next(self._ids)
            self._patterns[sid] = (texts, authorized)
        for text in texts:
            self._subscribed.subscribe(text, sid)
        for text in authorized:
            self._authorized.subscribe(text, sid)
        return sid

    def unsubscribe(self, sid: int) -> bool:
        """Remove every pattern of ``sid`` from both Ctries."""
        with self._lock:
            entry = self._patterns.pop(sid, None)
        if entry is None:
            return False
        for text in entry[0]:
            self._subscribed.unsubscribe(text, sid)
        for text in entry[1]:
            self._authorized.unsubscribe(text, sid)
        return True

    def match(self, topics: Sequence[str], private: bool = False) -> BitMap64:
        """Look each topic up in the subscribed Ctrie (and the allowed one if private)."""
        check_topics(topics)
        found: set[Hashable] = set()
        for topic in topics:
            self._subscribed.lookup(topic, found)
        if private and found:
            allowed: set[Hashable] = set()
            for topic in topics:
                self._authorized.lookup(topic, allowed)
            found &= allowed
        return BitMap64(found)  # type: ignore[arg-type]  # sids are ints

    def __len__(self) -> int:
        return len(self._patterns)


class _PahoRole:
    """One paho ``MQTTMatcher``: filter -> set of sids."""

    __slots__ = ("trie",)

    def __init__(self) -> None:
        self.trie = MQTTMatcher()  # type: ignore[no-untyped-call]

    def add(self, text: str, sid: int) -> None:
        try:
            sids: set[int] = self.trie[text]
        except KeyError:
            sids = self.trie[text] = set()
        sids.add(sid)

    def discard(self, text: str, sid: int) -> None:
        sids: set[int] = self.trie[text]
        sids.discard(sid)
        if not sids:
            del self.trie[text]  # type: ignore[no-untyped-call]

    def lookup(self, topic: str, out: set[int]) -> None:
        for sids in self.trie.iter_match(topic):  # type: ignore[no-untyped-call]
            out |= sids


class PahoMatcher:
    """paho-mqtt's ``MQTTMatcher`` (a plain Python trie) behind the Matcher interface; MQTT only.

    paho implements the ``$`` rule (wildcards at the first level skip ``$`` topics) and
    ``#`` matching the parent level, so its answers equal our MQTT semantics. It does
    not validate filters (``a/#/b`` would be stored); this adapter rejects them first.
    It is not thread-safe: one lock serialises every operation here.
    Runtime: :meth:`match` O(nodes visited) per topic, subscribe/unsubscribe O(levels).
    """

    def __init__(self, syntax: str = "mqtt") -> None:
        if syntax != "mqtt":
            raise ValueError(f"PahoMatcher supports mqtt selectors only, not {syntax!r}")
        self._ids = count()
        self._lock = threading.Lock()
        self._patterns: dict[int, tuple[tuple[str, ...], tuple[str, ...]]] = {}
        self._subscribed = _PahoRole()
        self._authorized = _PahoRole()

    @property
    def syntax(self) -> str:
        """Always ``"mqtt"``."""
        return "mqtt"

    def subscribe(
        self, selectors: Iterable[str], allowed: Iterable[str] | None = None, payload: object = None
    ) -> int:
        """Store each filter's sid in the subscribed (and allowed) matcher; return the sid."""
        texts, authorized = registration(
            selectors, allowed, lambda items, what: _texts(items, "mqtt", what)
        )
        with self._lock:
            sid = next(self._ids)
            self._patterns[sid] = (texts, authorized)
            for text in texts:
                self._subscribed.add(text, sid)
            for text in authorized:
                self._authorized.add(text, sid)
        return sid

    def unsubscribe(self, sid: int) -> bool:
        """Remove every filter of ``sid``."""
        with self._lock:
            entry = self._patterns.pop(sid, None)
            if entry is None:
                return False
            for text in entry[0]:
                self._subscribed.discard(text, sid)
            for text in entry[1]:
                self._authorized.discard(text, sid)
            return True

    def match(self, topics: Sequence[str], private: bool = False) -> BitMap64:
        """``iter_match`` each topic; private: AND the allowed matcher's answer."""
        check_topics(topics)
        found: set[int] = set()
        with self._lock:
            for topic in topics:
                self._subscribed.lookup(topic, found)
            if private and found:
                allowed: set[int] = set()
                for topic in topics:
                    self._authorized.lookup(topic, allowed)
                found &= allowed
        return BitMap64(found)

    def __len__(self) -> int:
        return len(self._patterns)


# -- registry ------------------------------------------------------------------------------

#: Implementation name -> factory taking the selector syntax.
IMPLEMENTATIONS: dict[str, Callable[[str], Matcher]] = {
    "topicindex": TopicIndex,
    "linearscan": LinearScan,
    "cachedscan": CachedScan,
    "lockedtrie": LockedTrie,
    "ctrie": CtrieMatcher,
    "paho": PahoMatcher,
}

#: Implementation name -> the selector syntaxes it supports.
SUPPORTED_SYNTAXES: dict[str, tuple[str, ...]] = {
    "topicindex": SYNTAXES,
    "linearscan": SYNTAXES,
    "cachedscan": SYNTAXES,
    "lockedtrie": TRIE_SYNTAXES,
    "ctrie": ("amqp", "mqtt"),
    "paho": ("mqtt",),
}

_CACHED = {"topicindex": TopicIndex, "cachedscan": CachedScan, "lockedtrie": LockedTrie}


def make_matcher(name: str, syntax: str, *, cache_size: int | None = None) -> Matcher:
    """A fresh ``name`` implementation for ``syntax``; ``cache_size`` for the cached ones.

    Raises ValueError naming the supported choices for an unknown name or syntax.

    >>> m = make_matcher("lockedtrie", "amqp", cache_size=16)
    >>> sid = m.subscribe(["stock.#"])
    >>> list(m.match(["stock.ibm"]))
    [0]
    """
    if name not in IMPLEMENTATIONS:
        choices = ", ".join(IMPLEMENTATIONS)
        raise ValueError(f"unknown implementation {name!r}; expected one of {choices}")
    if syntax not in SUPPORTED_SYNTAXES[name]:
        supported = ", ".join(SUPPORTED_SYNTAXES[name])
        raise ValueError(f"{name} does not support {syntax!r} selectors; it supports {supported}")
    if cache_size is not None and name in _CACHED:
        return _CACHED[name](syntax, cache_size)  # type: ignore[no-any-return]
    return IMPLEMENTATIONS[name](syntax)
