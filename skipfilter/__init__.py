"""skipfilter: which subscribers want this message? An inverted roaring-bitmap index.

- :class:`SkipFilter` -- the generic index (a port of the Go skipfilter).
- :class:`TopicIndex` -- Mercure delivery semantics over topic selectors.
- :func:`compile_selector` -- selectors in the mercure, amqp, nats, mqtt and regex syntaxes.
"""

from skipfilter.core import Bitmap, SkipFilter
from skipfilter.errors import InvalidSelector, SkipFilterError
from skipfilter.index import Subscription, TopicIndex
from skipfilter.selectors import SYNTAXES, Selector, compile_selector

__all__ = [
    "SYNTAXES",
    "Bitmap",
    "InvalidSelector",
    "Selector",
    "SkipFilter",
    "SkipFilterError",
    "Subscription",
    "TopicIndex",
    "compile_selector",
]
