"""One distinct non-exact selector and the subscribers that hold it.

TopicIndex stores each distinct pattern once, however many subscribers hold it, and
its candidate indexes (by literal prefix, by word) hand these objects back for a topic.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from skipfilter.core import Bitmap
from skipfilter.selectors import Selector

__all__ = ["Pattern", "pattern_matches"]


@dataclass(eq=False, slots=True)
class Pattern:
    """One distinct non-exact selector and the subscribers that hold it.

    Identity is the object (``eq=False``): a tuple of patterns is a memo key.
    """

    selector: Selector | None  # None: the table's match-all pattern, in no group
    sids: Bitmap = field(default_factory=Bitmap)
    pid: int = -1  # id in the group's SkipFilter, when it has one
    tested: bool = True  # a word trie's candidacy must be confirmed by the test


def pattern_matches(pattern: Pattern, topic: str) -> bool:
    """The SkipFilter test of a candidate index: does ``pattern`` match ``topic``."""
    assert pattern.selector is not None
    return bool(pattern.selector.test(topic))
