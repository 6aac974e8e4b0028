"""What an index can learn from one component of a compiled URL Pattern without running it.

A compiled pattern states each component as a pattern string (``/books/:id``,
``*.example.com``, ``(\\d+)``) in the standard's own grammar: fixed text (``\\`` escapes a
special character), named groups ``:name``, regular-expression groups ``(...)``, ``*``,
``{...}`` groups and the modifiers ``? * +``. :func:`tokens` splits one into literal
characters and everything else; the facts below read that split:

- :func:`literal` -- the one string the component matches, if it matches one.
- :func:`literal_prefix`, :func:`literal_suffix` -- fixed text every match starts or ends with.
- :func:`fixed_slashes` -- how many ``/`` every matching pathname has, when that is fixed.
- :func:`pathname_regex` -- a Python regular expression for the simplest pathnames.

Each fact errs on the safe side (a shorter prefix, None), so an index that files a pattern
by it may test too many patterns, never too few.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterator
from typing import Final

__all__ = [
    "MAX_OPTIONAL",
    "fixed_slashes",
    "literal",
    "literal_prefix",
    "literal_suffix",
    "pathname_regex",
    "tokens",
]

#: The kinds of token :func:`tokens` yields: a literal character, written plainly or escaped
#: (only a plain ``/`` can be a group's prefix), and the rest.
CHAR, ESCAPED, GROUP, NAME, OTHER = "char", "escaped", "group", "name", "other"
_LITERAL: Final = (CHAR, ESCAPED)


def _name_part(char: str) -> bool:
    return char in "$\u200c\u200d" or ("a" + char).isidentifier()


def tokens(pattern: str) -> Iterator[tuple[str, str]]:
    """``(kind, text)`` pairs: ``("char", c)`` for a literal character, ``("escaped", c)``
    for an escaped one (backslash removed), ``("name", ":id")``, ``("group", "(...)")`` and
    ``("other", c)`` for ``* ? + { }``.

    ``pattern`` is a component of a compiled pattern, so it is well formed.
    """
    i, size = 0, len(pattern)
    while i < size:
        char = pattern[i]
        if char == "\\" and i + 1 < size:
            yield ESCAPED, pattern[i + 1]
            i += 2
        elif char == ":":
            end = i + 1
            while end < size and _name_part(pattern[end]):
                end += 1
            yield NAME, pattern[i:end]
            i = end
        elif char == "(":
            depth, end = 1, i + 1
            while end < size and depth:
                if pattern[end] == "\\":
                    end += 1
                elif pattern[end] == "(":
                    depth += 1
                elif pattern[end] == ")":
                    depth -= 1
                end += 1
            yield GROUP, pattern[i:end]
            i = end
        elif char in "*?+{}":
            yield OTHER, char
            i += 1
        else:
            yield CHAR, char
            i += 1


@functools.lru_cache(maxsize=16)
def _tokens(pattern: str) -> tuple[tuple[str, str], ...]:
    """:func:`tokens`, remembered: filing one pattern reads its pathname four times."""
    return tuple(tokens(pattern))


def literal(pattern: str) -> str | None:
    """The only string ``pattern`` matches, or None if it has any group or wildcard."""
    out: list[str] = []
    for kind, text in _tokens(pattern):
        if kind not in _LITERAL:
            return None
        out.append(text)
    return "".join(out)


def literal_prefix(pattern: str) -> str:
    """Fixed text every match of ``pattern`` starts with.

    The character right before a named group, a regexp or ``*`` may be that part's own
    prefix (``/`` in ``/books/:id?`` is optional with ``:id``), so it is left out; before
    ``{`` it is fixed text.
    """
    out: list[str] = []
    for kind, text in _tokens(pattern):
        if kind not in _LITERAL:
            return "".join(out if (kind, text) == (OTHER, "{") else out[:-1])
        out.append(text)
    return "".join(out)


def literal_suffix(pattern: str) -> str:
    """Fixed text every match of ``pattern`` ends with: the characters after its last group."""
    out: list[str] = []
    for kind, text in _tokens(pattern):
        if kind in _LITERAL:
            out.append(text)
        else:
            out.clear()
    return "".join(out)


def fixed_slashes(pathname: str) -> int | None:
    """How many ``/`` every pathname matching ``pathname`` has, or None when that varies.

    Fixed when the pattern is literal characters and plain named groups (a ``:name``
    matches one segment, ``[^/]+``): no regular expression, wildcard, ``{}`` or modifier.
    """
    slashes = 0
    for kind, text in _tokens(pathname):
        if kind in _LITERAL:
            slashes += text == "/"
        elif kind != NAME:
            return None
    return slashes


#: The most optional items (``/:id?``, ``{/:id}?``, ``{.json}?``) a pathname regex may hold:
#: Python's ``re`` then tries at most 2**3 = 8 ways through a topic.
MAX_OPTIONAL: Final = 3

_SEGMENT: Final = "[^/]+"  # what a named group matches in a pathname: one segment
_OPTIONAL_SEGMENT: Final = f"(?:/{_SEGMENT})?"


def pathname_regex(pathname: str) -> str | None:
    """A Python regular expression matching the canonical pathnames ``pathname`` matches,
    for the commonest shapes only; None for any other.

    The shapes: fixed text; a named group (``:id``, one segment) followed by ``/`` or the
    end; an optional segment (``/:id?`` or ``{/:id}?``) followed by ``/`` or the end;
    optional fixed text (``{.json}?``); a trailing ``*`` (anything). No custom regexps,
    whose translation from the standard's JavaScript regular expressions is not obvious,
    and no repeats.

    Python's ``re`` backtracks: each optional item is a choice it may retry, so ``k`` of
    them make up to ``2**k`` ways through (150 ``/:a?`` took seconds on one topic). With at
    most :data:`MAX_OPTIONAL` of them, and every ``[^/]+`` ending at a ``/`` or the end, a
    match costs at most ``2**MAX_OPTIONAL`` linear passes; a pathname with more gets None
    (the package's linear-time Rust engine tests it instead).
    """
    items = list(_tokens(pathname))
    if sum(item == (OTHER, "?") for item in items) > MAX_OPTIONAL:
        return None  # the only '?' tokens are modifiers: each an optional item, or no shape
    out: list[str] = []
    i, size = 0, len(items)

    def at_boundary(j: int) -> bool:  # the end, or a '/' next
        return j == size or (items[j][1] == "/" and items[j][0] in _LITERAL)

    while i < size:
        kind, text = items[i]
        if kind in _LITERAL:
            out.append(re.escape(text))
            i += 1
        elif (
            kind == NAME
            and items[i + 1 : i + 2] == [(OTHER, "?")]
            and items[i - 1 : i] == [(CHAR, "/")]
        ):
            if not at_boundary(i + 2):
                return None
            out[-1] = _OPTIONAL_SEGMENT
            i += 2
        elif kind == NAME:
            if not at_boundary(i + 1):
                return None
            out.append(_SEGMENT)
            i += 1
        elif (kind, text) == (OTHER, "{"):
            close = _braced(items, i)
            if close is None:
                return None
            inner = items[i + 1 : close]
            if [k for k, _ in inner] == [CHAR, NAME] and inner[0][1] == "/":
                if not at_boundary(close + 2):
                    return None
                out.append(_OPTIONAL_SEGMENT)
            elif inner and all(k in _LITERAL for k, _ in inner):
                out.append(f"(?:{re.escape(''.join(t for _, t in inner))})?")
            else:
                return None
            i = close + 2
        elif (kind, text) == (OTHER, "*") and i == size - 1:
            out.append(".*")
            i += 1
        else:
            return None
    return "".join(out)


def _braced(items: list[tuple[str, str]], start: int) -> int | None:
    """The index of the ``}`` closing the ``{`` at ``start`` if a ``?`` follows it (an
    optional group, the only braces :func:`pathname_regex` takes), else None."""
    for j in range(start + 1, len(items)):
        if items[j][0] == OTHER:
            if items[j] == (OTHER, "}") and items[j + 1 : j + 2] == [(OTHER, "?")]:
                return j
            return None
    return None
