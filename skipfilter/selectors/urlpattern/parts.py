"""What an index can learn from one component of a compiled URL Pattern without running it.

A compiled pattern states each component as a pattern string (``/books/:id``,
``*.example.com``, ``(\\d+)``) in the standard's own grammar: fixed text (``\\`` escapes a
special character), named groups ``:name``, regular-expression groups ``(...)``, ``*``,
``{...}`` groups and the modifiers ``? * +``. :func:`tokens` splits one into literal
characters and everything else; the facts below read that split:

- :func:`literal` -- the one string the component matches, if it matches one.
- :func:`literal_prefix`, :func:`literal_suffix` -- fixed text every match starts or ends with.
- :func:`fixed_slashes` -- how many ``/`` every matching pathname has, when that is fixed.

Each fact errs on the safe side (a shorter prefix, None), so an index that files a pattern
by it may test too many patterns, never too few.
"""

from __future__ import annotations

from collections.abc import Iterator

__all__ = ["fixed_slashes", "literal", "literal_prefix", "literal_suffix", "tokens"]

#: Tokens other than a literal character: what :func:`tokens` yields them as.
GROUP, NAME, OTHER = "group", "name", "other"


def _name_part(char: str) -> bool:
    return char in "$\u200c\u200d" or ("a" + char).isidentifier()


def tokens(pattern: str) -> Iterator[tuple[str, str]]:
    """``(kind, text)`` pairs: ``("char", c)`` for a literal character (escapes removed),
    ``("name", ":id")``, ``("group", "(...)")`` and ``("other", c)`` for ``* ? + { }``.

    ``pattern`` is a component of a compiled pattern, so it is well formed.
    """
    i, size = 0, len(pattern)
    while i < size:
        char = pattern[i]
        if char == "\\" and i + 1 < size:
            yield "char", pattern[i + 1]
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
            yield "char", char
            i += 1


def literal(pattern: str) -> str | None:
    """The only string ``pattern`` matches, or None if it has any group or wildcard."""
    out: list[str] = []
    for kind, text in tokens(pattern):
        if kind != "char":
            return None
        out.append(text)
    return "".join(out)


def literal_prefix(pattern: str) -> str:
    """Fixed text every match of ``pattern`` starts with.

    The character right before a group may be the group's own prefix (``/`` in
    ``/books/:id?`` is optional with ``:id``), so it is left out.
    """
    out: list[str] = []
    for kind, text in tokens(pattern):
        if kind != "char":
            return "".join(out[:-1])
        out.append(text)
    return "".join(out)


def literal_suffix(pattern: str) -> str:
    """Fixed text every match of ``pattern`` ends with: the characters after its last group."""
    out: list[str] = []
    for kind, text in tokens(pattern):
        if kind == "char":
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
    for kind, text in tokens(pathname):
        if kind == "char":
            slashes += text == "/"
        elif kind != NAME:
            return None
    return slashes
