"""The knobs of TopicIndex's memos and caches, passed in as one value (not module globals).

The defaults suit the workloads in docs/benchmarks.md; docs/topic-index.md says what
each memo buys. Tests and benchmarks vary them by passing another :class:`Tuning`.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Literal, get_args

__all__ = ["LEVEL_MODES", "LevelMode", "Tuning"]

#: Which path answers a word-syntax topic (see ``Tuning.level_index``).
LevelMode = Literal["auto", "always", "never"]
LEVEL_MODES: tuple[str, ...] = get_args(LevelMode)


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
    - ``level_index``: word syntaxes; which path answers a topic: ``"auto"`` (default) the
      cheaper one for topics of its word count, learned from how many patterns and
      subscribers such topics reach (docs/topic-index.md has the rule and the measured
      crossover); ``"always"`` the level index, ``"never"`` the patterns' bitmaps (for
      tests and benchmarks).
    - ``level_crossover``: in ``"auto"``, topics of n words go to the level index once
      they cost the patterns' path, on average, more than ``level_crossover / 100 * (n + 1)``
      bitmap ORs (k patterns and an answer of A ids cost ``k * (1 + A / 4096)``).
    - ``level_filing_batch``: in ``"auto"``, subscribers are filed in the level index only
      once some word count chooses it (pattern sets it never wins, such as IoT filters, do
      not pay for it at each subscribe); until it has caught up, each lookup that wants it
      files this many of the subscribers held back and the patterns' path answers.

    >>> Tuning(seen_window=16).memo_min_bitmaps
    3
    """

    memo_min_bitmaps: int = 3
    memo_eager_bitmaps: int = 8
    seen_window: int = 4096
    group_cache_threshold: int = 8
    level_index: LevelMode = "auto"
    level_crossover: int = 200
    level_filing_batch: int = 1024

    def __post_init__(self) -> None:
        for knob in fields(self):
            value = getattr(self, knob.name)
            if knob.name == "level_index":
                if value not in LEVEL_MODES:
                    choices = ", ".join(map(repr, LEVEL_MODES))
                    raise ValueError(f"Tuning.level_index must be one of {choices}, got {value!r}")
                continue
            if isinstance(value, bool) or not isinstance(value, int):
                raise TypeError(f"Tuning.{knob.name} must be an int, got {value!r}")
            least = 1 if knob.name.startswith(("memo_", "seen_", "level_filing")) else 0
            if value < least:
                raise ValueError(f"Tuning.{knob.name} must be at least {least}, got {value}")
