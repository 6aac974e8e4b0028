"""Word-syntax subscribers by the words of one pattern each, level by level, in bitmaps.

The word trie hands a topic the distinct patterns that match it, and TopicIndex then
ORs their subscribers: on the amqp workload ~25 patterns and an answer of thousands of
ids per topic. Here each subscriber's pattern is filed by subscriber id instead, one
bitmap per level and word (the inverted-bitmap matcher, applied per level):

- ``words[i][w]``: the subscribers whose pattern has the literal word ``w`` at level i;
- ``anyword[i]``: those that take any word at level i (a single wildcard there, or a
  multi wildcard at or before it);
- ``ends[n]``: those whose pattern can end after n words (n words exactly, or a multi
  wildcard that may take the rest: at least ``multi_min`` words).

A topic of n words is then matched by ``AND_i(words[i][w_i] | anyword[i]) & ends[n]``, in
C, and the result is the answer itself: no per-pattern work and no union. The ORs are
kept (``either[i][w]``) until level i next changes, so a lookup is n + 1 ANDs, smallest
operand first. Levels deeper than every pattern hold the multi wildcards' subscribers
only (``tails``). MQTT's ``$`` rule drops ``anyword[0]`` for a topic starting with ``$``.

Each pyroaring operation costs about a microsecond whatever its size, so this pays on
answers of many ids, not on answers of a few (docs/topic-index.md).

Only a pattern whose multi wildcard, if any, is last is filed here (TopicIndex keeps the
others, and a subscriber's further patterns, in its word trie), one pattern per
subscriber, and only below ``depth`` words.
"""

from __future__ import annotations

from skipfilter.core import Bitmap
from skipfilter.selectors import WordSyntax

__all__ = ["LevelIndex"]

#: Kept ORs per level before they are all dropped (bounds memory on words seen once).
EITHER_LIMIT = 1024


class LevelIndex:
    """At most one pattern per subscriber id, filed level by level (see the module doc).

    Runtime: :meth:`match` O(topic words) bitmap operations; :meth:`add` and
    :meth:`remove` O(levels) bitmap inserts. Not thread-safe (TopicIndex's lock).

    >>> from skipfilter.selectors import WORD_SYNTAXES
    >>> levels = LevelIndex(WORD_SYNTAXES["amqp"], depth=8)
    >>> levels.add(["a", "*"], 1)
    >>> levels.add(["#"], 2)
    >>> list(levels.match("a.b")), list(levels.match("b"))
    ([1, 2], [2])
    """

    __slots__ = ("_anyword", "_depth", "_either", "_ends", "_size", "_syntax", "_tails", "_words")

    def __init__(self, syntax: WordSyntax, depth: int) -> None:
        """An empty index for ``syntax``, filing patterns of fewer than ``depth`` words."""
        self._syntax = syntax
        self._depth = depth
        self._words: list[dict[str, Bitmap]] = []
        self._anyword: list[Bitmap] = []
        self._either: list[dict[str, Bitmap]] = []  # words[i][w] | anyword[i], kept
        self._ends: list[Bitmap] = []
        self._tails = Bitmap()  # subscribers of a multi wildcard: any deeper level is theirs
        self._size = 0

    def __len__(self) -> int:
        """Number of subscribers filed."""
        return self._size

    def words_of(self, text: str) -> list[str] | None:
        """The words a pattern is filed under (runs of the multi wildcard collapsed), or
        None when it cannot be filed: a multi wildcard before the last word, or too long."""
        multi = self._syntax.multi
        words: list[str] = []
        for word in self._syntax.words(text):
            if word == multi and words and words[-1] == multi:
                continue  # a.#.#  is  a.#
            if words and words[-1] == multi:
                return None  # words after the multi wildcard: the trie tests those
            words.append(word)
        return words if len(words) < self._depth else None

    def _grow(self, levels: int) -> None:
        """Materialize levels up to ``levels``; a new level is the multi wildcards'."""
        while len(self._anyword) < levels:
            self._words.append({})
            self._either.append({})
            self._anyword.append(Bitmap() | self._tails)
            self._ends.append(Bitmap() | self._tails)

    def add(self, words: list[str], sid: int) -> None:
        """File subscriber ``sid`` under its pattern's ``words`` (from :meth:`words_of`)."""
        self._file(words, sid, adding=True)
        self._size += 1

    def remove(self, words: list[str], sid: int) -> None:
        """Unfile subscriber ``sid`` from its pattern's ``words``."""
        self._file(words, sid, adding=False)
        self._size -= 1

    def _file(self, words: list[str], sid: int, adding: bool) -> None:
        syntax = self._syntax
        tail = len(words) - 1 if words and words[-1] == syntax.multi else None
        if len(self._anyword) <= len(words):
            self._grow(len(words) + 1)
        anyword, eithers = self._anyword, self._either
        levels = len(anyword)
        single = syntax.single
        for i, word in enumerate(words if tail is None else words[:tail]):
            if word == single:
                _flip(anyword[i], sid, adding)
                if eithers[i]:
                    eithers[i] = {}  # every kept OR of the level changed
                continue
            level = self._words[i]
            bitmap = level.get(word)
            if bitmap is None:
                bitmap = level[word] = Bitmap()
            _flip(bitmap, sid, adding)
            if not adding and not bitmap:
                del level[word]
            either = eithers[i].get(word)
            if either is not None:  # sid is in no anyword of this level: it has a word here
                _flip(either, sid, adding)
        if tail is None:
            _flip(self._ends[len(words)], sid, adding)
            return
        for i in range(tail, levels):
            _flip(anyword[i], sid, adding)
            if eithers[i]:
                eithers[i] = {}
        ends = self._ends
        for n in range(tail + syntax.multi_min, levels):
            _flip(ends[n], sid, adding)
        _flip(self._tails, sid, adding)

    def match(self, topic: str) -> Bitmap | None:
        """A fresh bitmap of the subscribers whose pattern matches ``topic``, or None.

        Runtime: one bitmap AND per topic word and one more for ``ends`` (plus an OR per
        level whose kept OR was dropped), in C, the smallest operand first so the running
        answer shrinks early. The index's bitmaps are only read.
        """
        syntax = self._syntax
        return self.match_words(syntax.words(topic), syntax.dollar_rule and topic[:1] == "$")

    def match_words(self, words: list[str], skip_first: bool = False) -> Bitmap | None:
        """:meth:`match` for a topic already split; ``skip_first``: the topic starts with
        ``$`` under MQTT, so a wildcard first word does not match it."""
        levels = len(self._anyword)
        n = len(words)
        # Levels past the deepest pattern hold only the multi wildcards' subscribers:
        # ends is then self._tails, which already says so.
        ends = self._ends[n] if n < levels else self._tails
        if not ends:
            return None
        literals, anywords, eithers = self._words, self._anyword, self._either
        steps = [ends]
        for i in range(min(n, levels)):
            word = words[i]
            literal = literals[i].get(word)
            if skip_first and i == 0:
                if literal is None:
                    return None
                steps.append(literal)
                continue
            anyword = anywords[i]
            if literal is None:
                if not anyword:
                    return None
                steps.append(anyword)
            elif not anyword:
                steps.append(literal)
            else:
                either = eithers[i].get(word)
                if either is None:
                    kept = eithers[i]
                    if len(kept) >= EITHER_LIMIT:
                        kept.clear()
                    either = kept[word] = literal | anyword
                steps.append(either)
        steps.sort(key=len)
        found = steps[0] & steps[1] if len(steps) > 1 else steps[0] | Bitmap()
        for step in steps[2:]:
            if not found:
                return None
            found = found & step
        return found if found else None

    def stats(self) -> dict[str, int]:
        """Sizes, for metrics and tuning."""
        return {
            "level_subscribers": self._size,
            "levels": len(self._anyword),
            "level_words": sum(len(words) for words in self._words),
        }


def _flip(bitmap: Bitmap, sid: int, adding: bool) -> None:
    if adding:
        bitmap.add(sid)
    else:
        bitmap.discard(sid)
