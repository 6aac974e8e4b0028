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

from skipfilter.hub.protocol.wire import string_problem

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

#: ``(value, match_type)``: one topic matcher.
Matcher = tuple[str, str]

#: Says why ``value`` is not a valid pattern of ``match_type`` against ``base_url`` (None: valid).
PatternCheck = Callable[[str, str, str], str | None]


class UrlPatternCheck:
    """The default ``PatternCheck``: compiles URL Patterns with the ``urlpattern`` package.

    Verdicts are kept in an LRU (a pattern costs ~160 µs to compile), keyed by pattern and
    base. Exact values are always valid. The index can be given instead (it compiles anyway).
    Not thread-safe; call it from the event loop.
    """

    def __init__(self, size: int = 4096) -> None:
        self._verdicts: LRUCache[tuple[str, str], str | None] = LRUCache(size)

    def __call__(self, value: str, match_type: str, base_url: str) -> str | None:
        if match_type != URLPATTERN or value == WILDCARD:
            return None
        key = (value, base_url)
        try:
            return self._verdicts[key]
        except KeyError:
            pass
        verdict = _compile_problem(value, base_url)
        if self._verdicts.maxsize:
            self._verdicts[key] = verdict
        return verdict


def _compile_problem(value: str, base_url: str) -> str | None:
    from urlpattern import URLPattern

    try:
        URLPattern(value, base_url)
    except (ValueError, TypeError) as exc:
        return f"not a valid URL Pattern ({exc})"
    return None


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
