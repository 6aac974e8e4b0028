"""A concurrent subscription trie with O(1) snapshots, after Workiva's matchbox.

- :mod:`~skipfilter.baselines.ctrie.trie` -- :class:`Ctrie` and :class:`ReadOnlyError`
  (the algorithm, and what "lock-free" means in CPython, are explained there).
- :mod:`~skipfilter.baselines.ctrie.nodes` -- its node types and compare-and-swap.
- :mod:`~skipfilter.baselines.ctrie.syntax` -- :class:`Config` (presets :data:`AMQP`,
  :data:`MQTT`) and the brute-force :func:`matches`.
- :mod:`~skipfilter.baselines.ctrie.matcher` -- :class:`CtrieMatcher`, the Ctrie behind
  the :class:`~skipfilter.matcher.Matcher` interface.
"""

from skipfilter.baselines.ctrie.matcher import CtrieMatcher
from skipfilter.baselines.ctrie.syntax import AMQP, MQTT, Config, matches
from skipfilter.baselines.ctrie.trie import Ctrie, ReadOnlyError

__all__ = ["AMQP", "MQTT", "Config", "Ctrie", "CtrieMatcher", "ReadOnlyError", "matches"]
