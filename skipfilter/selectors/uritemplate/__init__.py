"""RFC 6570 URI templates as Mercure topic selectors: the parser and its two matchers.

- :mod:`~skipfilter.selectors.uritemplate.parser` -- :func:`parse`, :func:`is_template`,
  :class:`Template` (the public face).
- :mod:`~skipfilter.selectors.uritemplate.regex` -- a parsed template compiled to a regex.
- :mod:`~skipfilter.selectors.uritemplate.nfa` -- that regex run as an automaton, in
  linear time whatever its shape.
"""

from skipfilter.selectors.uritemplate.parser import Template, is_template, parse

__all__ = ["Template", "is_template", "parse"]
