"""A compiled selector (:class:`Selector`) and the constructors the syntaxes share.

Each syntax's compiler (:mod:`~skipfilter.selectors.compiler`,
:mod:`~skipfilter.selectors.words`) builds its selectors with these, so the facts a
selector carries mean the same in every syntax.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from skipfilter.errors import InvalidSelector
from skipfilter.selectors.linear_regex import is_linear_test

if TYPE_CHECKING:
    from skipfilter.selectors.urlpattern.facts import UrlFacts

__all__ = [
    "Selector",
    "exact_selector",
    "invalid_selector",
    "match_all_selector",
    "regex_of",
    "regex_selector",
]


def _always(topic: str) -> bool:
    """Predicate of match-all selectors: no work at all."""
    return True


@dataclass(frozen=True, slots=True, weakref_slot=True)
class Selector:
    """A selector compiled once, tested many times.

    ``text``, ``syntax`` and ``base`` are as given. The other fields are honest facts an
    index may use instead of calling :meth:`matches`:

    - ``exact``: the only topic matched, when exactly one is (hash-map fast path).
    - ``prefix``: a literal every matching topic starts with ("" when none).
    - ``match_all``: every string is matched.

    Selectors compare and hash by text, syntax and base, are immutable and therefore
    safe to share between threads, and pickle by recompiling from their text (the
    compiler registers that with :mod:`copyreg`).
    """

    text: str
    syntax: str
    exact: str | None
    prefix: str
    match_all: bool
    #: The precompiled test, truthy on a match: what :meth:`matches` calls. Hot loops
    #: (an index testing many selectors per topic) call it directly to save a frame.
    test: Callable[[str], object] = field(repr=False, compare=False)
    #: How many delimiter characters (:data:`~skipfilter.selectors.DELIMITERS`) every
    #: matching topic has, when that is fixed (``/books/{id}`` always has 2 ``/``;
    #: ``a.#`` has no fixed count: None). An index buckets selectors by it so a topic
    #: tests only those that fit.
    segments: int | None = field(default=None, compare=False)
    #: ``urlpattern`` only: where an index may file the pattern without running it
    #: (:class:`~skipfilter.selectors.urlpattern.UrlFacts`).
    url: UrlFacts | None = field(default=None, compare=False, repr=False)
    #: ``urlpattern`` only: the base URL relative topics (and this pattern, if relative)
    #: are resolved against. Part of the selector's identity: ``/books/:id`` against two
    #: hub URLs is two patterns.
    base: str | None = None

    def __post_init__(self) -> None:
        if isinstance(self.test, _CompileOnFirstTest):  # the copy (dataclasses.replace) kept
            self.test.selector = self

    def matches(self, topic: str) -> bool:
        """Whether ``topic`` is selected, by one precompiled test; thread-safe.

        Runtime: O(1) for ``match_all``, O(len(topic)) for exact selectors and word
        syntaxes, O(words x pattern words) for AMQP bindings with several ``#``;
        O(len(topic) x len(pattern)) for a ``regex`` selector (RE2).

        >>> from skipfilter.selectors import compile_selector
        >>> compile_selector("a.*.c", "amqp").matches("a.b.c")
        True
        """
        return bool(self.test(topic))


def exact_selector(text: str, syntax: str, topic: str) -> Selector:
    """A selector that matches only ``topic``: one string comparison."""
    return Selector(text, syntax, topic, topic, False, topic.__eq__)


def match_all_selector(text: str, syntax: str) -> Selector:
    """A selector that matches every string."""
    return Selector(text, syntax, None, "", True, _always)


def regex_selector(
    text: str, syntax: str, prefix: str, regex: str | Callable[[str], str]
) -> Selector:
    """A selector tested by an ``re`` full match, compiled on its first test: the word
    syntaxes' indexes prove matches by word and rarely test, and compiling was most of a
    subscribe's cost (docs/benchmarks.md). ``regex`` is the pattern, or a function that
    writes it from ``text`` when first needed (escaping an MQTT filter's every word was a
    third of its compile)."""
    return Selector(text, syntax, None, prefix, False, _CompileOnFirstTest(regex, text))


class _CompileOnFirstTest:
    """A selector's test until its first call, which compiles the regex and puts the
    compiled full match in the selector's ``test`` (callers that kept this one go on
    through it). Two threads racing compile the same regex twice: harmless."""

    __slots__ = ("_compiled", "_regex", "_text", "selector")

    def __init__(self, regex: str | Callable[[str], str], text: str) -> None:
        self._regex = regex  # or what writes it from the selector's text
        self._text = text
        self._compiled: Callable[[str], object] | None = None
        self.selector: Selector | None = None

    def source(self) -> str:
        """The regex, written now if it was not yet (for the first test and regex_of)."""
        regex = self._regex
        if not isinstance(regex, str):
            regex = self._regex = regex(self._text)
        return regex

    def __call__(self, topic: str) -> object:
        compiled = self._compiled
        if compiled is None:
            compiled = self._compiled = re.compile(self.source()).fullmatch
            if self.selector is not None:
                object.__setattr__(self.selector, "test", compiled)
                self.selector = None  # no cycle left behind
        return compiled(topic)


def invalid_selector(what: str, text: str, column: int) -> InvalidSelector:
    """An InvalidSelector whose message names the bad part, its column and the selector."""
    return InvalidSelector.at(what, text, column)


def regex_of(selector: Selector) -> str | None:
    """The ``re`` pattern a selector's test fully matches, compiled yet or not (None for a
    selector tested otherwise): what other engines (Spark's ``RLIKE``) translate."""
    test = selector.test
    if isinstance(test, _CompileOnFirstTest):
        return test.source()
    owner = getattr(test, "__self__", None)
    if isinstance(owner, re.Pattern) and getattr(test, "__name__", "") == "fullmatch":
        return str(owner.pattern)
    return is_linear_test(test)
