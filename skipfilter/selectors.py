"""Topic selector languages compiled into fast predicates.

A subscriber describes the topics it wants with a *selector* written in one of
five syntaxes (:data:`SYNTAXES`): Mercure (exact strings, ``*`` and RFC 6570 URI
templates), AMQP 0-9-1 topic bindings, NATS subjects, MQTT topic filters and
Python regular expressions. Each selector is compiled once into a
:class:`Selector`: a precompiled predicate plus facts an index can exploit
without calling it (the single topic it matches, a literal prefix of every
topic it matches, whether it matches everything).

Contents:

- :data:`SYNTAXES` -- the syntax names accepted by :func:`compile_selector`.
- :class:`Selector` -- a compiled selector: ``matches(topic)``, ``exact``, ``prefix``,
  ``match_all``.
- :func:`compile_selector` -- text + syntax name -> :class:`Selector`, or
  :class:`~skipfilter.errors.InvalidSelector` naming the bad part and its column.
- :func:`matches` -- one-off convenience test through a cache of compiled selectors.

Topics are plain strings: wildcard characters in a topic are literal characters,
and a topic's words (levels, tokens) are ``topic.split(sep)``, so empty words count
and "" is one empty word (hence NATS ``>`` and AMQP ``#`` match every string).
Word syntaxes (AMQP, NATS, MQTT) compile to one ``re`` pattern that cannot
backtrack badly (at most one variable-length wildcard), or, for AMQP bindings
with several ``#``, to a word-by-word glob matcher that runs in O(words x pattern).
"""

from __future__ import annotations

import dataclasses
import functools
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from skipfilter import uritemplate
from skipfilter.errors import InvalidSelector

__all__ = ["SYNTAXES", "Selector", "compile_selector", "matches"]

SYNTAXES: tuple[str, ...] = ("mercure", "amqp", "nats", "mqtt", "regex")

_ANY = r"[\s\S]*"  # any string, newlines included, without needing re.DOTALL
_NATS_SPACE = re.compile(r"[ \t\n\r\f]")  # whitespace the NATS server rejects in subjects
_RX_SPECIAL = frozenset(".^$*+?{}[]\\|()")  # characters that may end a regex literal run
_RX_MATCH_ALL = frozenset({"(?s).*", "(?s:.*)", r"[\s\S]*", r"[\S\s]*"})


def _always(topic: str) -> bool:
    """Predicate of match-all selectors: no work at all."""
    return True


@dataclass(frozen=True, slots=True)
class Selector:
    """A selector compiled once, tested many times.

    ``text`` and ``syntax`` are as given. The other fields are honest facts an
    index may use instead of calling :meth:`matches`:

    - ``exact``: the only topic matched, when exactly one is (hash-map fast path).
    - ``prefix``: a literal every matching topic starts with ("" when none).
    - ``match_all``: every string is matched.

    Selectors compare and hash by text and syntax, are immutable and therefore
    safe to share between threads, and pickle by recompiling from their text.
    """

    text: str
    syntax: str
    exact: str | None
    prefix: str
    match_all: bool
    #: The precompiled test, truthy on a match: what :meth:`matches` calls. Hot loops
    #: (an index testing many selectors per topic) call it directly to save a frame.
    test: Callable[[str], object] = field(repr=False, compare=False)
    #: How many :data:`DELIMITERS` characters every matching topic has, when that is
    #: fixed (``/books/{id}`` always has 2 ``/``; ``a.#`` has no fixed count: None).
    #: An index buckets selectors by it so a topic tests only those that fit.
    segments: int | None = field(default=None, compare=False)

    def matches(self, topic: str) -> bool:
        """Whether ``topic`` is selected, by one precompiled test; thread-safe.

        Runtime: O(1) for ``match_all``, O(len(topic)) for exact selectors and word
        syntaxes, O(words x pattern words) for AMQP bindings with several ``#``;
        a ``regex`` selector costs what ``re`` makes it cost.

        >>> compile_selector("a.*.c", "amqp").matches("a.b.c")
        True
        """
        return bool(self.test(topic))

    def __reduce__(self) -> tuple[Any, ...]:
        """Pickle as (text, syntax): compiled predicates are closures."""
        return (compile_selector, (self.text, self.syntax))


def compile_selector(text: str, syntax: str = "mercure") -> Selector:
    """Compile ``text`` written in ``syntax`` (one of :data:`SYNTAXES`) into a :class:`Selector`.

    Raises :class:`~skipfilter.errors.InvalidSelector` (a ``ValueError``) naming
    the bad part and its 1-based column, or ``ValueError`` for an unknown syntax.
    Runtime: O(len(text)) plus ``re.compile`` for pattern-based syntaxes.

    >>> compile_selector("sport/#", "mqtt").prefix
    'sport'
    >>> compile_selector("/users/42").exact
    '/users/42'
    >>> compile_selector("a.>.b", "nats")
    Traceback (most recent call last):
      ...
    skipfilter.errors.InvalidSelector: '>' must be the last token at column 3 in 'a.>.b'
    """
    compiler = _COMPILERS.get(syntax)
    if compiler is None:
        raise ValueError(f"unknown selector syntax {syntax!r}; expected one of {SYNTAXES}")
    selector = compiler(text)
    if selector.exact is None and not selector.match_all:
        segments = _fixed_segments(text, syntax)
        if segments is not None:
            selector = dataclasses.replace(selector, segments=segments)
    return selector


#: The character that separates a topic's words or levels, per syntax (regex: none).
DELIMITERS: dict[str, str] = {"mercure": "/", "amqp": ".", "nats": ".", "mqtt": "/"}

_EXPRESSION = re.compile(r"\{([^}]*)\}")


def _fixed_segments(text: str, syntax: str) -> int | None:
    """The delimiter count every topic matched by ``text`` has, if it is fixed.

    Mercure: only ``{+x}``, ``{#x}`` and ``{/x}`` can expand to an unencoded ``/``,
    so a template without them matches topics with exactly its literal ``/``s (and
    its own text, which has the same count). Word syntaxes: fixed unless a multi-word
    wildcard (``#``, ``>``) is present.
    """
    if syntax == "mercure":
        operators = {e[:1] for e in _EXPRESSION.findall(text)}
        return None if operators & {"+", "#", "/"} else text.count("/")
    if syntax == "amqp":
        return None if "#" in text.split(".") else text.count(".")
    if syntax == "nats":
        return None if text.split(".")[-1] == ">" else text.count(".")
    if syntax == "mqtt":
        return None if text.split("/")[-1] == "#" else text.count("/")
    return None


@functools.lru_cache(maxsize=4096)
def _compile_cached(text: str, syntax: str) -> Selector:
    """compile_selector behind an LRU cache, for :func:`matches`."""
    return compile_selector(text, syntax)


def matches(text: str, topic: str, syntax: str = "mercure") -> bool:
    """Whether selector ``text`` in ``syntax`` matches ``topic``; compiles through an LRU cache.

    For one-off checks and tests; hot paths should keep the :class:`Selector`.
    Runtime: amortised :meth:`Selector.matches` (the cache holds 4096 selectors).

    >>> matches("https://example.com/books/{id}", "https://example.com/books/1")
    True
    """
    return _compile_cached(text, syntax).matches(topic)


# -- constructors shared by the syntaxes --------------------------------------------------


def _exact(text: str, syntax: str, topic: str) -> Selector:
    """A selector that matches only ``topic``: one string comparison."""
    return Selector(text, syntax, topic, topic, False, topic.__eq__)


def _everything(text: str, syntax: str) -> Selector:
    """A selector that matches every string."""
    return Selector(text, syntax, None, "", True, _always)


def _pattern(text: str, syntax: str, prefix: str, regex: str) -> Selector:
    """A selector tested by a precompiled ``re`` full match."""
    return Selector(text, syntax, None, prefix, False, re.compile(regex).fullmatch)


def _invalid(what: str, text: str, column: int) -> InvalidSelector:
    """An InvalidSelector whose message names the bad part, its column and the selector."""
    return InvalidSelector(f"{what} at column {column} in {text!r}", text, column)


def _columns(parts: list[str]) -> list[int]:
    """1-based column where each separator-delimited part starts."""
    cols, col = [], 1
    for part in parts:
        cols.append(col)
        col += len(part) + 1
    return cols


def _word_regex(words: list[str], sep: str, one: str) -> str:
    """Regex for a run of literal words and one-word wildcards ``one``, joined by ``sep``."""
    not_sep = f"[^{re.escape(sep)}]*"
    return re.escape(sep).join(not_sep if w == one else re.escape(w) for w in words)


def _literal_head(words: list[str], wildcards: tuple[str, ...]) -> list[str]:
    """The literal words before the first wildcard."""
    for i, word in enumerate(words):
        if word in wildcards:
            return words[:i]
    return words


# -- mercure ------------------------------------------------------------------------------


def _compile_mercure(text: str) -> Selector:
    """``*``, an RFC 6570 template (text containing ``{``) or a raw string matched exactly."""
    if text == "*":
        return _everything(text, "mercure")
    if not uritemplate.is_template(text):
        return _exact(text, "mercure", text)
    try:
        template = uritemplate.parse(text)
    except InvalidSelector:  # Mercure: a selector that is not a valid template is a raw string
        return _exact(text, "mercure", text)
    if template.linear_regex:
        # The selector's own text matches too; as a first alternative (a literal, so
        # still linear) it costs no Python call per test.
        either = re.compile(f"{re.escape(text)}\\Z|{template.pattern.pattern}")
        return Selector(text, "mercure", None, template.literal_prefix, False, either.match)
    pattern_match = template.matcher  # the automaton: linear time for every template

    def match(topic: str) -> object:
        return topic == text or pattern_match(topic)

    return Selector(text, "mercure", None, template.literal_prefix, False, match)


# -- amqp ---------------------------------------------------------------------------------


def _compile_amqp(text: str) -> Selector:
    """AMQP topic binding: ``*`` one word, ``#`` zero or more; never invalid.

    Words are ``str.split(".")``: "" is one empty word, so ``*`` matches "" (RabbitMQ
    reads "" as zero words; the project chose the uniform rule, as ctrie.py does).
    """
    words: list[str] = []
    for word in text.split("."):
        if not (word == "#" and words and words[-1] == "#"):  # a.#.#.b == a.#.b
            words.append(word)
    if "*" not in words and "#" not in words:
        return _exact(text, "amqp", text)
    if words == ["#"]:
        return _everything(text, "amqp")
    head = _literal_head(words, ("*", "#"))
    tail_hash = words[len(head)] == "#" and len(words) == len(head) + 1
    prefix = ".".join(head) + ("" if tail_hash or not head else ".")
    hashes = words.count("#")
    if hashes > 1:
        return Selector(text, "amqp", None, prefix, False, _glob_words(tuple(words)))
    if hashes == 0:
        body = _word_regex(words, ".", "*")
    else:
        i = words.index("#")
        before, after = _word_regex(words[:i], ".", "*"), _word_regex(words[i + 1 :], ".", "*")
        if i == 0:
            body = rf"(?:{_ANY}\.)?{after}"
        elif i == len(words) - 1:
            body = rf"{before}(?:\.{_ANY})?"
        else:
            body = rf"{before}\.(?:{_ANY}\.)?{after}"
    return _pattern(text, "amqp", prefix, body)


def _glob_words(pattern: tuple[str, ...]) -> Callable[[str], bool]:
    """Word-level glob matcher for bindings with several ``#``: O(words x pattern), no blow-up.

    Greedy scan that, on a mismatch, lets the most recent ``#`` swallow one more word.
    """
    n = len(pattern)

    def match(topic: str) -> bool:
        words = topic.split(".")
        p = t = 0
        star_p, star_t = -1, 0
        while t < len(words):
            if p < n and pattern[p] == "#":
                star_p, star_t = p, t
                p += 1
            elif p < n and (pattern[p] == "*" or pattern[p] == words[t]):
                p += 1
                t += 1
            elif star_p >= 0:
                star_t += 1
                p, t = star_p + 1, star_t
            else:
                return False
        while p < n and pattern[p] == "#":
            p += 1
        return p == n

    return match


# -- nats ---------------------------------------------------------------------------------


def _compile_nats(text: str) -> Selector:
    """NATS subject: ``*`` one token, ``>`` one or more trailing tokens."""
    if not text:
        raise _invalid("empty subject", text, 1)
    tokens = text.split(".")
    for i, (token, col) in enumerate(zip(tokens, _columns(tokens), strict=True)):
        if not token:
            raise _invalid("empty token", text, col)
        space = _NATS_SPACE.search(token)
        if space:
            raise _invalid(f"whitespace {space.group()!r}", text, col + space.start())
        if token == ">" and i != len(tokens) - 1:
            raise _invalid("'>' must be the last token", text, col)
    if "*" not in tokens and tokens[-1] != ">":
        return _exact(text, "nats", text)
    if tokens == [">"]:  # every string splits into at least one token
        return _everything(text, "nats")
    head = _literal_head(tokens, ("*", ">"))
    prefix = ".".join(head) + "." if head else ""
    if tokens[-1] == ">":
        body = _word_regex(tokens[:-1], ".", "*") + r"\." + _ANY
    else:
        body = _word_regex(tokens, ".", "*")
    return _pattern(text, "nats", prefix, body)


# -- mqtt ---------------------------------------------------------------------------------


def _compile_mqtt(text: str) -> Selector:
    """MQTT topic filter: ``+`` one level, ``#`` the rest; wildcards first skip ``$`` topics."""
    if not text:
        raise _invalid("empty topic filter", text, 1)
    if "\x00" in text:
        raise _invalid("NUL character", text, text.index("\x00") + 1)
    levels = text.split("/")
    for i, (level, col) in enumerate(zip(levels, _columns(levels), strict=True)):
        for char in "+#":
            if char in level and level != char:
                raise _invalid(f"{char!r} must be a whole level", text, col + level.index(char))
        if level == "#" and i != len(levels) - 1:
            raise _invalid("'#' must be the last level", text, col)
    if "+" not in levels and levels[-1] != "#":
        return _exact(text, "mqtt", text)
    head = _literal_head(levels, ("+", "#"))
    prefix = ""
    if head:  # "a/+" needs the separator; "a/#" also matches "a"
        prefix = "/".join(head) + ("/" if levels[len(head)] == "+" else "")
    if levels == ["#"]:
        body = _ANY
    elif levels[-1] == "#":
        body = _word_regex(levels[:-1], "/", "+") + f"(?:/{_ANY})?"
    else:
        body = _word_regex(levels, "/", "+")
    if levels[0] in ("+", "#"):  # MQTT 4.7.2: such filters never match topics starting with '$'
        body = r"(?!\$)" + body
    return _pattern(text, "mqtt", prefix, body)


# -- regex --------------------------------------------------------------------------------


def _compile_regex(text: str) -> Selector:
    """Python ``re`` pattern that must match the whole topic."""
    try:
        fullmatch = re.compile(text).fullmatch
    except re.error as exc:
        column = exc.pos + 1 if exc.pos is not None else 1
        raise _invalid(f"bad regex ({exc.msg})", text, column) from exc
    except (OverflowError, RecursionError, ValueError) as exc:  # huge repeat counts, deep nesting
        raise _invalid(f"bad regex ({exc})", text, 1) from exc
    if text in _RX_MATCH_ALL:
        return _everything(text, "regex")
    run = 0  # length of the leading run of characters that are literal whatever follows
    while run < len(text) and text[run] not in _RX_SPECIAL:
        run += 1
    if run == len(text):
        return _exact(text, "regex", text)
    if text[run] in "*+?{":  # a quantifier applies to the last literal character
        run = max(run - 1, 0)
    prefix = "" if "|" in text else text[:run]  # a top-level '|' may drop the prefix
    return Selector(text, "regex", None, prefix, False, fullmatch)


_COMPILERS: dict[str, Callable[[str], Selector]] = {
    "mercure": _compile_mercure,
    "amqp": _compile_amqp,
    "nats": _compile_nats,
    "mqtt": _compile_mqtt,
    "regex": _compile_regex,
}
