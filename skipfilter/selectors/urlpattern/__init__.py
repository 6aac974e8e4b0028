"""WHATWG URL Patterns as topic selectors (Mercure 1.0's ``match_urlpattern``).

- :mod:`~skipfilter.selectors.urlpattern.compile` -- :func:`compile_urlpattern`: a pattern
  (constructor-string form) to a :class:`~skipfilter.selectors.Selector`, through the
  ``urlpattern`` package; plainly literal patterns without it.
- :mod:`~skipfilter.selectors.urlpattern.canonical` -- :class:`Resolver`: a topic to the
  canonical URL parts the patterns see (``https://EXAMPLE.com:443`` is ``https://example.com/``).
- :mod:`~skipfilter.selectors.urlpattern.facts` -- :class:`UrlFacts`: where an index may file
  a compiled pattern.
- :mod:`~skipfilter.selectors.urlpattern.parts` -- the facts of one component's pattern string.
- :mod:`~skipfilter.selectors.urlpattern.groups` -- regular-expression groups, in the
  standard's ASCII ``\\w \\d \\b``.
- :mod:`~skipfilter.selectors.urlpattern.cost` -- what compiling a pattern will cost, and
  the limits on it.
"""

from skipfilter.selectors.urlpattern.canonical import Resolver
from skipfilter.selectors.urlpattern.compile import PATTERN_LIMIT, compile_urlpattern, resolver
from skipfilter.selectors.urlpattern.cost import (
    BASE_COST,
    PATTERN_COST_LIMIT,
    SUBSCRIPTION_COST_LIMIT,
    CostBudget,
    pattern_cost,
)
from skipfilter.selectors.urlpattern.facts import UrlFacts, host_key

__all__ = [
    "BASE_COST",
    "PATTERN_COST_LIMIT",
    "PATTERN_LIMIT",
    "SUBSCRIPTION_COST_LIMIT",
    "CostBudget",
    "Resolver",
    "UrlFacts",
    "compile_urlpattern",
    "host_key",
    "pattern_cost",
    "resolver",
]
