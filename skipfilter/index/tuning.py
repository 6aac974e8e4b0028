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
    - ``level_first_word``: word syntaxes; a pattern whose first word is a literal goes to
      the level index once more than this many patterns have started with that word (the
      ones before stay in the word trie). Wildcard-first patterns always go there.
    - ``level_index``: 1 (default) uses the level index for the word syntaxes; 0 keeps every
      pattern in the word trie, faster where each topic reaches only tens of subscribers
      among many (the iot workload; docs/benchmarks.md has both).

    >>> Tuning(seen_window=16).memo_min_bitmaps
    3
    """

    memo_min_bitmaps: int = 3
    memo_eager_bitmaps: int = 8
    seen_window: int = 4096
    group_cache_threshold: int = 8
    level_first_word: int = 256
    level_index: int = 1

    def __post_init__(self) -> None:
        for knob in fields(self):
            value = getattr(self, knob.name)
            if isinstance(value, bool) or not isinstance(value, int):
                raise TypeError(f"Tuning.{knob.name} must be an int, got {value!r}")
            least = 1 if knob.name.startswith(("memo_", "seen_")) else 0
            if value < least:
                raise ValueError(f"Tuning.{knob.name} must be at least {least}, got {value}")
