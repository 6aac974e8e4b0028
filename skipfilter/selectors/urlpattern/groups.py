"""A URL Pattern's regular-expression groups, given the standard's ASCII classes.

The URL Pattern standard compiles a group like ``(\\w+)`` as a JavaScript regular
expression with the ``u`` (or ``v``) flag, where ``\\w``, ``\\d`` and ``\\b`` (and
``\\W``, ``\\D``, ``\\B``) are ASCII; ``\\s`` stays Unicode white space. The ``urlpattern``
package hands the group to Rust's ``regex``, where they are Unicode: ``\\w{150}`` becomes a
program of ten megabytes that takes a third of a second to build. :func:`standard` writes
each group's classes out in ASCII before the package sees it, so the package compiles what
the standard means (and at its cost: microseconds).

- :func:`regex_groups` -- where a constructor string's regular-expression groups are.
- :func:`ascii_classes` -- one group's source with ASCII ``\\w \\d \\b \\W \\D \\B``.
- :func:`standard` -- a constructor string with every group rewritten so.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Final

__all__ = ["ascii_classes", "regex_groups", "standard"]

_WORD: Final = "0-9A-Za-z_"
# The complements, as ranges a character class can hold (a class cannot hold a negated class
# in every dialect, and Rust's and Python's both read these): every code point but the above.
_NOT_WORD: Final = r"\x00-\x2f\x3a-\x40\x5b-\x5e\x60\x7b-\U0010FFFF"
_NOT_DIGIT: Final = r"\x00-\x2f\x3a-\U0010FFFF"

_OPEN: Final = re.compile(r"[\\(]")  # what may start a group, or escape the next character
_INNER: Final = re.compile(r"[\\()]")

#: What each class escape becomes outside a character class ...
_OUTSIDE: Final = {
    "w": f"[{_WORD}]",
    "d": "[0-9]",
    "W": f"[^{_WORD}]",
    "D": "[^0-9]",
    "b": r"(?-u:\b)",
    "B": r"(?-u:\B)",
}
#: ... and inside one (``\b`` there is no boundary: left to the package, which refuses it).
_INSIDE: Final = {"w": _WORD, "d": "0-9", "W": _NOT_WORD, "D": _NOT_DIGIT}


def regex_groups(text: str) -> Iterator[tuple[int, int]]:
    """``(start, end)`` of each regular-expression group's source in constructor string
    ``text`` (between its parentheses), as the standard's tokenizer finds them: ``(`` opens
    one anywhere unescaped, ``\\`` escapes the next character inside, and nested ``(``
    count until the matching ``)`` (an unclosed group runs to the end: the package refuses it).
    """
    i, size = 0, len(text)
    while (found := _OPEN.search(text, i)) is not None:
        i = found.start()
        if text[i] == "\\":
            i += 2
            continue
        depth, end = 1, i + 1
        while (inner := _INNER.search(text, end)) is not None:
            end = inner.start()
            char = text[end]
            if char == "\\":
                end += 2
                continue
            if char == "(":
                depth += 1
            else:
                depth -= 1
                if not depth:
                    break
            end += 1
        else:
            end = size
        end = min(end, size)
        yield i + 1, end
        i = end + 1


def ascii_classes(source: str) -> str:
    """``source`` (one group's regular expression) with ``\\w \\d \\b \\W \\D \\B`` written
    as the ASCII classes and boundaries they are in JavaScript's ``u`` mode, inside
    character classes (``[\\w-]``, ``[^\\D]``) too; every other character as it was."""
    if "\\" not in source:
        return source
    out: list[str] = []
    i, size, depth = 0, len(source), 0  # depth: character classes open (Rust nests them)
    while i < size:
        char = source[i]
        if char == "\\" and i + 1 < size:
            escaped = source[i + 1]
            out.append((_INSIDE if depth else _OUTSIDE).get(escaped, source[i : i + 2]))
            i += 2
            continue
        if char == "[":
            depth += 1
            out.append(char)
            i += 1
            if source.startswith("^", i):
                out.append("^")
                i += 1
            if source.startswith("]", i):  # a ']' first in a class is a literal one
                out.append("]")
                i += 1
            continue
        if char == "]" and depth:
            depth -= 1
        out.append(char)
        i += 1
    return "".join(out)


def standard(text: str) -> str:
    """Constructor string ``text`` with each regular-expression group's classes in ASCII
    (:func:`ascii_classes`): what the standard means, for the ``urlpattern`` package."""
    if "\\" not in text or "(" not in text:
        return text
    out: list[str] = []
    done = 0
    for start, end in regex_groups(text):
        out += [text[done:start], ascii_classes(text[start:end])]
        done = end
    out.append(text[done:])
    return "".join(out)
