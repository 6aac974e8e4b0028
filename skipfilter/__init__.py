"""skipfilter: which subscribers want this message? An inverted roaring-bitmap index.

The public API is what this module exports (:data:`__all__`, pinned by a test and
documented in docs/api.md):

- :class:`SkipFilter` -- the generic index (a port of the Go skipfilter); :data:`Bitmap`.
- :class:`TopicIndex`, :class:`Subscription`, :class:`Tuning` -- Mercure delivery
  semantics over topic selectors, in every syntax.
- :func:`compile_selector`, :func:`matches`, :class:`Selector`, :data:`SYNTAXES`,
  :mod:`uritemplate` -- selectors in the mercure, amqp, nats, mqtt, regex and urlpattern
  syntaxes; :class:`TypedSelector` -- a selector with its type (exact, or a syntax), so
  one subscriber holds several kinds (Mercure 1.0's exact and URL Pattern matchers).
- :class:`Matcher` -- the interface TopicIndex and every baseline implement.
- :class:`SkipFilterError` and its subclasses -- every error raised on purpose.

The comparison harness (:mod:`skipfilter.baselines`, :mod:`skipfilter.bench`), the hub
(:mod:`skipfilter.hub`) and Spark routing (:mod:`skipfilter.spark`) are imported from
their packages; the last two need their extras.
"""

from skipfilter.core import Bitmap, SkipFilter
from skipfilter.errors import (
    InvalidSelector,
    InvalidTopic,
    MissingExtra,
    PatternTooCostly,
    SkipFilterError,
)
from skipfilter.index import Subscription, TopicIndex, Tuning
from skipfilter.matcher import Matcher
from skipfilter.selectors import (
    SYNTAXES,
    Selector,
    TypedSelector,
    compile_selector,
    matches,
    uritemplate,
)

__version__ = "0.1.0"

__all__ = [
    "SYNTAXES",
    "Bitmap",
    "InvalidSelector",
    "InvalidTopic",
    "Matcher",
    "MissingExtra",
    "PatternTooCostly",
    "Selector",
    "SkipFilter",
    "SkipFilterError",
    "Subscription",
    "TopicIndex",
    "Tuning",
    "TypedSelector",
    "compile_selector",
    "matches",
    "uritemplate",
]
