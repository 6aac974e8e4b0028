"""Word-syntax patterns (AMQP, NATS, MQTT), answered by whichever of two paths is cheaper.

Two structures hold the same subscribers, and a topic is answered by one of them:

- the **trie path**: every distinct pattern in the word candidate index
  (:class:`~skipfilter.index.word_index.WordIndex`: by shape, or in a word trie) with the
  bitmap of all its holders; a topic finds the ``k`` patterns it reaches and ORs their
  bitmaps. Cheap when ``k`` and the answer are small (IoT filters: a topic reaches a few
  filters of tens of subscribers each).
- the **level path**: each subscriber's pattern filed by id, level by level
  (:class:`~skipfilter.index.level_index.LevelIndex`); a topic of ``n`` words costs
  ``n + 1`` ANDs of level bitmaps, whatever ``k``. Cheap when ``k`` or the answer is large
  (AMQP-style sets where a topic reaches dozens of patterns and thousands of
  subscribers). A subscriber's second pattern, or one the level index cannot file, stays
  in a second candidate index (``rest``) the level path also reads.

:class:`PathChoice` picks the path per topic word count from what the trie path costs
such topics (:func:`trie_cost`): priced on the first lookup of each word count, then on
one trie-path lookup in ``LEARN_EVERY`` (16); on the level path one lookup in
``LEARN_EVERY * WALK_EVERY`` (64) also finds the patterns to price the other path. The
rule and its measured crossover: docs/topic-index.md.
"""

from __future__ import annotations

from typing import Final

from skipfilter.core import Bitmap
from skipfilter.index.level_index import LevelIndex
from skipfilter.index.path_choice import LEARN_EVERY, PathChoice, trie_cost
from skipfilter.index.pattern import Pattern
from skipfilter.index.tuning import Tuning
from skipfilter.index.word_index import WordIndex
from skipfilter.selectors import WORD_SYNTAXES

__all__ = ["LEVEL_DEPTH", "WordPaths"]

#: Patterns of more words than this stay in the trie only, not in the level index.
LEVEL_DEPTH: Final = 16

#: Past this many pattern shapes (filter sets with wildcards anywhere: AMQP-style, where
#: topics reach dozens of patterns and the level index wins) subscribers are filed by level
#: as they come; below it (IoT-style templates: a topic reaches a pattern per shape at
#: most) only once a lookup chooses the level index. The workloads have 4-8 and 88.
EAGER_SHAPES: Final = 32


class WordPaths:
    """Patterns of one word syntax and, per subscriber, where it is filed; see the module doc.

    The caller (:class:`~skipfilter.index.table.SelectorTable`) owns the distinct
    :class:`~skipfilter.index.pattern.Pattern` objects and their holder bitmaps; here they
    are filed (:meth:`add`, :meth:`remove`) and each holder is filed by level or in the rest
    trie (:meth:`hold`, :meth:`release`). Not thread-safe (TopicIndex's lock).
    """

    def __init__(self, syntax: str, tuning: Tuning) -> None:
        """Empty paths for ``syntax``; ``tuning.level_index`` and ``level_crossover`` say
        which path answers (:class:`PathChoice`)."""
        words = WORD_SYNTAXES[syntax]
        self._dollar_rule = words.dollar_rule
        self._trie = WordIndex(syntax)  # every distinct pattern, with all its holders
        self._collect = self._trie.collect_words
        self._union = self._trie.union_words
        self._delimiter, self._no_words = words.delimiter, words.empty_is_no_words
        mode = tuning.level_index
        self._levels = LevelIndex(words, LEVEL_DEPTH) if mode != "never" else None
        self._level_of: dict[int, Pattern] = {}  # sid -> its pattern filed by level
        # sid -> the pattern it will be filed by level with, once the level index is wanted
        # ("auto" files nobody there until some word count chooses it: see _catch_up).
        self._unfiled: dict[int, Pattern] = {}
        self._filing = mode == "always"  # subscribes file by level at once
        self._batch = tuning.level_filing_batch
        self._rest = WordIndex(syntax)  # patterns of holders not filed by level, with them
        self._rest_patterns: dict[Pattern, Pattern] = {}  # pattern -> its rest-trie twin
        forced = None if mode == "auto" else mode == "always" and self._levels is not None
        self._choice = PathChoice(tuning.level_crossover / 100, LEVEL_DEPTH + 1, forced)
        # Lookups left before the next one is priced (never, with the path forced).
        self._tick = LEARN_EVERY if mode == "auto" else 2**62
        # What the last part() cost, in bitmaps ORed, for the caller's memo: the level path
        # counts as costly (memoized at once), as it is taken where topics reach many patterns.
        self.parts = 0
        self._costly = tuning.memo_eager_bitmaps

    def __len__(self) -> int:
        """Number of distinct patterns filed."""
        return len(self._trie)

    def add(self, pattern: Pattern) -> None:
        """File a new distinct pattern (its holders follow, one :meth:`hold` each)."""
        self._trie.add(pattern)
        if not self._filing and self._trie.shapes() > EAGER_SHAPES:
            self._catch_up(len(self._unfiled))  # AMQP-like: the level index will be wanted

    def remove(self, pattern: Pattern) -> None:
        """Unfile a pattern whose last holder was released."""
        self._trie.remove(pattern)

    def hold(self, pattern: Pattern, sid: int) -> None:
        """``sid`` now holds ``pattern``: file it by level if it has no pattern there yet and
        the level index can hold this one (or hold it back until the level index is wanted),
        else in the rest trie."""
        if self._levels is None:  # Tuning(level_index="never"): the patterns' path only
            return
        if sid not in self._level_of and sid not in self._unfiled:
            if not self._filing:
                self._unfiled[sid] = pattern
                return
            if self._file(pattern, sid):
                return
        self._hold_in_rest(pattern, sid)

    def _file(self, pattern: Pattern, sid: int) -> bool:
        """File ``sid`` by level with ``pattern``; False if the level index cannot hold it."""
        assert self._levels is not None and pattern.selector is not None
        words = self._levels.words_of(pattern.selector.text)
        if words is None:
            return False
        self._levels.add(words, sid)
        self._level_of[sid] = pattern
        return True

    def _hold_in_rest(self, pattern: Pattern, sid: int) -> None:
        twin = self._rest_patterns.get(pattern)
        if twin is None:
            twin = self._rest_patterns[pattern] = Pattern(pattern.selector)
            self._rest.add(twin)
        twin.sids.add(sid)

    def _catch_up(self, most: int) -> bool:
        """The level index is wanted: from now on subscribes file there at once, and ``most``
        of the subscribers held back are filed now. Returns whether the level index holds
        every subscriber (it may answer)."""
        self._filing = True
        unfiled = self._unfiled
        for _ in range(min(most, len(unfiled))):
            sid, pattern = unfiled.popitem()
            if not self._file(pattern, sid):
                self._hold_in_rest(pattern, sid)
        return not unfiled

    def release(self, pattern: Pattern, sid: int) -> None:
        """``sid`` no longer holds ``pattern``: unfile it from where :meth:`hold` put it."""
        if self._levels is None:
            return
        if self._unfiled.get(sid) is pattern:
            del self._unfiled[sid]
            return
        if self._level_of.get(sid) is pattern:
            del self._level_of[sid]
            assert pattern.selector is not None
            words = self._levels.words_of(pattern.selector.text)
            assert words is not None
            self._levels.remove(words, sid)
            return
        twin = self._rest_patterns[pattern]
        twin.sids.discard(sid)
        if not twin.sids:
            del self._rest_patterns[pattern]
            self._rest.remove(twin)

    def part(self, topic: str) -> Bitmap | None:
        """A fresh bitmap of the subscribers with a pattern matching ``topic``, or None.

        Sets :attr:`parts` to what it cost, in bitmaps ORed. Runtime: either the patterns'
        shape probes or trie walk and one OR per matched pattern, or one AND per topic word
        (plus the rest trie's walk); see the module doc.
        """
        words = topic.split(self._delimiter) if topic or not self._no_words else []
        dollar = self._dollar_rule and topic[:1] == "$"
        n = len(words)
        if n > LEVEL_DEPTH:
            n = LEVEL_DEPTH  # deeper topics share the last word count's choice
        choice = self._choice
        level = choice.level[n]  # None: not priced yet
        tick = self._tick = self._tick - 1
        if tick and level is False:  # the usual: the patterns answer, nothing to price
            found, self.parts = self._union(topic, words, dollar)
            return found
        learn = not tick or level is None  # price this lookup (see path_choice)
        if level and self._unfiled and not self._catch_up(self._batch):
            level = False  # the level index is still catching up: the patterns answer
        if level:
            assert self._levels is not None
            found = self._levels.match_words(words, dollar)
            self.parts = self._costly
            if self._rest_patterns:  # subscribers' patterns the level index does not hold
                rest, _ = self._rest.union_words(topic, words, dollar)
                if found is None:
                    found = rest
                elif rest is not None:
                    found |= rest
            if learn:
                self._tick = LEARN_EVERY
                if choice.walk_due(n):  # price the trie path: find its patterns
                    sample: list[Pattern] = []
                    self._collect(topic, words, sample, dollar)
                    choice.observe(n, trie_cost(len(sample), len(found) if found else 0))
            return found
        found, k = self._union(topic, words, dollar)
        self.parts = k
        if learn:
            self._tick = LEARN_EVERY
            choice.observe(n, trie_cost(k, len(found)) if found is not None else 0.0)
        return found

    def stats(self) -> dict[str, int]:
        """Sizes and the current choices, for metrics and tuning."""
        levels = self._levels.stats() if self._levels is not None else {}
        return {
            **self._trie.stats(),
            **levels,
            "rest_patterns": len(self._rest_patterns),
            "level_unfiled": len(self._unfiled),
            "level_word_counts": sum(1 for level in self._choice.level if level),
        }
