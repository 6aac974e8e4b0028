"""The knobs of TopicIndex's memos and caches, passed in as one value (not module globals).

The defaults suit the workloads in docs/benchmarks.md; docs/topic-index.md says what
each memo buys. Tests and benchmarks vary them by passing another :class:`Tuning`.
"""

from __future__ import annotations

from dataclasses import dataclass, fields

__all__ = ["Tuning"]


@dataclass(frozen=True, slots=True)
class Tuning:
    """How eagerly TopicIndex memoizes answers and caches per-topic tests.

    - ``memo_min_bitmaps``: a topic seen twice (within the last ``seen_window`` such
      topics) whose answer is the union of at least this many bitmaps is memoized until
      the next subscribe or unsubscribe. Unique topics, the usual case in a hub, cost a
      set insert, not a union nobody reuses.
    - ``memo_eager_bitmaps``: an answer of at least this many bitmaps is memoized on the
      first lookup (many selectors match the topic, so even one repeat repays it).
    - ``seen_window``: how many once-seen topics are remembered; small, so a flood of
      unique topics probes a set that stays in the CPU cache.
    - ``group_cache_threshold``: a bucket of more distinct selectors than this (same
      literal prefix and segment count) keeps a per-topic SkipFilter cache; below it,
      testing each selector is cheaper than a cache miss.
    - ``word_memo_min_bitmaps``: ``memo_min_bitmaps`` for the word syntaxes (amqp, nats,
      mqtt), whose lookups walk a word trie whatever they find: 0 memoizes every topic
      seen twice, even one nobody wants, so hot topics cost a dict lookup.
    - ``level_index_depth``: above 0, a word-syntax subscriber whose one selector is a
      pattern of fewer words than this is filed level by level in bitmaps of ids
      (:mod:`~skipfilter.index.level_index`): faster where answers hold thousands of
      ids, slower where they hold tens (docs/topic-index.md has both); 0, the default,
      keeps every pattern in the word trie.

    >>> Tuning(seen_window=16).memo_min_bitmaps
    3
    """

    memo_min_bitmaps: int = 3
    memo_eager_bitmaps: int = 8
    seen_window: int = 4096
    group_cache_threshold: int = 8
    word_memo_min_bitmaps: int = 0
    level_index_depth: int = 0

    def __post_init__(self) -> None:
        for knob in fields(self):
            value = getattr(self, knob.name)
            if isinstance(value, bool) or not isinstance(value, int):
                raise TypeError(f"Tuning.{knob.name} must be an int, got {value!r}")
            least = 1 if knob.name.startswith(("memo_", "seen_")) else 0
            if value < least:
                raise ValueError(f"Tuning.{knob.name} must be at least {least}, got {value}")
