"""For a topic, the subscribers holding a selector that matches it: one table per role.

TopicIndex keeps two tables, one over the ``selectors`` subscribers subscribe with and
one over their ``allowed`` selectors. A table files exact selectors in a hash map
(topic -> the id itself when it has one subscriber), match-all selectors in one
bitmap, and every other distinct selector once, as a :class:`Pattern`: by literal
prefix for mercure and regex (:mod:`~skipfilter.index.prefix_index`), by word for amqp,
nats and mqtt (:mod:`~skipfilter.index.word_paths`). It memoizes unions: per topic
*shape* (which patterns matched), and per hot topic.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any, Final

from skipfilter.core import Bitmap, copy_of
from skipfilter.index.pattern import Pattern
from skipfilter.index.prefix_index import PrefixIndex
from skipfilter.index.tuning import Tuning
from skipfilter.index.url_index import UrlIndex
from skipfilter.index.word_paths import WordPaths
from skipfilter.selectors import DELIMITERS, WORD_SYNTAXES, Selector

__all__ = ["SelectorTable", "Sids"]

_UNSEEN: Final[Any] = object()  # a key the unions memo has not recorded

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
        # Patterns by literal prefix (mercure, regex), by URL (urlpattern: topics come in
        # their indexed form, see url_table), or by word, answered by the trie or the level
        # index (amqp, nats, mqtt: see word_paths).
        self._words: WordPaths | None = None
        self._candidates: PrefixIndex | UrlIndex | None = None
        self._filing: PrefixIndex | UrlIndex | WordPaths
        threshold = tuning.group_cache_threshold
        if syntax in WORD_SYNTAXES:
            self._filing = self._words = WordPaths(syntax, tuning)
        elif syntax == "urlpattern":
            self._filing = self._candidates = UrlIndex(cache_size, threshold)
        else:
            delimiter = DELIMITERS.get(syntax, "")
            self._filing = self._candidates = PrefixIndex(delimiter, cache_size, threshold)
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
            self._add_pattern(selector, sid)

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
        for selector in patterns:
            self._discard_pattern(selector, sid)

    def _add_pattern(self, selector: Selector, sid: int) -> None:
        """Add a non-exact selector (a pattern, or one matching everything: in one bitmap,
        except for the word syntaxes, whose level index ANDs denser bitmaps faster)."""
        self._pattern_version += 1
        if selector.match_all and self._words is None:
            self._everything.sids.add(sid)
            return
        pattern = self._patterns.get(selector)
        if pattern is None:
            pattern = self._patterns[selector] = Pattern(selector)
            self._known[selector.text] = selector
            self._filing.add(pattern)
        pattern.sids.add(sid)
        if self._words is not None:
            self._words.hold(pattern, sid)

    def _discard_pattern(self, selector: Selector, sid: int) -> None:
        self._pattern_version += 1
        if selector.match_all and self._words is None:
            self._everything.sids.discard(sid)
            return
        pattern = self._patterns[selector]
        pattern.sids.discard(sid)
        if self._words is not None:
            self._words.release(pattern, sid)
        if not pattern.sids:
            del self._patterns[selector]
            # Equal texts may be distinct selectors (a relative URL Pattern under two bases).
            if self._known.get(selector.text) == selector:
                del self._known[selector.text]
            self._filing.remove(pattern)

    def collect(self, topic: str, found: list[Sids], patterns: list[Pattern]) -> Bitmap | None:
        """Append what ``topic`` matches: its exact subscribers to ``found``, and its
        patterns to ``patterns``; return the level index's answer (a fresh bitmap), if any."""
        exact = self._exact.get(topic)
        if exact is not None:
            found.append(exact)
        if self._everything.sids:
            patterns.append(self._everything)
        if self._words is not None:
            return self._words.part(topic)
        assert self._candidates is not None
        self._candidates.collect(topic, patterns)
        return None

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
        memo = self._memo
        if self._memo_version != self._version:
            memo.clear()
            self._memo_version = self._version
        if len(topics) == 1:  # the usual call
            hit = memo.get(topics[0])
            if hit is not None:  # a hot topic: one lookup and one copy
                return copy_of(hit)
            if self._words is not None:
                return self._word_answer(topics[0])
        seen, least, eager = self._seen, self._memo_min, self._memo_eager
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
            if self._words is not None:  # a trie walk or level ANDs: worth keeping if hot
                parts = max(parts + self._words.parts, least)
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

    def _word_answer(self, topic: str) -> Bitmap:
        """:meth:`answer` for one topic of a word syntax, the usual call, without its lists:
        the part the patterns give, the exact subscribers, the same memo rules."""
        words = self._words
        assert words is not None
        found = words.part(topic)
        parts = words.parts
        exact = self._exact.get(topic)
        if found is None:
            found = Bitmap()
        if exact is not None:
            parts += 1
            if isinstance(exact, int):
                found.add(exact)
            else:
                found |= exact
        seen = self._seen
        if parts >= self._memo_eager or topic in seen:
            memo = self._memo
            if len(memo) >= self._cache_size:
                memo.clear()
            memo[topic] = found
            return copy_of(found)
        if len(seen) >= self._seen_window:
            seen.clear()
        seen.add(topic)
        return found

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

    def holds_patterns(self) -> bool:
        """Whether a subscriber holds a selector here that is no exact topic."""
        return bool(self._patterns) or bool(self._everything.sids)

    def exact_answer(self, topics: Sequence[str]) -> Bitmap:
        """A fresh bitmap of the subscribers of ``topics`` (as published) as exact topics:
        :meth:`answer` when no pattern is held, without its memos. O(len(topics))."""
        table = self._exact
        result = Bitmap()
        for topic in topics:
            sids = table.get(topic)
            if sids is None:
                continue
            if isinstance(sids, int):
                result.add(sids)
            else:
                result |= sids
        return result

    def known(self, text: str) -> Selector | None:
        """The compiled selector for ``text`` if a subscriber already holds it."""
        return self._known.get(text)

    def stats(self) -> dict[str, int]:
        return {
            "exact_topics": len(self._exact),
            "patterns": len(self._patterns),
            **self._filing.stats(),
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
