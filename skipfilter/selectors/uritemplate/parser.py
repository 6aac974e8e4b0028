"""RFC 6570 URI templates as topic selectors: parse a template, match topics against it.

Mercure lets a subscriber select topics with a URI template: the selector matches a
topic when some values of its variables expand to that topic. No PyPI package does
matching, so this module parses templates (levels 1 to 4: every operator
``+ # . / ; ? &``, the explode modifier ``*``, the prefix modifier ``:n``) and
compiles each one into an anchored regular expression.

Contents:

* :func:`parse` -- template text to :class:`Template`, or :class:`InvalidSelector`.
* :func:`is_template` -- Mercure's rule for trying a selector as a template.
* :class:`Template` -- the parsed template, its regex and :meth:`Template.matches`.

>>> t = parse("https://example.com/books/{id}{?fields}")
>>> t.matches("https://example.com/books/42?fields=title,author")
True
>>> t.matches("https://example.com/books/4/2")
False

What "matches" means, exactly
-----------------------------
A variable value is a string, a non-empty list of strings, a non-empty associative
array of strings, or undefined; the regex accepts exactly the expansions of RFC 6570
appendix A over all such assignments, with these choices where the RFC is silent:

* Percent-encoding is uppercase and in UTF-8 (RFC 3986 section 2.1), so ``{x}``
  matches ``%2F`` but not ``%2f``, and never a triplet that encodes an unreserved
  character (``%41``) or is not valid UTF-8. ``+`` and ``#`` expansions pass any
  triplet of the value through, so they match any ``%XX``, in either case.
* A prefix ``:n`` counts characters of the value: an encoded character is one,
  however many triplets it takes, and so is a triplet passed through by ``+``/``#``.
  Prefixes apply to strings only (RFC 6570 section 2.4.1).
* An empty list or associative array is undefined. A list holding one empty string
  is defined and non-empty: ``{;x}`` may give ``;x=`` as well as ``;x``.
* Literal text matches itself verbatim, non-ASCII characters included (the RFC would
  pct-encode those; topics are IRIs, and :attr:`Template.literal_prefix` must be a
  prefix of every match).

Approximation: each occurrence of a variable is matched independently, as if the
variables were distinct, so ``/{a}/{a}`` matches ``/x/y`` and ``{a:2}{a}`` matches
``xyz``. Binding repeated occurrences needs relations between differently encoded
forms that a regex cannot express in general; every true match is still found.

Matching time
-------------
:meth:`Template.matches` (and :attr:`Template.matcher`) run in O(len(topic) x
size(template)) for every template, so a subscriber cannot stall a hub with a
hostile selector. Two matchers give that guarantee:

* ``re`` on :attr:`Template.pattern`, when the template is in a class proven to
  backtrack linearly (:attr:`Template.linear_regex`; the argument is in
  ``_uritemplate_regex.regex_is_linear``): every expression has one parse of any
  span, and nothing it can produce may start what follows it (``/books/{id}``,
  ``/users/{id}{?fields}``, ``{+path}``), except that the last expression may be
  followed by literals (``/{id}.json``, ``/x/{+path}/here``). The common case stays
  one call into C.
* Otherwise an automaton simulation of the same regex (``_uritemplate_nfa``): a
  Thompson NFA run as a lazily built, size-capped DFA, linear in the topic whatever
  the template's shape, and about a tenth of the speed of ``re`` on short topics.

The regex itself stays exact, with rules that keep common shapes fast and leave the
language unchanged (the automaton reads them as plain groups, and a differential test
checks that both agree):

* Adjacent expressions collapse where one absorbs the others (``{a}{b}{c}`` is one
  loop, ``{+path}{?q}`` is ``{+path}``).
* A value loop is possessive when nothing that may follow it could continue it.
* A literal holding a character that nothing since the previous such literal can
  produce (``/`` after ``{id}``) closes an atomic group: that stretch has one split.
* A variable, a literal drawn from its own alphabet, then another variable at least
  as wide (``{a}-{b}``) commits to the leftmost occurrence of the literal, which is
  exact because the second variable absorbs whatever the first would have taken.

Outside the linear class, ``pattern`` may backtrack polynomially or, for chains of
``+``/``#`` prefixes (``{a}x{+b:3}/...``), exponentially: use :attr:`Template.matcher`,
never ``pattern`` directly, on untrusted templates.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field

from skipfilter.errors import InvalidSelector
from skipfilter.selectors.uritemplate.nfa import NFAMatcher
from skipfilter.selectors.uritemplate.regex import (
    Expression,
    Piece,
    VarSpec,
    regex_is_linear,
    template_regex,
)

__all__ = ["Template", "is_template", "parse"]

_OPERATORS = frozenset("+#./;?&")
_RESERVED_OPERATORS = frozenset("=,!@|")
_HEX = frozenset("0123456789abcdefABCDEF")
_VARCHAR = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_")
# Characters allowed outside expressions (RFC 6570 section 2.1), ASCII part; "%"
# only as a pct-encoded triplet.
_LITERAL_ASCII = frozenset(
    "!#$&()*+,-./0123456789:;=?@ABCDEFGHIJKLMNOPQRSTUVWXYZ[]_abcdefghijklmnopqrstuvwxyz~"
)
# ucschar and iprivate (RFC 3987): the non-ASCII characters a literal may hold.
_NON_ASCII_RANGES = (
    (0xA0, 0xD7FF), (0xE000, 0xFDCF), (0xFDF0, 0xFFEF),
    (0x10000, 0x1FFFD), (0x20000, 0x2FFFD), (0x30000, 0x3FFFD), (0x40000, 0x4FFFD),
    (0x50000, 0x5FFFD), (0x60000, 0x6FFFD), (0x70000, 0x7FFFD), (0x80000, 0x8FFFD),
    (0x90000, 0x9FFFD), (0xA0000, 0xAFFFD), (0xB0000, 0xBFFFD), (0xC0000, 0xCFFFD),
    (0xD0000, 0xDFFFD), (0xE1000, 0xEFFFD), (0xF0000, 0xFFFFD), (0x100000, 0x10FFFD),
)  # fmt: skip
_MAX_PREFIX = 9999
_MAX_EXPRESSIONS = 256  # keeps the compiled regex (and compile time) bounded


@dataclass(frozen=True, slots=True)
class Template:
    """A parsed URI template; immutable, safe to share between threads.

    ``literal_prefix`` is the literal text before the first expression, a prefix of
    every matching topic (an index can bucket templates by it). ``variables`` lists
    the variable names in order of first appearance. ``pattern`` is anchored: its
    ``match`` and ``fullmatch`` agree; it is exact, but linear-time only when
    ``linear_regex`` is true. ``matcher`` is the exact test to call in hot loops:
    truthy when the topic matches, O(len(topic) x size(template)) always (it is
    ``pattern.match`` when ``linear_regex``, the automaton otherwise).
    """

    text: str
    literal_prefix: str
    variables: tuple[str, ...]
    pattern: re.Pattern[str]
    linear_regex: bool
    matcher: Callable[[str], object] = field(compare=False, repr=False)

    def matches(self, uri: str) -> bool:
        """True when some variable values expand to ``uri``; thread-safe.

        Runtime complexity: O(len(uri) x size(template)) for every template (module
        docstring, "Matching time").
        """
        return bool(self.matcher(uri))


def is_template(text: str) -> bool:
    """True when ``text`` contains ``{`` (Mercure tries such selectors as templates)."""
    return "{" in text


def parse(text: str) -> Template:
    """Parse ``text`` as an RFC 6570 template and compile its matcher.

    Raises :class:`InvalidSelector` naming the 1-based column of the first problem.
    Runtime complexity: O(len(text)) to parse; compiling the matcher is linear in the
    size of the regex (prefixes ``:n`` of up to a few characters are unrolled).
    """
    pieces = _Parser(text).pieces()
    literal_prefix = pieces[0] if pieces and isinstance(pieces[0], str) else ""
    names: dict[str, None] = {}
    for p in pieces:
        if isinstance(p, Expression):
            names.update((s.name, None) for s in p.varspecs)
    source = template_regex(pieces)
    pattern = re.compile(source)
    if regex_is_linear(pieces):
        return Template(text, literal_prefix, tuple(names), pattern, True, pattern.match)
    matcher = NFAMatcher(template_regex(pieces, plain=True)).match
    return Template(text, literal_prefix, tuple(names), pattern, False, matcher)


def _allowed_non_ascii(c: str) -> bool:
    o = ord(c)
    return any(lo <= o <= hi for lo, hi in _NON_ASCII_RANGES)


class _Parser:
    """A single left-to-right pass over the template text; O(len(text))."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.i = 0

    def fail(self, problem: str, index: int) -> InvalidSelector:
        shown = self.text if len(self.text) <= 120 else self.text[:117] + "..."
        column = index + 1
        return InvalidSelector(f"{problem} at column {column} in {shown!r}", self.text, column)

    def pieces(self) -> list[Piece]:
        out: list[Piece] = []
        literal: list[str] = []
        text, n = self.text, len(self.text)
        while self.i < n:
            c = text[self.i]
            if c == "{":
                if literal:
                    out.append("".join(literal))
                    literal = []
                out.append(self.expression())
                if len(out) > 2 * _MAX_EXPRESSIONS:
                    raise self.fail(f"more than {_MAX_EXPRESSIONS} expressions", self.i - 1)
            elif c == "}":
                raise self.fail("unmatched '}'", self.i)
            elif c == "%":
                triplet = text[self.i : self.i + 3]
                if len(triplet) < 3 or not set(triplet[1:]) <= _HEX:
                    raise self.fail("'%' not followed by two hex digits", self.i)
                literal.append(triplet)
                self.i += 3
            elif c in _LITERAL_ASCII or (c >= "\x80" and _allowed_non_ascii(c)):
                literal.append(c)
                self.i += 1
            else:
                raise self.fail(f"character {c!r} not allowed in a URI template", self.i)
        if literal:
            out.append("".join(literal))
        n_expr = sum(isinstance(p, Expression) for p in out)
        if n_expr > _MAX_EXPRESSIONS:
            raise self.fail(f"more than {_MAX_EXPRESSIONS} expressions", len(text) - 1)
        return out

    def expression(self) -> Expression:
        text, n = self.text, len(self.text)
        start = self.i
        self.i += 1
        if self.i >= n:
            raise self.fail("unclosed '{'", start)
        op = ""
        c = text[self.i]
        if c == "}":
            raise self.fail("empty expression", start)
        if c in _OPERATORS:
            op = c
            self.i += 1
        elif c in _RESERVED_OPERATORS:
            raise self.fail(f"reserved operator {c!r}", self.i)
        specs: list[VarSpec] = []
        while True:
            specs.append(self.varspec(start))
            if self.i >= n:
                raise self.fail("unclosed '{'", start)
            c = text[self.i]
            self.i += 1
            if c == "}":
                return Expression(op, tuple(specs))
            if c != ",":
                raise self.fail(f"unexpected {c!r} in expression", self.i - 1)

    def varspec(self, start: int) -> VarSpec:
        text, n = self.text, len(self.text)
        begin = self.i
        while True:  # varchar *( ["."] varchar )
            if self.i >= n:
                raise self.fail("unclosed '{'", start)
            c = text[self.i]
            if c in _VARCHAR:
                self.i += 1
            elif c == "%":
                if self.i + 3 > n or not set(text[self.i + 1 : self.i + 3]) <= _HEX:
                    raise self.fail("'%' not followed by two hex digits", self.i)
                self.i += 3
            elif c == "{":
                raise self.fail("'{' inside an expression", self.i)
            elif self.i > begin:  # just after a "."
                raise self.fail("variable name ends with '.'", self.i - 1)
            elif c in ",}:*":
                raise self.fail("missing variable name", self.i)
            else:
                raise self.fail(f"{c!r} not allowed in a variable name", self.i)
            if self.i < n and text[self.i] == ".":
                self.i += 1
                continue
            if self.i < n and (text[self.i] in _VARCHAR or text[self.i] == "%"):
                continue
            break
        name = text[begin : self.i]
        if self.i < n and text[self.i] == "*":
            self.i += 1
            return VarSpec(name, explode=True)
        if self.i < n and text[self.i] == ":":
            self.i += 1
            digits_at = self.i
            while self.i < n and text[self.i].isascii() and text[self.i].isdigit():
                self.i += 1
            digits = text[digits_at : self.i]
            if not digits or digits[0] == "0" or len(digits) > 4:
                raise self.fail("prefix length must be 1 to 9999", digits_at)
            return VarSpec(name, prefix=int(digits))
        return VarSpec(name)
