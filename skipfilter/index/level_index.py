"""Word-syntax subscribers by the words of one pattern each, level by level, in bitmaps.

For the word syntaxes, a pattern's subscribers used to be found pattern by pattern and
then OR-ed: a topic of the amqp workload matched ~25 patterns, and the union of their
bitmaps into an answer of thousands of ids was most of a lookup's cost. Here each
subscriber's pattern is filed by subscriber id, one bitmap per level and word:

- ``words[i][w]``: the subscribers whose pattern has the literal word ``w`` at level i;
- ``anyword[i]``: those that take any word at level i (a single wildcard there, or a
  multi wildcard at or before it);
- ``ends[n]``: those whose pattern can end after n words (n words exactly, or a multi
  wildcard that may take the rest: at least ``multi_min`` words).

A topic of n words is then matched by ``AND(words[i][w_i] | anyword[i]) & ends[n]``,
2n bitmap operations in C, and the result is the answer itself: no per-pattern work and
no union. Levels deeper than every pattern take the subscribers of multi wildcards only
(``tails``). MQTT's ``$`` rule drops ``anyword[0]`` for a topic starting with ``$``.

Only a pattern whose multi wildcard, if any, is last is filed here (TopicIndex keeps the
others, and a subscriber's further patterns, in its word trie), one pattern per
subscriber, and only up to ``depth`` words.
"""

from __future__ import annotations

from skipfilter.core import Bitmap
from skipfilter.selectors import WordSyntax

__all__ = ["LevelIndex"]


class LevelIndex:
    """At most one pattern per subscriber id, filed level by level (see the module doc).

    Runtime: :meth:`match` O(topic words) bitmap operations; :meth:`add` and
    :meth:`remove` O(levels) bitmap inserts. Not thread-safe (TopicIndex's lock).
    """

    __slots__ = ("_anyword", "_depth", "_ends", "_size", "_syntax", "_tails", "_words")

    def __init__(self, syntax: WordSyntax, depth: int) -> None:
        """An empty index for ``syntax``, filing patterns of up to ``depth`` - 1 words."""
        self._syntax = syntax
        self._depth = depth
        self._words: list[dict[str, Bitmap]] = []
        self._anyword: list[Bitmap] = []
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
        self._grow(len(words) + 1)
        levels = len(self._anyword)
        for i, word in enumerate(words if tail is None else words[:tail]):
            if word == syntax.single:
                bitmap = self._anyword[i]
            elif adding:
                bitmap = self._words[i].setdefault(word, Bitmap())
            else:
                bitmap = self._words[i][word]
            _flip(bitmap, sid, adding)
            if not adding and not bitmap and word != syntax.single:
                del self._words[i][word]
        if tail is None:
            _flip(self._ends[len(words)], sid, adding)
            return
        for i in range(tail, levels):
            _flip(self._anyword[i], sid, adding)
        for n in range(tail + syntax.multi_min, levels):
            _flip(self._ends[n], sid, adding)
        _flip(self._tails, sid, adding)

    def match(self, topic: str) -> Bitmap | None:
        """A fresh bitmap of the subscribers whose pattern matches ``topic``, or None."""
        syntax = self._syntax
        words = syntax.words(topic)
        levels = len(self._anyword)
        n = len(words)
        ends: Bitmap | None = self._ends[n] if n < levels else self._tails
        if not ends:
            return None
        found: Bitmap | None = None  # owned by this call once set
        dollar = syntax.dollar_rule and topic.startswith("$")
        for i, word in enumerate(words):
            if i < levels:
                literal = self._words[i].get(word)
                anyword = None if dollar and i == 0 else self._anyword[i]
                if literal is None:
                    if anyword is None:
                        return None
                    step = anyword
                elif anyword is None:
                    step = literal
                else:
                    if found is None:
                        found = literal | anyword
                        continue
                    step = literal | anyword
            else:
                step = self._tails
            if found is None:
                assert ends is not None  # set until the first step consumes it
                found = step & ends  # a copy: the index's bitmaps are never handed out
                ends = None
            else:
                found &= step
            if not found:
                return None
        if found is None:  # no words (AMQP ""): the patterns of no words end here
            return Bitmap() | ends if ends is not None else None
        if ends is not None:
            found &= ends
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
