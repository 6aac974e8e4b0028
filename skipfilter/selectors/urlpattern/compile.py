"""A URL Pattern (constructor-string form) compiled into a :class:`~skipfilter.selectors.Selector`.

The matcher of record is the ``urlpattern`` package (rust-urlpattern on the Rust ``regex``
crate: linear time, as Mercure requires of hubs). A plainly literal absolute pattern
(``https://example.com/books/1``) is recognized without it: compiling one there costs
hundreds of microseconds, and its whole meaning is "the topic's canonical protocol, host,
port and path are these" (:mod:`~skipfilter.selectors.urlpattern.canonical`).
"""

from __future__ import annotations

import functools
import re
import weakref
from collections.abc import Callable
from typing import Final

from urlpattern import URLPattern

from skipfilter.errors import InvalidSelector
from skipfilter.selectors.selector import Selector, match_all_selector
from skipfilter.selectors.urlpattern import parts
from skipfilter.selectors.urlpattern.canonical import SEPARATOR, Resolver, key_of
from skipfilter.selectors.urlpattern.cost import CostBudget, check_pattern_cost
from skipfilter.selectors.urlpattern.facts import UrlFacts, host_key
from skipfilter.selectors.urlpattern.groups import standard

__all__ = ["PATTERN_LIMIT", "compile_urlpattern", "compiled_count", "freed_units", "resolver"]

SYNTAX: Final = "urlpattern"

#: The longest pattern accepted, in UTF-8 bytes (Mercure's hub refuses longer ones).
PATTERN_LIMIT: Final = 4096

_PROBE_BASE: Final = "https://base.invalid/"  # tells a relative pattern from a bad one

# An absolute http(s) pattern with no pattern syntax at all and a path the URL parser
# leaves as it is: its components are its own text (checked against the package by tests).
_PLAIN_LITERAL: Final = re.compile(
    r"(https?)://([a-z0-9-]+(?:\.[a-z0-9-]+)*)(?::([1-9][0-9]{0,4}))?(/[A-Za-z0-9\-._~!$&',;=@%/]*)"
)
_DEFAULT_PORTS: Final = {"http": "80", "https": "443"}
_DOT_SEGMENT: Final = re.compile(r"(?:^|/)(?:\.|%2[eE]){1,2}(?:/|$)")


class _Program:
    """The package's compiled pattern, in a wrapper a weak reference can point at (the
    package's type takes none): what every selector of one pattern shares, with its
    estimated cost and its filing facts (computed once for all of them)."""

    __slots__ = ("__weakref__", "cost", "facts", "pattern")

    def __init__(self, pattern: URLPattern, cost: int) -> None:
        self.pattern = pattern
        self.cost = cost
        self.facts: UrlFacts | None = None

    def __del__(self) -> None:
        _freed[0] += self.cost


_freed = [0]  # units of compiled patterns freed so far (see freed_units)


# Compiled patterns and selectors, each kept only while something (an index entry, a stream,
# a grant, a request being checked) holds it: the first holder compiles, the others share,
# and the last one gone frees it. Keys: (text, None) for an absolute pattern (the base plays
# no part in compiling it), (text, base) for a relative one; selectors add keep_base.
_programs: weakref.WeakValueDictionary[tuple[str, str | None], _Program] = (
    weakref.WeakValueDictionary()
)
_selectors: weakref.WeakValueDictionary[tuple[str, str | None, bool], Selector] = (
    weakref.WeakValueDictionary()
)


def compiled_count() -> int:
    """How many compiled URL Patterns are alive (held by a selector somewhere)."""
    return len(_programs)


def freed_units() -> int:
    """The estimated units (:mod:`~skipfilter.selectors.urlpattern.cost`) of the compiled
    patterns freed so far in this process: when it grows, a long-running process may hand
    the memory back to the operating system (the hub does, ``hub/heap.py``)."""
    return _freed[0]


@functools.lru_cache(maxsize=256)
def resolver(base_url: str | None) -> Resolver:
    """The shared :class:`Resolver` of ``base_url`` (parsing a base costs microseconds)."""
    return Resolver(base_url)


def compile_urlpattern(
    text: str,
    base_url: str | None = None,
    *,
    keep_base: bool = True,
    budget: CostBudget | None = None,
) -> Selector:
    """Compile a URL pattern; relative patterns and topics resolve against ``base_url``.

    ``*`` alone matches every topic. Raises :class:`~skipfilter.errors.InvalidSelector`
    saying why: longer than :data:`PATTERN_LIMIT` bytes, relative without a base URL, or
    refused by the ``urlpattern`` package (its message); its subclass
    :class:`~skipfilter.errors.PatternTooCostly` for a pattern past
    :data:`~skipfilter.selectors.urlpattern.cost.PATTERN_COST_LIMIT`, before compiling.
    ``keep_base=False`` (what an index wants: it resolves topics itself) drops the base
    from an absolute pattern's selector, so ``https://example.com/:id`` is one selector
    whatever the base. Regular-expression groups mean what the standard says: ``\\w``,
    ``\\d`` and ``\\b`` are ASCII (:mod:`~skipfilter.selectors.urlpattern.groups`).

    A selector (and the package's compiled pattern) is shared by every caller while one
    holds it: compiling a pattern held somewhere costs a dict probe. A pattern compiled
    anew spends its cost from ``budget`` (one subscription's patterns together), if given.
    """
    memo = (text, base_url, keep_base)
    held = _selectors.get(memo)
    if held is not None:
        return held
    selector = _compile_selector(text, base_url, keep_base, budget)
    if not selector.match_all:
        _selectors[memo] = selector
    return selector


def _compile_selector(
    text: str, base_url: str | None, keep_base: bool, budget: CostBudget | None
) -> Selector:
    resolver(base_url)  # ValueError for a base that is no absolute URL
    size = len(text.encode("utf-8", "surrogatepass"))
    if size > PATTERN_LIMIT:
        raise InvalidSelector(
            f"URL pattern of {size} bytes, longer than the limit of {PATTERN_LIMIT}: "
            f"{text[:60]!r}...",
            text,
            _column_past_limit(text),
        )
    if text == "*":
        return match_all_selector(text, SYNTAX)
    literal = _plain_literal(text)
    if literal is not None:
        return _literal_selector(text, literal, base_url if keep_base else None)
    program, relative = _compile(text, base_url, budget)
    base = base_url if keep_base or relative else None
    test = _safe_test(program, base)
    return Selector(text, SYNTAX, None, "", False, test, url=_facts(program), base=base)


def _plain_literal(text: str) -> str | None:
    """The index key of a plainly literal absolute pattern, or None."""
    plain = _PLAIN_LITERAL.fullmatch(text)
    if plain is None:
        return None
    scheme, host, port, path = plain.groups()
    last = host.rpartition(".")[2]
    if not last[0].isalpha() or any(label.startswith("xn--") for label in host.split(".")):
        return None  # an IPv4 number or punycode: the package canonicalizes it
    if port is not None and (int(port) > 65535 or port == _DEFAULT_PORTS[scheme]):
        return None
    if _DOT_SEGMENT.search(path):
        return None
    return key_of(scheme, host, port or "", path)


def _literal_selector(text: str, key: str, base_url: str | None) -> Selector:
    """A plainly literal pattern: its test compares a topic's canonical key with ``key``."""
    canonical = resolver(base_url).canonical
    head = key + SEPARATOR

    def test(topic: str) -> bool:
        found = canonical(topic)
        return found is not None and found.startswith(head)

    def indexed_test(topic: str) -> bool:  # no regex to compile: a literal costs microseconds
        return topic.startswith(head)

    facts = UrlFacts("literal", key, key.count("/"), False, indexed_test)
    return Selector(text, SYNTAX, None, "", False, test, url=facts, base=base_url)


def _compile(
    text: str, base_url: str | None, budget: CostBudget | None = None
) -> tuple[_Program, bool]:
    """The package's pattern for ``text`` (absolute, else resolved against ``base_url``),
    and whether it was relative: the one held already, else compiled (its cost checked
    first) with the standard's ASCII classes."""
    program = _programs.get((text, None))
    if program is not None:
        return program, False
    if base_url is not None:
        program = _programs.get((text, base_url))
        if program is not None:
            return program, True
    cost = check_pattern_cost(text)
    if budget is not None:
        budget.spend(text, cost)
    source = standard(text)
    key: tuple[str, str | None] = (text, None)
    try:
        program = _Program(URLPattern(source), cost)
    except (ValueError, TypeError) as absolute_error:
        if base_url is None:
            if _is_relative(source):
                raise InvalidSelector(
                    f"relative URL pattern {text!r} needs a base URL", text, 1
                ) from absolute_error
            raise _refused(text, absolute_error) from absolute_error
        try:
            program, key = _Program(URLPattern(source, base_url), cost), (text, base_url)
        except (ValueError, TypeError) as error:
            raise _refused(text, error) from error
    _programs[key] = program
    return program, key[1] is not None


def _is_relative(text: str) -> bool:
    try:
        URLPattern(text, _PROBE_BASE)
    except (ValueError, TypeError):
        return False
    return True


def _refused(text: str, error: Exception) -> InvalidSelector:
    reason = str(error).splitlines()[0] if str(error) else type(error).__name__
    if isinstance(error, TypeError):  # the package's message for a string it cannot take
        reason = "not valid UTF-8 (a lone surrogate)"
    return InvalidSelector(f"invalid URL pattern {text!r}: {reason}", text, 1)


def _column_past_limit(text: str) -> int:
    """The 1-based column of the first character past :data:`PATTERN_LIMIT` bytes."""
    size = 0
    for column, char in enumerate(text, 1):
        size += len(char.encode("utf-8", "surrogatepass"))
        if size > PATTERN_LIMIT:
            return column
    return len(text) + 1


def _safe_test(program: _Program, base_url: str | None) -> Callable[[str], bool]:
    """The program's test on any string: relative topics against ``base_url``; a string the
    package cannot take (a lone surrogate is no UTF-8) matches nothing. Holds the program."""

    def safe(topic: str) -> bool:
        try:
            return program.pattern.test(topic, base_url)
        except TypeError:
            return False

    return safe


def _href_test(compiled: URLPattern) -> Callable[[str], bool]:
    """The package's test of an indexed form's href (it holds the compiled pattern, not its
    program: the program holds these facts, and a cycle would outlive its last holder)."""
    test = compiled.test

    def href_test(topic: str) -> bool:
        return test(topic[topic.index(SEPARATOR) + 1 :])

    return href_test


def _facts(program: _Program) -> UrlFacts:
    """Where an index files ``program``: by its literal key, origin, host or nowhere
    (worked out once per program: it reads every component, which is linear in its size)."""
    facts = program.facts
    if facts is None:
        facts = program.facts = _file(program)
    return facts


def _file(program: _Program) -> UrlFacts:
    compiled = program.pattern
    protocol = parts.literal(compiled.protocol)
    hostname = parts.literal(compiled.hostname)
    port = parts.literal(compiled.port)
    pathname = compiled.pathname
    segments = parts.fixed_slashes(pathname)
    test: Callable[[str], object] = _href_test(compiled)
    rest = (compiled.username, compiled.password, compiled.search, compiled.hash)
    anything_else = all(component == "*" for component in rest)
    if protocol is not None and hostname is not None and port is not None:
        path = parts.literal(pathname)
        if path is not None:
            key = key_of(protocol, hostname, port, path)
            return UrlFacts("literal", key, segments, not anything_else, test)
        origin = key_of(protocol, hostname, port, "")
        regex = parts.pathname_regex(pathname) if anything_else else None
        if regex is not None:  # one regular expression over the key's pathname, no URL parse
            pathname_rx = re.compile(f"{regex}{SEPARATOR}", re.DOTALL)
            test = functools.partial(pathname_rx.match, pos=len(origin))
        prefix = origin + parts.literal_prefix(pathname)
        return UrlFacts("origin", prefix, segments, True, test)
    if hostname is not None:
        key = host_key(hostname, parts.literal_prefix(pathname))
        return UrlFacts("host", key, segments, True, test)
    suffix = parts.literal_suffix(compiled.hostname)
    if suffix:
        return UrlFacts("host", suffix[::-1], segments, True, test)
    return UrlFacts("any", "", segments, True, test)
