"""Patterns of a word syntax (AMQP, NATS, MQTT) in a word trie, and their holders by shape.

Literal-prefix groups suit Mercure URLs, not wildcard-first patterns: on the amqp
workload over a quarter of the distinct patterns start with ``*`` or ``#`` and share the
empty prefix, so a new topic tested them all. Here a topic finds its patterns with one
dict probe per pattern shape (:mod:`~skipfilter.index.shapes`) where the shapes of its
word count are few (filter sets written from a few templates: IoT, industrial), else by
walking the word trie's matching branches (:mod:`~skipfilter.index.wordtrie`; AMQP-style
sets with wildcards anywhere). docs/topic-index.md has the figures.

Both prove a match, MQTT's ``$`` rule and NATS ``>`` included, except for a pattern with
words after its multi wildcard (AMQP ``a.#.b``): those are tested (see
:func:`needs_test`), so they are in the trie only, and while one is filed every topic
walks it.
"""

from __future__ import annotations

from typing import Any, Final

from skipfilter.core import Bitmap
from skipfilter.index.pattern import Pattern
from skipfilter.index.shapes import Probe, ShapeIndex, needs_test
from skipfilter.index.wordtrie import WordTrie
from skipfilter.selectors import WORD_SYNTAXES

__all__ = ["SHAPES_PER_WORD", "WordIndex", "needs_test"]

#: How a topic of some word count finds its patterns: its shapes' probes, or None (walk).
Plan = tuple[Probe, ...] | None
_UNPLANNED: Final[Any] = object()
PLANNED_COUNTS: Final = 64  # word counts whose plan is kept (longer topics plan anew)

#: A topic of n words probes the patterns' shapes when there are at most this many per
#: word (and one more), else walks the trie: one probe costs about one node visit, and a
#: walk visits at least n + 1 nodes (docs/topic-index.md has the measurements).
SHAPES_PER_WORD = 4


class WordIndex:
    """Distinct word-syntax patterns; :meth:`collect` appends those matching a topic (a
    trie walk) and :meth:`union_words` ORs their holders (shape probes where shapes are
    few). Not thread-safe (TopicIndex's lock)."""

    __slots__ = ("_dollar_rule", "_plans", "_shapes", "_syntax", "_tested", "_trie", "_walk")

    def __init__(self, syntax: str) -> None:
        words = WORD_SYNTAXES[syntax]
        self._syntax = words
        self._dollar_rule = words.dollar_rule
        self._trie: WordTrie[Pattern] = WordTrie(
            words.delimiter, words.single, words.multi, words.multi_min
        )
        self._walk = self._trie.walk
        self._shapes = ShapeIndex(words)
        # Per word count (of a topic not under the '$' rule): its shapes' probes, or None
        # to walk the trie (always, while a pattern needing a test is filed); planned anew
        # when a shape comes or goes, or the first such pattern comes or the last goes.
        self._plans: list[Plan] = [_UNPLANNED] * PLANNED_COUNTS
        self._tested = 0  # patterns whose candidacy needs a test

    def __len__(self) -> int:
        """Number of distinct patterns filed."""
        return len(self._trie)

    def shapes(self) -> int:
        """Number of distinct shapes of the patterns needing no test
        (:mod:`~skipfilter.index.shapes`)."""
        return len(self._shapes)

    def _words(self, pattern: Pattern) -> list[str]:
        assert pattern.selector is not None
        return self._syntax.words(pattern.selector.text)

    def add(self, pattern: Pattern) -> None:
        """File a new distinct pattern."""
        words = self._words(pattern)
        pattern.tested = needs_test(words, self._syntax)
        self._trie.add(words, pattern)
        if pattern.tested:
            self._tested += 1
            replan = self._tested == 1  # every topic walks from now on (see _plan)
        else:
            replan = self._shapes.add(pattern)
        if replan:
            self._plans = [_UNPLANNED] * PLANNED_COUNTS

    def remove(self, pattern: Pattern) -> None:
        """Unfile a pattern no subscriber holds any more."""
        self._trie.remove(self._words(pattern), pattern)
        if pattern.tested:
            self._tested -= 1
            replan = not self._tested  # the shapes may answer again
        else:
            replan = self._shapes.remove(pattern)
        if replan:
            self._plans = [_UNPLANNED] * PLANNED_COUNTS

    def collect(self, topic: str, out: list[Pattern]) -> None:
        """Append every filed pattern that matches ``topic``."""
        words = self._syntax.words(topic)
        self.collect_words(topic, words, out, self._dollar_rule and topic[:1] == "$")

    def collect_words(self, topic: str, words: list[str], out: list[Pattern], dollar: bool) -> None:
        """:meth:`collect` for ``topic`` already split into ``words``; ``dollar``: it starts
        with ``$`` under MQTT's rule. Walks the trie (the shapes file holders, not
        patterns), then tests the candidates that need it."""
        start = len(out)
        self._walk(words, out, dollar)
        if self._tested and len(out) > start:
            out[start:] = [
                p
                for p in out[start:]
                if not p.tested or (p.selector is not None and p.selector.test(topic))
            ]

    def union_words(self, topic: str, words: list[str], dollar: bool) -> tuple[Bitmap | None, int]:
        """A fresh bitmap of the holders of the patterns matching ``topic`` (split into
        ``words``), or None; and how many patterns matched. Probes the shapes when they
        are few for this word count (at most ``SHAPES_PER_WORD`` per word and one) and no
        pattern needs a test, ORing each hit in as it comes; else walks the trie."""
        n = len(words)
        if dollar or n >= PLANNED_COUNTS:
            plan = self._plan(n, dollar)
        else:
            plan = self._plans[n]
            if plan is _UNPLANNED:
                plan = self._plans[n] = self._plan(n, dollar)
        if plan is None:  # many shapes, or a pattern needs its test: walk
            patterns: list[Pattern] = []
            self.collect_words(topic, words, patterns, dollar)
            if not patterns:
                return None, 0
            union = Bitmap()
            for pattern in patterns:
                union |= pattern.sids
            return union, len(patterns)
        found: Bitmap | None = None
        k = 0
        for key, by_key in plan:
            holders = by_key.get(key(words))
            if holders is not None:
                if found is None:
                    found = Bitmap()
                found |= holders
                k += 1
        return found, k

    def _plan(self, n: int, dollar: bool) -> Plan:
        if self._tested:  # tested patterns are in the trie only
            return None
        probes = self._shapes.probes(n, dollar)
        return probes if len(probes) <= SHAPES_PER_WORD * (n + 1) else None

    def stats(self) -> dict[str, int]:
        """Sizes, for metrics and tuning."""
        return {"trie_patterns": len(self._trie), "tested_patterns": self._tested}
