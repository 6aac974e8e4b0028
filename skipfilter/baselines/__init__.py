"""What users run today, for comparison: each a fair and competent Matcher.

- :class:`LinearScan`, :class:`CachedScan` -- the scans (:mod:`~skipfilter.baselines.scans`).
- :class:`LockedTrie` -- a NATS-sublist style trie with a result cache
  (:mod:`~skipfilter.baselines.locked_trie`).
- :class:`CtrieMatcher` -- the Ctrie, a matchbox port (:mod:`~skipfilter.baselines.ctrie`).
- ``PahoMatcher`` -- paho-mqtt's trie (:mod:`~skipfilter.baselines.paho`); imported from
  there only, since paho-mqtt is optional.
"""

from skipfilter.baselines.ctrie import CtrieMatcher
from skipfilter.baselines.locked_trie import TRIE_SYNTAXES, LockedTrie
from skipfilter.baselines.scans import CachedScan, LinearScan

__all__ = ["TRIE_SYNTAXES", "CachedScan", "CtrieMatcher", "LinearScan", "LockedTrie"]
