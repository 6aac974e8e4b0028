"""Which path answers a word-syntax topic: the patterns' bitmaps, or the level index.

For a topic of n words reaching k patterns and A subscribers, ORing the patterns'
bitmaps costs about one call per pattern, and about as much again per ``ANSWER_IDS`` ids
the answer holds (array containers merge in linear time until they turn into bitsets at
4096 ids): ``k * (1 + A / 4096)`` ORs (:func:`trie_cost`). The level index costs about
n + 1 ANDs, whatever k and A. :class:`PathChoice` keeps, per word count, a running mean
of the former, learned from a lookup in ``LEARN_EVERY``, and takes the level index while
it exceeds ``crossover * (n + 1)``. docs/topic-index.md has the measurements the formula
and the default crossover (2.0) were fitted on.
"""

from __future__ import annotations

from typing import Final

__all__ = ["ANSWER_IDS", "LEARN_EVERY", "WALK_EVERY", "PathChoice", "trie_cost"]

#: Ids an answer holds per extra OR's worth of merging (see the module doc).
ANSWER_IDS: Final = 4096

#: One lookup in this many is priced (the others only count down to it).
LEARN_EVERY: Final = 16

#: On the level path, one priced lookup in this many also finds the patterns (a walk),
#: to price the other path: one lookup in 64.
WALK_EVERY: Final = 4


def trie_cost(patterns: int, answer: int) -> float:
    """What ORing ``patterns`` bitmaps into an answer of ``answer`` ids costs, in ORs."""
    return patterns * (1 + answer / ANSWER_IDS)


class PathChoice:
    """Per topic word count (up to ``counts - 1``): the running mean of :func:`trie_cost`
    and whether the level index answers.

    The level index is taken once the mean exceeds ``crossover * (n + 1)`` and left when
    it falls below three quarters of that, so a mean near the crossover does not flip the
    choice at every priced lookup. The first lookup of a word count is priced at once.
    Runtime: O(1) per call. Not thread-safe (TopicIndex's lock).
    """

    __slots__ = ("_crossover", "_walks", "level", "mean")

    def __init__(self, crossover: float, counts: int, level: bool | None = None) -> None:
        """Choices for word counts 0 to ``counts - 1``: ``level`` None learns them (the
        first lookup of each decides), True or False forces them."""
        self._crossover = crossover
        self.mean = [0.0] * counts  # running mean of the trie path's cost
        # Whether the level index answers that word count; None: not priced yet.
        self.level: list[bool | None] = [level] * counts
        self._walks = [0] * counts  # priced level-path lookups since the last walk

    def observe(self, n: int, cost: float) -> None:
        """A topic of ``n`` words costs (or would cost) the trie path ``cost``: decide."""
        mean = self.mean[n]
        if self.level[n] is None:
            mean = self.mean[n] = cost
        else:
            mean = self.mean[n] = mean + (cost - mean) * 0.25
        threshold = self._crossover * (n + 1)
        if self.level[n]:
            if mean < threshold * 0.75:
                self.level[n] = False
        else:
            self.level[n] = mean > threshold
            self._walks[n] = 0

    def walk_due(self, n: int) -> bool:
        """On the level path: whether this priced lookup of ``n`` words should walk."""
        walks = self._walks[n] = self._walks[n] + 1
        if walks < WALK_EVERY:
            return False
        self._walks[n] = 0
        return True
