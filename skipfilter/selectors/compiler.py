"""Selector text and syntax name -> :class:`~skipfilter.selectors.selector.Selector`.

- :func:`compile_selector` -- dispatch to the syntax's compiler, then record the
  segment count every matched topic has when it is fixed.
- :func:`matches` -- one-off convenience test through a cache of compiled selectors.
- The Mercure and regex compilers; the word syntaxes' are in
  :mod:`~skipfilter.selectors.words`, URL Patterns' in :mod:`~skipfilter.selectors.urlpattern`.
"""

from __future__ import annotations

import copyreg
import dataclasses
import functools
import re
from collections.abc import Callable

from skipfilter.errors import InvalidSelector
from skipfilter.selectors import uritemplate
from skipfilter.selectors.linear_regex import compile_linear
from skipfilter.selectors.selector import (
    Selector,
    exact_selector,
    match_all_selector,
)
from skipfilter.selectors.syntax import DELIMITERS, WORD_SYNTAXES
from skipfilter.selectors.typed import EXACT, SELECTOR_TYPES
from skipfilter.selectors.urlpattern import compile_urlpattern
from skipfilter.selectors.words import compile_amqp, compile_mqtt, compile_nats

__all__ = ["compile_selector", "matches"]

_RX_SPECIAL = frozenset(".^$*+?{}[]\\|()")  # characters that may end a regex literal run
_RX_MATCH_ALL = frozenset({"(?s).*", "(?s:.*)", r"[\s\S]*", r"[\S\s]*"})


def compile_selector(
    text: str, syntax: str = "mercure", *, base_url: str | None = None
) -> Selector:
    """Compile ``text`` written in ``syntax`` (one of :data:`SYNTAXES`, or ``"exact"``: the
    topic equal to ``text``) into a :class:`Selector`.

    ``base_url`` (``urlpattern`` only) is what a relative pattern and the relative topics
    given to :meth:`Selector.matches` resolve against (Mercure: the hub's URL).
    Raises :class:`~skipfilter.errors.InvalidSelector` (a ``ValueError``) naming
    the bad part and its 1-based column, or ``ValueError`` for an unknown syntax.
    Runtime: O(len(text)) plus ``re.compile`` for mercure templates, RE2's compile for
    regex (at most :data:`~skipfilter.selectors.linear_regex.MAX_MEM` bytes; a word
    syntax's selector compiles its regex on its first test); the
    ``urlpattern`` package's compile (hundreds of microseconds) for URL Patterns that
    are not plainly literal.

    >>> compile_selector("sport/#", "mqtt").prefix
    'sport'
    >>> compile_selector("/users/42").exact
    '/users/42'
    >>> compile_selector("a.>.b", "nats")
    Traceback (most recent call last):
      ...
    skipfilter.errors.InvalidSelector: '>' must be the last token at column 3 in 'a.>.b'
    """
    if syntax == "urlpattern":
        return compile_urlpattern(text, base_url)
    if base_url is not None:
        raise ValueError(f"base_url applies to urlpattern selectors, not {syntax!r}")
    compiler = _COMPILERS.get(syntax)
    if compiler is None:
        raise ValueError(f"unknown selector syntax {syntax!r}; expected one of {SELECTOR_TYPES}")
    selector = compiler(text)
    if selector.exact is None and not selector.match_all:
        segments = _fixed_segments(text, syntax)
        if segments is not None:
            selector = dataclasses.replace(selector, segments=segments)
    return selector


def _recompiled(text: str, syntax: str, base_url: str | None) -> Selector:
    return compile_selector(text, syntax, base_url=base_url)


def _pickled(
    selector: Selector,
) -> tuple[Callable[[str, str, str | None], Selector], tuple[str, str, str | None]]:
    """Pickle a selector as (text, syntax, base): its compiled predicate is a closure."""
    return _recompiled, (selector.text, selector.syntax, selector.base)


copyreg.pickle(Selector, _pickled)

_EXPRESSION = re.compile(r"\{([^}]*)\}")


def _fixed_segments(text: str, syntax: str) -> int | None:
    """The delimiter count every topic matched by ``text`` has, if it is fixed.

    Mercure: only ``{+x}``, ``{#x}`` and ``{/x}`` can expand to an unencoded ``/``,
    so a template without them matches topics with exactly its literal ``/``s (and
    its own text, which has the same count). Word syntaxes: fixed unless a multi-word
    wildcard (``#``, ``>``) is present.
    """
    if syntax == "mercure":
        operators = {e[:1] for e in _EXPRESSION.findall(text)}
        return None if operators & {"+", "#", "/"} else text.count(DELIMITERS[syntax])
    words = WORD_SYNTAXES.get(syntax)
    if words is not None:
        return None if words.multi in words.words(text) else text.count(words.delimiter)
    return None


@functools.lru_cache(maxsize=4096)
def _compile_cached(text: str, syntax: str) -> Selector:
    """compile_selector behind an LRU cache, for :func:`matches`."""
    return compile_selector(text, syntax)


def matches(text: str, topic: str, syntax: str = "mercure") -> bool:
    """Whether selector ``text`` in ``syntax`` matches ``topic``; compiles through an LRU cache.

    For one-off checks and tests; hot paths should keep the :class:`Selector`.
    Runtime: amortised :meth:`Selector.matches` (the cache holds 4096 selectors).

    >>> matches("https://example.com/books/{id}", "https://example.com/books/1")
    True
    """
    return _compile_cached(text, syntax).matches(topic)


# -- mercure ------------------------------------------------------------------------------


def _compile_mercure(text: str) -> Selector:
    """``*``, an RFC 6570 template (text containing ``{``) or a raw string matched exactly."""
    if text == "*":
        return match_all_selector(text, "mercure")
    if not uritemplate.is_template(text):
        return exact_selector(text, "mercure", text)
    try:
        template = uritemplate.parse(text)
    except InvalidSelector:  # Mercure: a selector that is not a valid template is a raw string
        return exact_selector(text, "mercure", text)
    if template.linear_regex:
        # The selector's own text matches too; as a first alternative (a literal, so
        # still linear) it costs no Python call per test.
        either = re.compile(f"{re.escape(text)}\\Z|{template.pattern.pattern}")
        return Selector(text, "mercure", None, template.literal_prefix, False, either.match)
    pattern_match = template.matcher  # the automaton: linear time for every template

    def match(topic: str) -> object:
        return topic == text or pattern_match(topic)

    return Selector(text, "mercure", None, template.literal_prefix, False, match)


# -- regex --------------------------------------------------------------------------------


def _compile_regex(text: str) -> Selector:
    """An RE2 pattern that must match the whole topic: linear time in the topic whatever
    the pattern (:mod:`skipfilter.selectors.linear_regex`)."""
    fullmatch = compile_linear(text)
    if text in _RX_MATCH_ALL:
        return match_all_selector(text, "regex")
    run = 0  # length of the leading run of characters that are literal whatever follows
    while run < len(text) and text[run] not in _RX_SPECIAL:
        run += 1
    if run == len(text):
        return exact_selector(text, "regex", text)
    if text[run] in "*+?{":  # a quantifier applies to the last literal character
        run = max(run - 1, 0)
    prefix = "" if "|" in text else text[:run]  # a top-level '|' may drop the prefix
    return Selector(text, "regex", None, prefix, False, fullmatch)


def _compile_exact(text: str) -> Selector:
    """The one topic equal to ``text`` (Mercure 1.0's exact matcher)."""
    return exact_selector(text, EXACT, text)


_COMPILERS: dict[str, Callable[[str], Selector]] = {
    EXACT: _compile_exact,
    "mercure": _compile_mercure,
    "amqp": compile_amqp,
    "nats": compile_nats,
    "mqtt": compile_mqtt,
    "regex": _compile_regex,
}
