"""Topic selector languages compiled into fast predicates.

A subscriber describes the topics it wants with a *selector* written in one of
six syntaxes (:data:`SYNTAXES`): Mercure (exact strings, ``*`` and RFC 6570 URI
templates), AMQP 0-9-1 topic bindings, NATS subjects, MQTT topic filters, Python
regular expressions and WHATWG URL Patterns (Mercure 1.0). Each selector is compiled
once into a :class:`Selector`: a precompiled predicate plus facts an index can exploit
without calling it (the single topic it matches, a literal prefix of every
topic it matches, whether it matches everything).

Contents:

- :data:`SYNTAXES` -- the syntax names accepted by :func:`compile_selector`.
- :class:`Selector` -- a compiled selector: ``matches(topic)``, ``exact``, ``prefix``,
  ``match_all``.
- :func:`compile_selector` -- text + syntax name -> :class:`Selector`, or
  :class:`~skipfilter.errors.InvalidSelector` naming the bad part and its column.
- :func:`matches` -- one-off convenience test through a cache of compiled selectors.
- :data:`WORD_SYNTAXES`, :data:`DELIMITERS` -- the facts of each syntax
  (:mod:`~skipfilter.selectors.syntax`).
- :func:`check_topic`, :func:`topic_problem`, :func:`check_topics`,
  :func:`topic_checker` -- the topics a syntax cannot publish to (MQTT ``a/+``, NATS
  ``a..b``), refused with
  :class:`~skipfilter.errors.InvalidTopic` (:mod:`~skipfilter.selectors.topics`).
- :class:`TypedSelector` -- a selector with its type (``"exact"`` or a syntax), so one
  subscriber may hold several kinds (Mercure 1.0: exact and URL Pattern matchers).
- :mod:`~skipfilter.selectors.uritemplate` -- the RFC 6570 parser and matchers.
- :mod:`~skipfilter.selectors.urlpattern` -- URL Patterns and the canonical topic URLs they see.

A topic's words (levels, tokens) are ``topic.split(sep)``, so empty words count, except
that an AMQP routing key "" has no words (as in RabbitMQ). In an AMQP routing key the
wildcard characters are ordinary words; NATS and MQTT refuse them in published topics.
"""

from skipfilter.selectors import uritemplate, urlpattern
from skipfilter.selectors.compiler import compile_selector, matches
from skipfilter.selectors.selector import Selector
from skipfilter.selectors.syntax import DELIMITERS, SYNTAXES, WORD_SYNTAXES, WordSyntax
from skipfilter.selectors.topics import check_topic, check_topics, topic_checker, topic_problem
from skipfilter.selectors.typed import EXACT, SELECTOR_TYPES, TypedSelector, selector_type

__all__ = [
    "DELIMITERS",
    "EXACT",
    "SELECTOR_TYPES",
    "SYNTAXES",
    "WORD_SYNTAXES",
    "Selector",
    "TypedSelector",
    "WordSyntax",
    "check_topic",
    "check_topics",
    "compile_selector",
    "matches",
    "selector_type",
    "topic_checker",
    "topic_problem",
    "uritemplate",
    "urlpattern",
]
