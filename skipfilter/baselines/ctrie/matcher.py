"""The Ctrie behind the :class:`~skipfilter.matcher.Matcher` interface: :class:`CtrieMatcher`.

One Ctrie of subscribed patterns and one of allowed patterns, per (pattern, sid) pair;
AMQP and MQTT syntaxes. Selectors are validated with
:func:`~skipfilter.selectors.compile_selector` first, so it refuses exactly the input
every other implementation refuses.
"""

from __future__ import annotations

import threading
from collections.abc import Hashable, Iterable, Sequence
from itertools import count

from pyroaring import BitMap64

from skipfilter.baselines.base import validated_texts
from skipfilter.baselines.ctrie.syntax import Config
from skipfilter.baselines.ctrie.trie import Ctrie
from skipfilter.matcher import SelectorInput, registration
from skipfilter.selectors import WORD_SYNTAXES, WordSyntax, topic_checker

__all__ = ["CTRIE_SYNTAXES", "CtrieMatcher"]

#: The word syntaxes the Ctrie can serve: those whose multi wildcard matches zero words
#: or more, as the Ctrie's does (not NATS, whose '>' needs one).
CTRIE_SYNTAXES: tuple[str, ...] = tuple(
    name for name, words in WORD_SYNTAXES.items() if words.multi_min == 0
)


class _Role:
    """The Ctries of one role (subscribed or allowed).

    Two rules of the syntaxes are not Ctrie features. MQTT's ``$`` rule (a filter
    starting with a wildcard never matches a topic starting with ``$``): under MQTT the
    patterns whose first level is a wildcard live in a second Ctrie that ``$`` topics
    skip. AMQP's empty routing key has no words (the Ctrie reads one empty word): the
    subscribers of the patterns it matches ("", ``#``, ``#.#``...) are counted apart,
    copied on write so lookups read them without a lock.
    """

    __slots__ = ("dollar_rule", "lock", "no_words", "plain", "wild_first", "words")

    def __init__(self, words: WordSyntax) -> None:
        self.plain = Ctrie(Config.of(words))
        self.wild_first = Ctrie(Config.of(words))
        self.dollar_rule = words.dollar_rule
        self.words = words
        self.lock = threading.Lock()  # writers of no_words only
        self.no_words: dict[int, int] = {}  # sid -> its patterns matching no words

    def _matches_no_words(self, pattern: str) -> bool:
        return self.words.empty_is_no_words and all(
            word == self.words.multi for word in self.words.words(pattern)
        )

    def _count_no_words(self, pattern: str, sid: int, delta: int) -> None:
        if self._matches_no_words(pattern):
            with self.lock:
                counts = dict(self.no_words)
                counts[sid] = counts.get(sid, 0) + delta
                if not counts[sid]:
                    del counts[sid]
                self.no_words = counts

    def _trie(self, pattern: str) -> Ctrie:
        first = pattern.split(self.words.delimiter, 1)[0]
        if self.dollar_rule and first in (self.words.single, self.words.multi):
            return self.wild_first
        return self.plain

    def subscribe(self, pattern: str, sid: int) -> None:
        self._trie(pattern).subscribe(pattern, sid)
        self._count_no_words(pattern, sid, 1)

    def unsubscribe(self, pattern: str, sid: int) -> None:
        self._trie(pattern).unsubscribe(pattern, sid)
        self._count_no_words(pattern, sid, -1)

    def lookup(self, topic: str, out: set[Hashable]) -> None:
        if not topic and self.words.empty_is_no_words:
            out.update(self.no_words)
            return
        out |= self.plain.subscribers(topic)
        if not (self.dollar_rule and topic.startswith("$")):
            out |= self.wild_first.subscribers(topic)


class CtrieMatcher:
    """The :class:`~skipfilter.baselines.ctrie.trie.Ctrie` as a Matcher (AMQP and MQTT syntaxes).

    Each selector is a (pattern, sid) pair in the subscribed Ctrie, each allowed
    selector one in the allowed Ctrie. Lookups take no lock; a small lock guards only
    the sid -> patterns table. Runtime: :meth:`match` as ``Ctrie.subscribers`` per
    topic plus building the bitmap; :meth:`subscribe` and :meth:`unsubscribe` one
    Ctrie write per selector. Thread-safe; once subscribe/unsubscribe returns, every
    later match reflects it (each pattern write is linearizable).
    """

    def __init__(self, syntax: str = "amqp") -> None:
        if syntax not in CTRIE_SYNTAXES:
            supported = " and ".join(CTRIE_SYNTAXES)
            raise ValueError(f"CtrieMatcher supports {supported} selectors, not {syntax!r}")
        self._syntax = syntax
        self._check_topics = topic_checker(syntax)  # as TopicIndex checks them
        self._ids = count()
        self._lock = threading.Lock()
        self._patterns: dict[int, tuple[tuple[str, ...], tuple[str, ...]]] = {}
        self._subscribed = _Role(WORD_SYNTAXES[syntax])
        self._authorized = _Role(WORD_SYNTAXES[syntax])

    @property
    def syntax(self) -> str:
        """The selector syntax."""
        return self._syntax

    def subscribe(
        self,
        selectors: Iterable[SelectorInput],
        allowed: Iterable[SelectorInput] | None = None,
        payload: object = None,
    ) -> int:
        """Insert every (pattern, sid) pair; return the sid once all are visible."""
        texts, authorized = registration(
            selectors, allowed, lambda items, what: validated_texts(items, self._syntax, what)
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
        self._check_topics(topics)
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
