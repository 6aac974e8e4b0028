"""Topic matchers as the 1.0 protocol carries them: ``(value, match_type)`` pairs, checked.

A matcher is a plain tuple so the index (issue 22's typed selectors) and the session can take
it as is (``TypedSelector(*matcher)``: the types are selector syntax names). ``exact`` compares
bytes; ``urlpattern`` is a WHATWG URL Pattern, relative ones resolved against the hub's URL;
``*`` matches every topic whatever the type (draft-08 §4). ``LEGACY`` (``"mercure"``, the 0.x
selector syntax: an exact string or an RFC 6570 URI template) is not a 1.0 type: it tags the
0.x ``topic=`` selectors and ``mercure`` claim in compatibility mode, and no 1.0 request or
token can name it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Final

from cachetools import LRUCache

from skipfilter.errors import InvalidSelector, PatternTooCostly
from skipfilter.hub.frontends.v1.wire import string_problem
from skipfilter.selectors.urlpattern import CostBudget, compile_urlpattern
from skipfilter.selectors.urlpattern.cost import check_pattern_cost
from skipfilter.tokens.mint import TopicMatcher as TopicMatcher  # one definition, shared

EXACT: Final = "exact"
URLPATTERN: Final = "urlpattern"
LEGACY: Final = "mercure"
#: The reserved matcher value that matches every topic, whatever the match type.
WILDCARD: Final = "*"
#: The match types a request or a token may name (case-sensitive).
MATCH_TYPES: Final = (EXACT, URLPATTERN)

#: Limits, as the Go hub's: matchers per request or token, bytes per pattern.
MAX_MATCHERS: Final = 100
MAX_PATTERN_BYTES: Final = 4096

_REMEMBERED: Final = 512  # the longest pattern whose refusal the check remembers

#: Says why ``value`` is not a valid pattern of ``match_type`` against ``base_url`` (None: valid).
PatternCheck = Callable[[str, str, str], str | None]


class UrlPatternCheck:
    """The default ``PatternCheck``: compiles URL Patterns as the index does
    (:func:`~skipfilter.selectors.urlpattern.compile_urlpattern`: the standard's ASCII
    classes, the cost limits, a compiled pattern shared while anything holds it).

    Refusals of patterns up to 512 characters are kept in an LRU keyed by pattern and base
    (a refused pattern is not compiled twice; a few megabytes at most). An accepted one is
    compiled again when asked, which costs a dict probe while a stream, grant or index entry
    holds it and a compile (charged to the request) when none does, so a pattern's cost is
    paid by the request that makes it compiled. Exact values are always valid.
    :meth:`request` gives one request's check. Not thread-safe; call it from the
    event loop.
    """

    def __init__(self, size: int = 4096) -> None:
        self._refusals: LRUCache[tuple[str, str], str] = LRUCache(max(size, 1))
        self._size = size

    def __call__(self, value: str, match_type: str, base_url: str) -> str | None:
        return self.check(value, match_type, base_url, None, None)

    def request(self, defer: bool = False) -> RequestCheck:
        """A check for one request: its patterns' compile cost together is bounded
        (``SUBSCRIPTION_COST_LIMIT``), and what it compiled is held until the request's
        stream holds it (so a pattern is compiled once per request, not once per use).
        ``defer``: see :class:`RequestCheck`."""
        return RequestCheck(self, defer)

    def refusal(self, value: str, base_url: str) -> str | None:
        """The remembered refusal of ``value`` against ``base_url``, if any."""
        return self._refusals.get((value, base_url))

    def check(
        self,
        value: str,
        match_type: str,
        base_url: str,
        budget: CostBudget | None,
        held: list[object] | None,
    ) -> str | None:
        """Why ``value`` is no valid pattern (None: valid); compiles spend from ``budget``,
        and the compiled selector is appended to ``held``."""
        if match_type != URLPATTERN or value == WILDCARD:
            return None
        key = (value, base_url)
        refused = self._refusals.get(key)
        if refused is not None:
            return refused
        try:
            selector = compile_urlpattern(value, base_url, budget=budget)
        except PatternTooCostly as exc:
            return str(exc)  # a request's total is not the pattern's: not remembered
        except (InvalidSelector, ValueError) as exc:
            verdict = f"not a valid URL Pattern ({exc.__cause__ or exc})"
            if self._size and len(value) <= _REMEMBERED:
                self._refusals[key] = verdict
            return verdict
        if held is not None:
            held.append(selector)
        return None


class RequestCheck:
    """One request's ``PatternCheck`` (:meth:`UrlPatternCheck.request`): ``held`` keeps
    what it compiled, ``budget`` what its patterns may still cost.

    Deferred (``defer=True``), a call only checks what costs no compile (the cached refusals,
    the pattern's estimated cost) and records the pattern; :meth:`compile` then compiles
    the recorded ones one at a time (:attr:`deferred`), so the caller can yield to its event
    loop between them: no one call holds it longer than one pattern's compile.
    """

    __slots__ = ("_check", "_defer", "budget", "deferred", "held")

    def __init__(self, check: UrlPatternCheck, defer: bool = False) -> None:
        self._check = check
        self._defer = defer
        self.budget = CostBudget()
        self.held: list[object] = []
        #: ``(value, base_url)`` of each URL Pattern left for :meth:`compile`.
        self.deferred: list[tuple[str, str]] = []

    def __call__(self, value: str, match_type: str, base_url: str) -> str | None:
        if not self._defer or match_type != URLPATTERN or value == WILDCARD:
            return self._check.check(value, match_type, base_url, self.budget, self.held)
        refused = self._check.refusal(value, base_url)
        if refused is not None:
            return refused
        try:
            check_pattern_cost(value)
        except PatternTooCostly as exc:
            return str(exc)
        self.deferred.append((value, base_url))
        return None

    def compile(self, value: str, base_url: str) -> str | None:
        """Compile one deferred pattern: why it is refused, or None."""
        return self._check.check(value, URLPATTERN, base_url, self.budget, self.held)


def matcher_problem(
    value: str,
    match_type: str,
    base_url: str,
    check: PatternCheck,
    max_bytes: int = MAX_PATTERN_BYTES,
) -> str | None:
    """Why ``value`` cannot be a matcher of ``match_type`` (None when it can): a type the hub
    does not support, too long, a character the protocol forbids, or an invalid pattern."""
    if match_type not in MATCH_TYPES:
        return f"unsupported match type {match_type[:40]!r} (one of {', '.join(MATCH_TYPES)})"
    size = len(value.encode("utf-8", "surrogatepass"))
    if size > max_bytes:
        return f"pattern of {size} bytes, more than {max_bytes}"
    problem = string_problem(value)
    if problem is not None:
        return problem
    return check(value, match_type, base_url)
