"""What compiling a URL Pattern will cost, known before compiling it: :func:`pattern_cost`.

The ``urlpattern`` package builds one Rust ``regex`` program per component, holding the
GIL (so a thread would not spare the event loop), in time and memory about proportional
to the program's states. A state costs little for an ASCII character or class, more for a
class of many code points (``.``, ``[^/]``, ``\\s``: UTF-8 sequences of up to four bytes)
and most for a Unicode property (``\\p{L}``: hundreds of ranges), and counted repetition
copies what it repeats (``\\p{L}{150}``: 150 copies). So a pattern's cost is estimated in
*units* of about a microsecond of compile time (and about 300 bytes of program), from its
text alone: each atom's weight times the repetitions around it, summed over every group and
component, plus a fixed part for the eight components.

Weights were measured on the package (``benchmarks/hostile/urlpattern_hostile.py``) and err high:
an estimate is at least what a pattern costs, within a small factor, for the worst
patterns that script knows. A pattern past :data:`PATTERN_COST_LIMIT`, or a subscription
whose patterns together pass :data:`SUBSCRIPTION_COST_LIMIT`, is refused before anything
is compiled (:class:`~skipfilter.errors.PatternTooCostly`).
"""

from __future__ import annotations

import re
from typing import Final

from skipfilter.errors import PatternTooCostly
from skipfilter.selectors.urlpattern.groups import regex_groups

__all__ = [
    "BASE_COST",
    "PATTERN_COST_LIMIT",
    "SUBSCRIPTION_COST_LIMIT",
    "CostBudget",
    "check_pattern_cost",
    "pattern_cost",
    "regex_cost",
]

#: Units (about a microsecond of compile on this project's machines) one pattern may cost:
#: about 5 ms of event loop and 1.5 MB of program at most.
PATTERN_COST_LIMIT: Final = 5_000
#: Units the URL Patterns of one subscription (or one token's grants) may cost together,
#: beyond :data:`BASE_COST` each: 100 plain patterns cost about 3,000.
SUBSCRIPTION_COST_LIMIT: Final = 20_000
#: The fixed part of every compiled pattern (eight component programs), not counted
#: against :data:`SUBSCRIPTION_COST_LIMIT` (the matcher count bounds it).
BASE_COST: Final = 250

_ASCII: Final = 1  # a character or an ASCII class
_CODE_POINT: Final = 4  # one code point written as an escape: up to four UTF-8 bytes
_WIDE: Final = 20  # '.', a negated class, a range past ASCII, \s, \W, \D: many sequences
_PROPERTY: Final = 600  # \p{..}, \P{..}: up to hundreds of ranges (\p{L}: ~500 µs a copy)
_BOUNDARY: Final = 10
_NAMED: Final = _WIDE  # ':name' is '[^/]+?' (or '[^.]+?'), '*' is '.*'
# Escapes by cost (what groups.ascii_classes turned them into, for \w \d \W \D \b \B).
_ESCAPES: Final = {
    "p": _PROPERTY,
    "P": _PROPERTY,
    "s": _WIDE,
    "S": 2 * _WIDE,
    "W": _WIDE,
    "D": _WIDE,
    "b": _BOUNDARY,
    "B": _BOUNDARY,
    "x": _CODE_POINT,
    "u": _CODE_POINT,
    "U": _CODE_POINT,
}
_REPEAT_CAP: Final = 1_000_000  # past this one count says enough (and keeps ints small)
#: Units per squared capture group (``:name``, ``*``, ``(...)``): the cost of *matching*.
#: The package tests a topic with captures, and past a few dozen groups its engine keeps
#: a thread per group, each carrying every group's slots: 200 ``*`` took 261 ms on a 4 KiB
#: topic, 40 took 0.4 ms (benchmarks/hostile/urlpattern_hostile.py ``--match``).
_GROUP_PAIR: Final = 2
# An inline flag group that turns verbose mode on: (?x) (?ix) (?x:...) (?sx-i:...).
_FLAGS: Final = re.compile(r"\(\?([A-Za-z]*)(?:-[A-Za-z]*)?[:)]")
# What opens a capture group inside a regular-expression group: '(' not followed by '?',
# or a named one; counted over every character (an escaped or class one errs high).
_CAPTURE: Final = re.compile(r"\((?!\?)|\(\?P?<(?![=!])")


def _escape(source: str, i: int) -> tuple[int, int]:
    """(cost, end) of the escape at ``source[i] == '\\\\'``: ``\\p{L}``, ``\\x{10FFFF}``,
    ``\\u0041`` span past their letter."""
    letter = source[i + 1 : i + 2]
    end = i + 2
    if letter in ("p", "P", "x", "u", "U"):
        if source.startswith("{", end):
            close = source.find("}", end)
            end = len(source) if close < 0 else close + 1
        elif letter in "pP":
            end += 1  # \pL
        else:
            digits = {"x": 2, "u": 4, "U": 8}[letter]
            end += digits
    return _ESCAPES.get(letter, _ASCII), min(end, len(source))


def _class(source: str, i: int, folded: bool) -> tuple[int, int]:
    """(cost, end) of the character class opening at ``source[i] == '['`` (nested classes
    included): its items' costs summed, a negation or a range past ASCII as wide."""
    cost, j, size = 0, i + 1, len(source)
    if source.startswith("^", j):
        cost += _WIDE
        j += 1
    if source.startswith("]", j):
        cost += _ASCII
        j += 1
    while j < size:
        char = source[j]
        if char == "]":
            j += 1
            break
        if char == "[":
            inner, j = _class(source, j, folded)
            cost += inner
        elif char == "\\" and j + 1 < size:
            weight, j = _escape(source, j)
            cost += weight
        else:
            cost += _WIDE if folded and char.isalpha() else _ASCII
            j += 1
    return max(cost, _ASCII), j


def _counted(source: str, i: int) -> tuple[int, int] | None:
    """(most copies, end) of a counted repetition ``{n}``, ``{n,}`` or ``{n,m}`` at ``i``
    (``{n,}``: n + 1), or None when the brace is a literal one. White space around the
    numbers is dropped first: Rust's ``regex`` reads ``.{ 10484 }`` as ``.{10484}``, with
    or without the ``x`` flag."""
    close = source.find("}", i)
    if close < 0:
        return None
    inner = "".join(source[i + 1 : close].split())
    low, comma, high = inner.partition(",")
    if not low.isdigit() or (high and not high.isdigit()):
        return None
    most = int(high) if high else int(low) + (1 if comma else 0)
    return max(1, min(most, _REPEAT_CAP)), close + 1


def regex_cost(source: str) -> int:
    """The estimated units (see module) of one regular-expression group's ``source``.

    Alternatives add up; a quantifier multiplies what it follows (``+`` twice: its first
    copy and the loop; ``{m,n}``: n copies), stacked ones (``a{10}{10}``) multiply again.
    An ``i`` flag anywhere makes every letter a wide class (case folding adds code points).
    """
    folded = "(?" in source and any(
        "i" in flags.split(":")[0].split(")")[0] for flags in source.split("(?")[1:]
    )
    letter = _WIDE if folded else _ASCII
    # frames: [total of the finished items, cost of the last item] per open group
    frames: list[list[int]] = [[0, 0]]
    i, size = 0, len(source)
    while i < size:
        char = source[i]
        weight = -1  # an item's cost, or -1: no item (a quantifier, a group's edge)
        if char == "\\" and i + 1 < size:
            weight, i = _escape(source, i)
        elif char == "[":
            weight, i = _class(source, i, folded)
        elif char == "(":
            frames.append([0, 0])
            i += 1
            if source.startswith("?", i):  # (?:  (?i)  (?<name>  (?P<name>
                end = i + 1
                while (
                    end < size
                    and source[end] not in ":)"
                    and not (source[end] == ">" and source[i + 1 : i + 2] in ("<", "P"))
                ):
                    end += 1
                i = end + 1 if end < size and source[end] in ":>" else i + 1
        elif char == ")":
            inner = frames.pop() if len(frames) > 1 else [0, 0]
            weight = inner[0] + inner[1]
            i += 1
        elif char in "*+?":
            frame = frames[-1]
            if char == "+":
                frame[0] += frame[1]  # one copy, then the loop
            i += 1
            if source.startswith("?", i):  # lazy
                i += 1
        elif char == "{" and (counted := _counted(source, i)) is not None:
            most, i = counted
            frame = frames[-1]
            frame[1] = min(frame[1] * most, _REPEAT_CAP * _PROPERTY)
        elif char == "|":
            frame = frames[-1]
            frame[0] += frame[1]
            frame[1] = 0
            i += 1
        elif char in "^$":
            i += 1
        else:
            weight = _WIDE if char == "." else letter if char.isalpha() else _ASCII
            i += 1
        if weight >= 0:
            frame = frames[-1]
            frame[0] += frame[1]
            frame[1] = weight
    while len(frames) > 1:  # an unclosed group: the package refuses it, but count it
        inner = frames.pop()
        frames[-1][1] += inner[0] + inner[1]
    return frames[0][0] + frames[0][1]


def pattern_cost(text: str) -> int:
    """The estimated units of compiling and matching URL Pattern ``text`` (constructor-string
    form), :data:`BASE_COST` included: its groups' :func:`regex_cost`, a wide class for each
    named group and ``*`` (twice with a ``+`` or ``*`` modifier), a unit per other character,
    and :data:`_GROUP_PAIR` units per squared capture group (matching). Raises
    :class:`~skipfilter.errors.PatternTooCostly` for a group that turns on the ``x`` flag,
    which this estimate does not read (JavaScript, the standard's dialect, has no such
    flag). Runtime: O(len(text))."""
    cost, done, captures = BASE_COST, 0, 0
    groups = list(regex_groups(text))
    bounds = [*groups, (len(text) + 1, len(text) + 1)]
    for start, end in bounds:
        outside = text[done : max(start - 1, done)]
        cost += _outside_cost(outside, text[start - 1 : start] == "(" and start <= len(text))
        captures += _outside_captures(outside, start <= len(text))
        if start <= len(text):
            source = text[start:end]
            verbose = next((f for f in _FLAGS.finditer(source) if "x" in f.group(1)), None)
            if verbose is not None:
                raise PatternTooCostly(
                    f"URL pattern {text[:80]!r}: the regular-expression flag {verbose.group()!r} "
                    "turns on verbose mode (x), which JavaScript regular expressions (the "
                    "URL Pattern standard's) do not have and the cost estimate "
                    "(PATTERN_COST_LIMIT) cannot read: refused as past the limit",
                    text,
                    PATTERN_COST_LIMIT + 1,
                    PATTERN_COST_LIMIT,
                )
            group = regex_cost(source)
            after = text[end + 1 : end + 2]
            cost += group * 2 if after in ("+", "*") else group
            captures += 1 + len(_CAPTURE.findall(source))
        done = end + 1
    return cost + _GROUP_PAIR * captures * captures


_OUTSIDE: Final = re.compile(r"\\.?|:[\w$]+[+*]?|\*|[^\\:*]+|:")


def _outside_captures(text: str, before_group: bool) -> int:
    """Capture groups of constructor-string text between regular-expression groups: each
    ``:name`` not naming the group that follows (that group counts itself) and each ``*``."""
    count = 0
    for found in _OUTSIDE.finditer(text):
        item = found.group()
        named = item[0] == ":" and len(item) > 1
        if item == "*" or (named and not (before_group and found.end() == len(text))):
            count += 1
    return count


def _outside_cost(text: str, before_group: bool) -> int:
    """Units of constructor-string text between groups: names, wildcards, literals."""
    cost = 0
    for found in _OUTSIDE.finditer(text):
        item = found.group()
        first = item[0]
        if first == "\\":
            cost += _ASCII
        elif first == ":" and len(item) > 1:
            if found.end() == len(text) and before_group:
                cost += _ASCII  # the name of a regular-expression group: the group counts
            else:
                cost += _NAMED * (2 if item[-1] in "+*" else 1)
        elif first == "*":
            cost += _NAMED
        else:
            cost += len(item) * _ASCII
    return cost


def check_pattern_cost(text: str) -> int:
    """:func:`pattern_cost` of ``text``; raises :class:`~skipfilter.errors.PatternTooCostly`
    past :data:`PATTERN_COST_LIMIT`."""
    cost = pattern_cost(text)
    if cost > PATTERN_COST_LIMIT:
        raise PatternTooCostly(
            f"URL pattern {text[:80]!r} would cost about {cost:,} units to compile, "
            f"more than the limit of {PATTERN_COST_LIMIT:,} per pattern "
            "(PATTERN_COST_LIMIT: Unicode classes like \\p{L}, '.' or [^/] repeated "
            "many times cost the most)",
            text,
            cost,
            PATTERN_COST_LIMIT,
        )
    return cost


class CostBudget:
    """The units one subscription (or one token's grants) may still spend compiling URL
    Patterns: :data:`SUBSCRIPTION_COST_LIMIT` (or ``limit``) beyond :data:`BASE_COST` each.
    Patterns held already (nothing to compile) and plainly literal ones spend nothing."""

    __slots__ = ("limit", "spent")

    def __init__(self, limit: int = SUBSCRIPTION_COST_LIMIT) -> None:
        self.limit = limit
        self.spent = 0

    def spend(self, text: str, cost: int) -> None:
        """Charge ``cost`` units for ``text``; raises :class:`~skipfilter.errors.PatternTooCostly`
        (nothing charged) when that would pass the limit."""
        spent = self.spent + max(0, cost - BASE_COST)
        if spent > self.limit:
            raise PatternTooCostly(
                f"URL patterns that would cost about {spent:,} units to compile together "
                f"(at {text[:60]!r}), more than the limit of {self.limit:,} per "
                "subscription (SUBSCRIPTION_COST_LIMIT)",
                text,
                spent,
                self.limit,
            )
        self.spent = spent
