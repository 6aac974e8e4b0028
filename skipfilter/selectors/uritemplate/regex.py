"""Compile a parsed RFC 6570 URI template into a regular expression.

The regex matches exactly the strings that some assignment of variable values
(string, non-empty list, non-empty associative array, or undefined) expands to,
following the expansion algorithm of RFC 6570 appendix A. The approximations
and the backtracking argument are documented in :mod:`skipfilter.selectors.uritemplate`.

Private module: :mod:`skipfilter.selectors.uritemplate` is the public face.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

# --- the parsed form ------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class VarSpec:
    """One ``varname[:prefix|*]`` of an expression."""

    name: str
    explode: bool = False
    prefix: int | None = None


@dataclass(frozen=True, slots=True)
class Expression:
    """One ``{op varspec,...}``; ``op`` is ``""`` for simple string expansion."""

    op: str
    varspecs: tuple[VarSpec, ...]


Piece = str | Expression  # a literal run (already validated) or an expression

# --- character sets, for deciding where a loop may be possessive ------------------------


@dataclass(frozen=True, slots=True)
class Chars:
    """A set of characters that may come next; ``end`` stands for the end of the topic."""

    ascii: frozenset[str] = frozenset()
    other: bool = False  # any non-ASCII character
    end: bool = False

    def __or__(self, other: Chars) -> Chars:
        return Chars(self.ascii | other.ascii, self.other or other.other, self.end or other.end)

    def overlaps(self, other: Chars) -> bool:
        """True when some character (or the end) is in both sets."""
        return bool(self.ascii & other.ascii) or (self.other and other.other)


def chars(text: str) -> Chars:
    """The set of the characters of ``text``."""
    return Chars(frozenset(c for c in text if c < "\x80"), any(c >= "\x80" for c in text))


END = Chars(end=True)
UNRESERVED = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~"
RESERVED = ":/?#[]@!$&'()*+,;="

# --- value tokens ------------------------------------------------------------------------
# A "token" is what one character of a variable value becomes after expansion.

_CONT = "%[89AB][0-9A-F]"
# UTF-8 of one character of two to four octets, uppercase triplets, no surrogates.
_MB_TAIL = (
    f"(?:C[2-9A-F]|D[0-9A-F]){_CONT}|E0%[AB][0-9A-F]{_CONT}|E[1-9A-CEF]{_CONT}{_CONT}"
    f"|ED%[89][0-9A-F]{_CONT}|F0%[9AB][0-9A-F]{_CONT}{_CONT}|F[1-3]{_CONT}{_CONT}{_CONT}"
    f"|F4%8[0-9A-F]{_CONT}{_CONT}"
)
# One ASCII octet that is not unreserved (so expansion must encode it).
_ASCII_ENCODED_TAIL = "[01][0-9A-F]|2[0-9A-CF]|3[A-F]|40|5[B-E]|60|7[B-DF]"
_UNRES_CLASS = r"A-Za-z0-9\-._~"
_RES_CLASS = r":/?#\[\]@!$&'()*+,;="

# Unreserved-only expansion: an unreserved character, or a pct-encoded character that
# is not unreserved. Tokenisation of a matching string is unique.
U_TOKEN = f"[{_UNRES_CLASS}]|%(?:{_ASCII_ENCODED_TAIL}|{_MB_TAIL})"
U_START = chars(UNRESERVED + "%")
# The same without ".", for splitting label expansions deterministically.
U_TOKEN_NO_DOT = f"[A-Za-z0-9\\-_~]|%(?:{_ASCII_ENCODED_TAIL}|{_MB_TAIL})"
U_START_NO_DOT = chars(UNRESERVED.replace(".", "") + "%")
# Reserved expansion ("+", "#"): unreserved, reserved, or any pct-encoded triplet
# (triplets in the value pass through unchanged, in either case).
R_TOKEN = f"[{_UNRES_CLASS}{_RES_CLASS}]|%[0-9A-Fa-f]{{2}}"
R_START = chars(UNRESERVED + RESERVED + "%")
# For counting a prefix in reserved expansion: an encoded multi-octet character is one
# character, and so is a passed-through triplet.
_R_PREFIX_TOKEN = f"(?>[{_UNRES_CLASS}{_RES_CLASS}]|%(?:{_MB_TAIL})|%[0-9A-Fa-f]{{2}})"
_TRIPLET = "%[0-9A-Fa-f]{2}"

_U_STRING = re.compile(f"(?:{U_TOKEN})*")


def loop(token: str, start: Chars, follow: Chars, lo: int = 0, hi: int | None = None) -> str:
    """``token`` repeated ``lo..hi`` times; possessive when nothing that may follow
    could continue it, which keeps backtracking linear without changing the language."""
    q = f"{{{lo},{hi}}}"
    if hi is None:
        q = "*" if lo == 0 else "+" if lo == 1 else f"{{{lo},}}"
    possessive = "" if start.overlaps(follow) else "+"
    if possessive and hi is None:
        token = _runs(token)
    return f"(?:{token}){q}{possessive}"


# A token that starts with a one-character class: ``[...]|rest``.
_CLASS_FIRST = re.compile(r"\[(?:\\.|[^\]\\])*\]\|")


def _runs(token: str) -> str:
    """``token`` with its leading one-character class matched as a possessive run.

    Only for a possessive, unbounded loop: both forms consume the same maximal run of
    tokens, but ``[...]++`` eats a run of plain characters in one C loop where the
    alternation is entered once per character (docs/benchmarks.md has the gain). Where
    the loop may give characters back, the run would change the language.
    """
    head = _CLASS_FIRST.match(token)
    if head is None:
        return token
    end = head.end() - 1  # before the "|"
    return f"{token[:end]}++{token[end:]}"


class _Groups:
    """Hands out unique group names for the optional-varspec bookkeeping; ``plain``
    asks for the form read by the automaton, where atomic groups are plain groups."""

    def __init__(self, plain: bool = False) -> None:
        self.count = 0
        self.plain = plain

    def new(self) -> str:
        self.count += 1
        return f"_v{self.count}"


# --- one varspec --------------------------------------------------------------------------


def _unreserved_varspec(op: str, spec: VarSpec, follow: Chars) -> str:
    """Regex for what a defined variable expands to in an unreserved-only expression."""
    name = re.escape(spec.name)
    tok, start = U_TOKEN, U_START
    listy = f"{tok}|,"  # non-exploded list / associative array: items joined by ","
    listy_start = start | chars(",")
    if op == ";":
        if spec.prefix is not None:
            return f"{name}(?:={loop(tok, start, follow, 1, spec.prefix)})?"
        if not spec.explode:
            return f"{name}(?:={loop(listy, listy_start, follow)})?"
        item_follow = follow | chars(";")
        key = loop(tok, start, item_follow | chars("="))
        item = f"{key}(?:={loop(tok, start, item_follow, 1)})?"
        pairs = f"{item}(?:;{item})*"
        if _U_STRING.fullmatch(spec.name):
            return pairs  # the list form (name=member;...) is a special case of pairs
        named = f"{name}(?:={loop(tok, start, item_follow, 1)})?"
        return f"(?:{named}(?:;{named})*|{pairs})"
    if op in ("?", "&"):
        if spec.prefix is not None:
            return f"{name}={loop(tok, start, follow, 0, spec.prefix)}"
        if not spec.explode:
            return f"{name}={loop(listy, listy_start, follow)}"
        item_follow = follow | chars("&")
        item = f"{loop(tok, start, chars('='))}={loop(tok, start, item_follow)}"
        pairs = f"{item}(?:&{item})*"
        if _U_STRING.fullmatch(spec.name):
            return pairs
        named = f"{name}={loop(tok, start, item_follow)}"
        return f"(?:{named}(?:&{named})*|{pairs})"
    # unnamed: "", ".", "/"
    if spec.prefix is not None:
        return loop(tok, start, follow, 0, spec.prefix)
    if not spec.explode:
        return loop(listy, listy_start, follow)
    sep = "," if op == "" else op
    if sep == ".":
        # Members joined by "." are just a longer value; pairs k=v joined by ".": between
        # two "=" there is at least one "." (the last one separates value from key).
        seg = (
            f"{loop(U_TOKEN_NO_DOT, U_START_NO_DOT, chars('.'))}\\.{loop(tok, start, chars('='))}="
        )
        return f"{loop(tok, start, follow | chars('='))}(?:=(?:{seg})*{loop(tok, start, follow)})?"
    esep = re.escape(sep)
    inner_follow = follow | chars(sep)
    value = loop(tok, start, inner_follow)
    first = loop(tok, start, inner_follow | chars("="))
    key = loop(tok, start, chars("="))
    return f"{first}(?:={value}(?:{esep}{key}={value})*|(?:{esep}{value})*)"


def _reserved_prefix(n: int, plain: bool = False) -> str:
    """Up to ``n`` characters of a reserved expansion, allowing the cut to fall inside an
    encoded multi-octet character (whose triplets then count one each). Read without
    atomicity, the token already counts a triplet as one, so ``plain`` needs no cuts."""
    alts = [f"{_R_PREFIX_TOKEN}{{0,{n}}}"]
    if plain:
        return alts[0]
    for j in range(1, min(3, n) + 1):
        alts.append(f"{_R_PREFIX_TOKEN}{{0,{n - j}}}(?:{_TRIPLET}){{{j}}}")
    return "(?:" + "|".join(alts) + ")"


# --- one expression ----------------------------------------------------------------------

_FIRST = {"": "", "+": "", "#": "#", ".": ".", "/": "/", ";": ";", "?": "?", "&": "&"}
_SEP = {"": ",", "+": ",", "#": ",", ".": ".", "/": "/", ";": ";", "?": "&", "&": "&"}


def star_class(expr: Expression) -> str | None:
    """``"U"`` or ``"R"`` when the expression's language is exactly ``(U|,)*`` or ``R*``."""
    has_plain = any(s.prefix is None for s in expr.varspecs)
    if expr.op == "+" and has_plain:
        return "R"
    plain = any(s.prefix is None and not s.explode for s in expr.varspecs)
    if expr.op == "" and plain and not any(s.explode for s in expr.varspecs):
        return "U"
    return None


def within_star(expr: Expression, cls: str) -> bool:
    """True when everything ``expr`` expands to is in the language of star class ``cls``."""
    if cls == "R":
        return True  # every expansion is made of unreserved, reserved and triplets
    return expr.op in ("", ".") and not any(s.explode for s in expr.varspecs)


STAR_REGEX = {"U": (f"{U_TOKEN}|,", U_START | chars(",")), "R": (R_TOKEN, R_START)}


def expression_regex(expr: Expression, follow: Chars, groups: _Groups) -> str:
    """Regex for everything ``expr`` can expand to, the empty string included."""
    op = expr.op
    cls = star_class(expr)
    if cls is not None:
        token, start = STAR_REGEX[cls]
        return loop(token, start, follow)
    reserved = op in ("+", "#")
    if op == "#" and any(s.prefix is None for s in expr.varspecs):
        return f"(?:\\#{loop(R_TOKEN, R_START, follow)})?"
    if op == "." and all(s.prefix is None and not s.explode for s in expr.varspecs):
        return f"(?:\\.{loop(f'{U_TOKEN}|,', U_START | chars(','), follow)})?"
    first, sep = re.escape(_FIRST[op]), _SEP[op]
    specs = expr.varspecs
    inner = follow | chars(sep)

    def one(spec: VarSpec, last: bool) -> str:
        f = follow if last else inner
        if reserved:
            assert spec.prefix is not None  # plain ones were handled above
            return _reserved_prefix(spec.prefix, groups.plain)
        return _unreserved_varspec(op, spec, f)

    esep = re.escape(sep)
    if len(specs) == 1:
        return f"(?:{first}{one(specs[0], True)})?"
    if op not in (";", "?", "&") and len(set(specs)) == 1:
        # Unnamed and all alike: one to k copies joined by the separator.
        e_mid, e_last = one(specs[0], False), one(specs[0], True)
        k = len(specs)
        return f"(?:{first}(?:{e_mid}{esep}){{0,{k - 1}}}{e_last})?"
    # General case: a non-empty ordered subsequence joined by sep, first before it.
    # Group g_j is set once some varspec <= j was defined, so later ones take the
    # separator; linear in the number of varspecs.
    parts: list[str] = []
    prev = ""
    for j, spec in enumerate(specs):
        e = one(spec, j == len(specs) - 1)
        g = groups.new()
        if not prev:
            parts.append(f"(?P<{g}>{first}{e})?")
        else:
            parts.append(f"(?:(?P<{g}>(?({prev})(?:{esep}{e})?|{first}{e}))|(?({prev})(?!)))")
        prev = g
    return "(?:" + "".join(parts) + ")"


# --- the whole template ------------------------------------------------------------------


def _first_chars(piece: Piece) -> Chars:
    """Characters a non-empty match of ``piece`` may start with."""
    if isinstance(piece, str):
        return chars(piece[:1])
    cls = star_class(piece)
    if cls is not None:
        return STAR_REGEX[cls][1]
    if piece.op == "+":
        return R_START
    if piece.op:
        return chars(piece.op)
    return U_START | chars(",=")


def _simplify(pieces: list[Piece]) -> list[Piece]:
    """Drop expressions absorbed by an adjacent star: ``A`` next to ``S*`` with
    ``A`` nullable and within ``S*`` gives ``S*`` (so ``{a}{b}{c}`` is one loop)."""
    out = list(pieces)
    changed = True
    while changed:
        changed = False
        for i, p in enumerate(out):
            if not isinstance(p, Expression) or star_class(p) is not None:
                continue
            for k in (i - 1, i + 1):
                if 0 <= k < len(out):
                    q = out[k]
                    if isinstance(q, Expression):
                        cls = star_class(q)
                        if cls is not None and within_star(p, cls):
                            del out[i]
                            changed = True
                            break
            if changed:
                break
        if not changed:
            # Two adjacent stars: the wider absorbs the narrower.
            for i in range(len(out) - 1):
                a, b = out[i], out[i + 1]
                if isinstance(a, Expression) and isinstance(b, Expression):
                    ca, cb = star_class(a), star_class(b)
                    if ca is not None and cb is not None:
                        del out[i + 1 if ca == "R" or cb == "U" else i]
                        changed = True
                        break
    return out


def alphabet(expr: Expression) -> frozenset[str]:
    """Every character that may occur in an expansion of ``expr`` (all ASCII)."""
    if expr.op in ("+", "#"):
        return R_START.ascii
    return U_START.ascii | frozenset(",=" + _FIRST[expr.op] + _SEP[expr.op])


def _literal_regex(text: str) -> str:
    return re.escape(text)


def template_regex(pieces: Iterable[Piece], plain: bool = False) -> str:
    """The anchored regex source for a parsed template; ``plain``: the same language
    for an automaton that reads atomic groups and possessive loops as plain ones."""
    seq = _simplify([p for p in pieces if p != ""])
    groups = _Groups(plain)
    out: list[str] = []
    follow = END
    # Build right to left: every expression is nullable, so what may follow a piece is
    # the first characters of the pieces after it up to and including the next literal.
    regexes: list[str] = [""] * len(seq)
    for i in range(len(seq) - 1, -1, -1):
        p = seq[i]
        if isinstance(p, str):
            regexes[i] = _literal_regex(p)
            follow = _first_chars(p)
        else:
            regexes[i] = expression_regex(p, follow, groups)
            follow = follow | _first_chars(p)
    # Commit early where that is exact (see the module docstring of uritemplate).
    run: list[str] = []  # regexes since the last commit point
    run_alphabet: frozenset[str] = frozenset()
    i = 0
    while i < len(seq):
        p = seq[i]
        if isinstance(p, str):
            if chars(p).other or not chars(p).ascii <= run_alphabet:
                # The literal holds a character nothing since the last commit point can
                # produce: that stretch must end right before its first occurrence, so
                # there is one way to split it and committing to it is exact.
                out.append("(?>" + "".join(run) + regexes[i] + ")" if run else regexes[i])
                run, run_alphabet = [], frozenset()
            else:
                run.append(regexes[i])
                run_alphabet |= chars(p).ascii
            i += 1
            continue
        run_alphabet |= alphabet(p)
        lit = seq[i + 1] if i + 1 < len(seq) else None
        nxt = seq[i + 2] if i + 2 < len(seq) else None
        ca = star_class(p)
        cb = star_class(nxt) if isinstance(nxt, Expression) else None
        if isinstance(lit, str) and ca is not None and cb is not None and (ca == cb or cb == "R"):
            # A star S*, a literal of S tokens, then a star at least as wide: the
            # leftmost occurrence of the literal is as good as any.
            token, _ = STAR_REGEX[ca]
            if re.fullmatch(f"(?:{token})*", lit):
                run.append(f"(?>(?:{token})*?{_literal_regex(lit)})")
                run_alphabet |= chars(lit).ascii
                i += 2
                continue
        run.append(regexes[i])
        i += 1
    out.extend(run)
    return r"\A" + "".join(out) + r"\Z"


# --- which regexes backtrack linearly -----------------------------------------------------


def _one_parse(expr: Expression) -> bool:
    """True when ``expr``'s regex has at most one way to match any given span, and its
    loops next to the surrounding text are possessive once :func:`regex_is_linear` holds."""
    if star_class(expr) is not None:
        return True
    op, specs = expr.op, expr.varspecs
    if op == "#" and any(s.prefix is None for s in specs):
        return True  # #R*
    if op == "." and all(s.prefix is None and not s.explode for s in specs):
        return True  # .(U|,)*
    if op in ("+", "#"):
        return False  # prefixes only: a cut inside a multi-octet character parses two ways
    if len(specs) == 1:
        # ";", "?", "&" with explode try the named and the pairs forms, which overlap.
        return not (specs[0].explode and op in (";", "?", "&"))
    # Named varspecs with distinct names: each "name=" says which varspec it is.
    names = {s.name for s in specs}
    return op in (";", "?", "&") and len(names) == len(specs) and not any(s.explode for s in specs)


def regex_is_linear(pieces: Iterable[Piece]) -> bool:
    """True when :func:`template_regex` of ``pieces`` provably backtracks in linear time.

    It holds when every expression has one parse of any span (:func:`_one_parse`) and no
    character it can produce may start what follows it. Then each expression's match ends
    at the first character outside its alphabet: any shorter match dies on the next
    piece's first character, so backtracking walks one spine and each expression is
    tried once per start it is really reached at, costing O(span x its size). The last
    expression may be followed by literals it can produce (``{id}.json``): it is tried
    at one start, and each of its O(span) ends costs one literal comparison.
    """
    seq = _simplify([p for p in pieces if p != ""])
    follow = END
    last = True  # no expression after this point
    for p in reversed(seq):
        if isinstance(p, str):
            follow = _first_chars(p)
            continue
        if not _one_parse(p) or (alphabet(p) & follow.ascii and not last):
            return False
        follow = follow | _first_chars(p)
        last = False
    return True
