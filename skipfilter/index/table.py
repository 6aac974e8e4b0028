"""For a topic, the subscribers holding a selector that matches it: one table per role.

TopicIndex keeps two tables, one over the ``selectors`` subscribers subscribe with and
one over their ``allowed`` selectors. A table files exact selectors in a hash map
(topic -> the id itself when it has one subscriber), match-all selectors in one
bitmap, and every other distinct selector once, as a :class:`Pattern` in the
syntax's candidate index. It memoizes unions: per topic *shape* (which patterns
matched), and per hot topic.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any, Final

from skipfilter.core import Bitmap, copy_of
from skipfilter.index.level_index import LevelIndex
from skipfilter.index.pattern import Pattern
from skipfilter.index.prefix_index import PrefixIndex
from skipfilter.index.tuning import Tuning
from skipfilter.index.url_index import UrlIndex
from skipfilter.index.word_index import WordIndex
from skipfilter.selectors import DELIMITERS, WORD_SYNTAXES, Selector

__all__ = ["SelectorTable", "Sids"]

_UNSEEN: Final[Any] = object()  # a key the unions memo has not recorded

#: Patterns of more words than this go to the word trie, not the level index.
LEVEL_DEPTH: Final = 16

#: First words counted at most (a heuristic's memory, not an index's): then counted anew.
FIRST_WORDS_LIMIT: Final = 65_536

#: A set of subscriber ids: one id, or a bitmap (of two or more, in the exact map).
Sids = Bitmap | int


class SelectorTable:
    """For a topic, the subscribers holding a selector that matches it.

    A lookup yields two kinds of parts: sets of ids (an exact topic's subscribers, a
    memoized topic's answer) and patterns. :meth:`combine` ORs them into one bitmap,
    and the union of the patterns' bitmaps is memoized by *which* patterns matched:
    topics of one shape (``/books/1``, ``/books/2``, ...) match the same templates, so
    a never-seen topic reuses the union built for its shape and adds only its own
    exact subscribers.

    An exact topic with one subscriber, the usual case, maps to that id, not to a
    bitmap: a BitMap64 per topic was slow to OR in (cold memory) and most of the
    index's memory (docs/topic-index.md).
    """

    def __init__(self, syntax: str, cache_size: int, tuning: Tuning) -> None:
        self._cache_size = cache_size
        self._memo_min = tuning.memo_min_bitmaps
        self._memo_eager = tuning.memo_eager_bitmaps
        self._seen_window = tuning.seen_window
        self._exact: dict[str, Sids] = {}  # one id, or a bitmap of two or more
        self._everything = Pattern(None)  # subscribers of a match-all selector
        self._patterns: dict[Selector, Pattern] = {}
        self._known: dict[str, Selector] = {}  # text -> compiled, for the patterns above
        self._candidates: PrefixIndex | WordIndex | UrlIndex = (
            WordIndex(syntax)
            if syntax in WORD_SYNTAXES
            else UrlIndex(cache_size, tuning.group_cache_threshold)
            if syntax == "urlpattern"  # topics come in their indexed form: see url_table
            else PrefixIndex(DELIMITERS.get(syntax, ""), cache_size, tuning.group_cache_threshold)
        )
        self._collect_patterns = self._candidates.collect
        # Word syntaxes: one pattern per subscriber filed level by level, by id (see
        # level_index and _file_by_level); the rest go through the candidate index above.
        words = WORD_SYNTAXES.get(syntax)
        self._levels = (
            LevelIndex(words, LEVEL_DEPTH) if words is not None and tuning.level_index else None
        )
        self._level_held: dict[Selector, int] = {}  # pattern -> subscribers filed by level
        self._level_of: dict[int, Selector] = {}  # sid -> its pattern in the level index
        self._first_words: dict[str, int] = {}  # literal first word -> patterns seen with it
        self._popular_first_word = tuning.level_first_word
        self._level_wildcards = (words.single, words.multi) if words is not None else ()
        # Bumped by every change (_version) or by a change to some pattern's
        # subscribers (_pattern_version); each memo is emptied on its first use after.
        self._version = 0
        self._pattern_version = 0
        # topic -> its whole answer. Bitmaps are not tracked by the cycle collector;
        # (version, bitmap) tuples would be, so validity is one version per memo.
        self._memo: dict[str, Bitmap] = {}
        self._memo_version = 0
        self._seen: set[str] = set()  # topics of a costly answer, looked up once
        # tuple of matched patterns -> union of their subscribers (None: seen once)
        self._unions: dict[tuple[Pattern, ...], Bitmap | None] = {}
        self._unions_version = 0

    def register(self, exact: tuple[str, ...], patterns: tuple[Selector, ...], sid: int) -> None:
        """Add ``sid`` under its exact topics and its other selectors."""
        self._version += 1
        table = self._exact
        for topic in exact:
            sids = table.get(topic)
            if sids is None:
                table[topic] = sid
            elif isinstance(sids, int):
                table[topic] = Bitmap((sids, sid))
            else:
                sids.add(sid)
        for selector in patterns:
            if not self._file_by_level(selector, sid):
                self._add_pattern(selector, sid)

    def _file_by_level(self, selector: Selector, sid: int) -> bool:
        """File ``sid``'s ``selector`` in the level index if ``sid`` has none filed there yet,
        the index can hold it and its first word is a wildcard or a popular literal;
        return whether it did.

        The level index ANDs bitmaps whatever the answer's size, which pays when many
        subscribers share words (the amqp workload: 5 first words); where first words
        split subscribers into small groups (the iot workload's sites) the trie's walk
        is cheaper. Match-all patterns (AMQP ``#``) are filed too: denser level bitmaps
        are cheaper to AND (bitset containers, not arrays), and need no extra OR.
        """
        levels = self._levels
        if levels is None or sid in self._level_of:
            return False
        words = levels.words_of(selector.text)
        if words is None:
            return False
        first = words[0] if words else ""
        if first not in self._level_wildcards:
            counts = self._first_words
            if len(counts) >= FIRST_WORDS_LIMIT and first not in counts:
                counts.clear()
            count = counts[first] = counts.get(first, 0) + 1
            if count <= self._popular_first_word:
                return False  # counted while in the trie: popular words move on later
        self._level_add(selector, words, sid)
        return True

    def _level_add(self, selector: Selector, words: list[str], sid: int) -> None:
        assert self._levels is not None
        self._levels.add(words, sid)
        self._level_of[sid] = selector
        self._level_held[selector] = self._level_held.get(selector, 0) + 1
        self._known[selector.text] = selector

    def _level_discard(self, sid: int) -> Selector | None:
        """Unfile ``sid`` from the level index; return the pattern it was filed under."""
        selector = self._level_of.pop(sid, None)
        if selector is None:
            return None
        assert self._levels is not None
        words = self._levels.words_of(selector.text)
        assert words is not None
        self._levels.remove(words, sid)
        held = self._level_held[selector] - 1
        if held:
            self._level_held[selector] = held
        else:
            del self._level_held[selector]
            if selector not in self._patterns:
                del self._known[selector.text]
        return selector

    def unregister(self, exact: tuple[str, ...], patterns: tuple[Selector, ...], sid: int) -> None:
        """Remove ``sid`` from what :meth:`register` added it to."""
        self._version += 1
        table = self._exact
        for topic in exact:
            sids = table[topic]
            if isinstance(sids, int):
                del table[topic]
                continue
            sids.discard(sid)
            if len(sids) == 1:
                table[topic] = sids.min()
        filed = self._level_discard(sid) if self._level_of else None
        for selector in patterns:
            if filed is None or selector != filed:
                self._discard_pattern(selector, sid)

    def _add_pattern(self, selector: Selector, sid: int) -> None:
        """Add a non-exact selector (a pattern, or one matching everything)."""
        self._pattern_version += 1
        if selector.match_all:
            self._everything.sids.add(sid)
            return
        pattern = self._patterns.get(selector)
        if pattern is None:
            pattern = self._patterns[selector] = Pattern(selector)
            self._known[selector.text] = selector
            self._candidates.add(pattern)
        pattern.sids.add(sid)

    def _discard_pattern(self, selector: Selector, sid: int) -> None:
        self._pattern_version += 1
        if selector.match_all:
            self._everything.sids.discard(sid)
            return
        pattern = self._patterns[selector]
        pattern.sids.discard(sid)
        if not pattern.sids:
            del self._patterns[selector]
            # Equal texts may be distinct selectors (a relative URL Pattern under two bases).
            if selector not in self._level_held and self._known.get(selector.text) == selector:
                del self._known[selector.text]
            self._candidates.remove(pattern)

    def collect(self, topic: str, found: list[Sids], patterns: list[Pattern]) -> Bitmap | None:
        """Append what ``topic`` matches: its exact subscribers to ``found``, and its
        patterns to ``patterns``; return the level index's answer (a fresh bitmap), if any."""
        exact = self._exact.get(topic)
        if exact is not None:
            found.append(exact)
        if self._everything.sids:
            patterns.append(self._everything)
        self._collect_patterns(topic, patterns)
        return self._levels.match(topic) if self._levels is not None and self._levels else None

    def answer(self, topics: Sequence[str]) -> Bitmap:
        """A fresh bitmap of the subscribers with a selector matching any of ``topics``.

        A topic's answer (its exact subscribers and patterns' subscribers, as one
        bitmap) is memoized until the table next changes: at once if it has
        ``memo_eager_bitmaps`` parts or more, else on its second lookup within the last
        ``seen_window`` first lookups if it has ``memo_min_bitmaps`` or more
        (:class:`~skipfilter.index.tuning.Tuning`). So a unique
        topic costs at most a set insert, never a union nobody reuses. The memo is
        emptied by the first lookup after a change or when it holds ``cache_size``
        topics: amortized O(1) per topic.
        """
        memo, seen = self._memo, self._seen
        least, eager = self._memo_min, self._memo_eager
        if self._memo_version != self._version:
            memo.clear()
            self._memo_version = self._version
        elif len(topics) == 1:  # a hot topic alone: one lookup and one copy
            hit = memo.get(topics[0])
            if hit is not None:
                return copy_of(hit)
        found: list[Sids] = []
        patterns: list[Pattern] = []
        owned: Bitmap | None = None  # the level index's answers: fresh, this call's own
        for topic in topics:
            hit = memo.get(topic)
            if hit is not None:
                found.append(hit)
                continue
            first_found, first_pattern = len(found), len(patterns)
            level = self.collect(topic, found, patterns)
            parts = len(found) - first_found + len(patterns) - first_pattern
            if self._levels is not None:  # a trie walk or level ANDs: worth keeping if hot
                parts = max(parts + (least if level is not None else 0), least)
            if parts >= eager or (parts >= least and topic in seen):
                own = [*found[first_found:], *(p.sids for p in patterns[first_pattern:])]
                answer = _union(own) if level is None else _add(level, own)
                del found[first_found:], patterns[first_pattern:]
                found.append(answer)
                if len(memo) >= self._cache_size:
                    memo.clear()
                memo[topic] = answer
                continue
            if parts >= least:
                if len(seen) >= self._seen_window:
                    seen.clear()
                seen.add(topic)
            if level is not None:
                if owned is None:
                    owned = level
                else:
                    owned |= level
        return self.combine(found, patterns, owned)

    def combine(
        self, found: list[Sids], patterns: list[Pattern], owned: Bitmap | None = None
    ) -> Bitmap:
        """A fresh bitmap: the union of ``found``, of the patterns' subscribers and of
        ``owned`` (a fresh bitmap, reused as the result rather than copied).

        The patterns' union is memoized by the tuple of patterns, from the second time
        that tuple is seen until a pattern's subscribers change: topics of one shape
        then cost one copy plus their own exact subscribers.
        """
        if owned is not None:
            if len(patterns) < 2:
                return _add(owned, [*found, *(p.sids for p in patterns)])
            found = [*found, owned]
        if len(patterns) < 2:
            return _union([*found, *(p.sids for p in patterns)])
        unions = self._unions
        if self._unions_version != self._pattern_version:
            unions.clear()
            self._unions_version = self._pattern_version
        key = tuple(patterns)
        shared = unions.get(key, _UNSEEN)
        if shared is None or shared is _UNSEEN:
            union = _union([pattern.sids for pattern in patterns])
            if shared is None:  # seen before: keep it, shared from now on
                unions[key] = shared = union
            else:
                if len(unions) >= self._cache_size:
                    unions.clear()
                unions[key] = None
                return _add(union, found)
        return _add(copy_of(shared), found)

    def known(self, text: str) -> Selector | None:
        """The compiled selector for ``text`` if a subscriber already holds it."""
        return self._known.get(text)

    def stats(self) -> dict[str, int]:
        levels = self._levels.stats() if self._levels is not None else {}
        return {
            "exact_topics": len(self._exact),
            "patterns": len(self._patterns),
            **self._candidates.stats(),
            **levels,
        }


def _add(result: Bitmap, found: Iterable[Sids]) -> Bitmap:
    """Add every id of ``found`` (ids and bitmaps) to ``result``; return it."""
    for sids in found:
        if isinstance(sids, int):
            result.add(sids)
        else:
            result |= sids
    return result


def _union(found: Iterable[Sids]) -> Bitmap:
    """A fresh bitmap holding every id of ``found``.

    ORing into an empty bitmap is as fast as a chain of ``|`` for the few small
    bitmaps a topic usually has, and faster than BitMap64.copy() for one or
    BitMap64.union(*many) (docs/topic-index.md).
    """
    return _add(Bitmap(), found)
