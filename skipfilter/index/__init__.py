"""TopicIndex and the candidate indexes behind it.

- :class:`TopicIndex`, :class:`Subscription` -- the index (:mod:`~skipfilter.index.topic_index`).
- :class:`Tuning` -- how eagerly it memoizes (:mod:`~skipfilter.index.tuning`).
- :mod:`~skipfilter.index.table` -- one table of selectors per role (subscribed, allowed);
  :mod:`~skipfilter.index.mixed_table` -- one per syntax, ORed, when an index holds several.
- :mod:`~skipfilter.index.prefix_index` -- patterns by literal prefix and segment count
  (mercure, regex), with :mod:`~skipfilter.index.prefixes` choosing the lengths to probe.
- :mod:`~skipfilter.index.word_index` -- patterns by shape (:mod:`~skipfilter.index.shapes`)
  and in a word trie (:mod:`~skipfilter.index.wordtrie`) for amqp, nats and mqtt;
  :mod:`~skipfilter.index.word_paths` answers from them or from the level index
  (:mod:`~skipfilter.index.level_index`), as :mod:`~skipfilter.index.path_choice` decides.
"""

from skipfilter.index.topic_index import Subscription, TopicIndex
from skipfilter.index.tuning import Tuning

__all__ = ["Subscription", "TopicIndex", "Tuning"]
