"""A memo of word-syntax answers keyed by the part of a topic the patterns can see.

A word that no pattern has as a literal at its level (a device's serial number, a
message id) cannot change which patterns match: the walk and the level ANDs treat it
like any other such word. So ``site7/dev81/temp/3f9a02`` and ``site7/dev81/temp/77c1e4``
have one answer, and topics of IoT sets that are each published once still repeat in
what the patterns see. :class:`VisibleMemo` keeps, per level, the literal words of the
filed patterns and memoizes an answer under the topic with every unseen word blanked.

Where blanking rarely makes two topics meet (every word of every topic is some
pattern's), the memo only costs: it watches its own hit rate and stands aside for
``REST_FOR`` topics (the caller counts them down in :attr:`VisibleMemo.resting`) when
fewer than one probe in 16 hits.
"""

from __future__ import annotations

from typing import Final

from skipfilter.core import Bitmap, copy_of
from skipfilter.selectors import WordSyntax

__all__ = ["VisibleMemo"]

#: Stands for an unseen first word that starts with ``$`` (MQTT's rule tells it apart).
_UNSEEN_DOLLAR: Final = ("$",)

#: Probes between two looks at the hit rate, and topics the memo then sits out if poor.
CHECK_EVERY: Final = 1024
REST_FOR: Final = 16_384

#: A key is blanked words (None) and seen ones: the memo's key type.
Key = tuple[str | tuple[str] | None, ...]


class VisibleMemo:
    """Answers by blanked topic, the literal words of the patterns per level, a hit rate.

    Runtime: :meth:`key` O(topic words) dict probes; :meth:`get` and :meth:`offer` O(1)
    plus one bitmap copy on a store. Not thread-safe (TopicIndex's lock).
    """

    __slots__ = (
        "_answers",
        "_cache_size",
        "_floating",
        "_hits",
        "_multi",
        "_probes",
        "_seen",
        "_seen_window",
        "_single",
        "_syntax",
        "_valid",
        "_vocab",
        "resting",
    )

    def __init__(self, syntax: WordSyntax, cache_size: int, seen_window: int) -> None:
        self._syntax = syntax
        self._single, self._multi = syntax.single, syntax.multi
        self._cache_size = cache_size
        self._seen_window = seen_window
        self._vocab: list[dict[str, int]] = []  # level -> literal word -> patterns with it
        self._floating: dict[str, int] = {}  # words after a multi wildcard: any level
        self._answers: dict[Key, Bitmap] = {}
        self._seen: set[Key] = set()  # keys looked up once
        self._valid = True  # False once the patterns' holders changed: empty on next use
        self._probes = self._hits = 0
        self.resting = 0  # topics left to sit out before probing again (see module doc)

    def see(self, text: str, delta: int) -> None:
        """A distinct pattern ``text`` was filed (``delta`` 1) or unfiled (-1)."""
        self._valid = False
        single, multi = self._single, self._multi
        after_multi = False
        for level, word in enumerate(self._syntax.words(text)):
            if word == multi:
                after_multi = True
                continue
            if word == single:
                continue
            if after_multi:
                counts = self._floating
            else:
                while len(self._vocab) <= level:
                    self._vocab.append({})
                counts = self._vocab[level]
            left = counts.get(word, 0) + delta
            if left:
                counts[word] = left
            else:
                del counts[word]

    def changed(self) -> None:
        """Some pattern's holders changed: every memoized answer is stale."""
        self._valid = False

    def key(self, words: list[str], dollar: bool) -> Key | None:
        """``words`` with every word no pattern has at its level blanked, or None when
        every word is seen (the topic itself is then the key: the caller's memo's job)."""
        self._probes += 1
        if self._probes >= CHECK_EVERY:
            self._judge()
        vocab, floating = self._vocab, self._floating
        blanked: list[str | tuple[str] | None] | None = None
        levels = len(vocab)
        for i, word in enumerate(words):
            if (i < levels and word in vocab[i]) or (floating and word in floating):
                continue
            if blanked is None:
                blanked = list(words)
            blanked[i] = _UNSEEN_DOLLAR if dollar and not i else None
        return None if blanked is None else tuple(blanked)

    def get(self, key: Key) -> Bitmap | None:
        """The answer memoized under ``key`` (the caller copies it), or None."""
        if not self._valid:
            self._answers.clear()
            self._seen.clear()
            self._valid = True
        hit = self._answers.get(key)
        if hit is not None:
            self._hits += 1
        return hit

    def _judge(self) -> None:
        """Stand aside for ``REST_FOR`` topics if fewer than one probe in 16 hit lately."""
        if self._hits * 16 < self._probes:
            self.resting = REST_FOR
        self._probes = self._hits = 0

    def offer(self, key: Key, answer: Bitmap) -> None:
        """``answer`` was computed for ``key``: keep a copy if the key was seen before."""
        seen = self._seen
        if key not in seen:
            if len(seen) >= self._seen_window:
                seen.clear()
            seen.add(key)
            return
        answers = self._answers
        if len(answers) >= self._cache_size:
            answers.clear()
        answers[key] = copy_of(answer)

    def stats(self) -> dict[str, int]:
        """Sizes, for metrics and tuning."""
        return {"visible_answers": len(self._answers), "visible_memo_resting": self.resting}
