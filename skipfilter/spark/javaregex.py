"""Python ``re`` patterns rewritten for Java's regex engine, which Spark's ``RLIKE`` runs.

The native SQL strategy tests topics against selectors on the JVM, so every pattern a
compiled selector uses must mean the same in Java. The two dialects differ in spelling
(``\\Z`` is Java's ``\\z``), in meaning (Java's ``.`` and ``$`` know more line
terminators) and in features: URI templates with several variables in one expression
use *conditional groups* ``(?(g)yes|no)``, which Java lacks. So the pattern is parsed
with the standard library's own parser and re-emitted, and conditionals are compiled
away by tracking, through the pattern, which of the groups they read has matched.
Around conditionals, atomic groups and possessive ``?`` are read as plain ones: the
template compiler adds them only where that does not change the language (its automaton
reads them so too), and the tests hold the result to Spark's own verdicts.

Contents: :func:`java_fullmatch`, :class:`Untranslatable`.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterable, Sequence
from typing import Any

from skipfilter.errors import SkipFilterError

__all__ = ["Untranslatable", "java_fullmatch"]

_parser: Any = importlib.import_module("re._parser")  # the parser re.compile uses
_c: Any = importlib.import_module("re._constants")

#: Which tracked groups have matched so far: the state conditionals read.
State = frozenset[tuple[int, bool]]
_MAX_STATES = 64  # distinct group states a pattern may need before it is refused


class Untranslatable(SkipFilterError, ValueError):
    """A Python pattern that has no Java equivalent here; the message names the construct."""


def java_fullmatch(pattern: str) -> str:
    """A Java regex whose ``find`` succeeds on exactly the strings ``re.fullmatch`` accepts.

    Raises :class:`Untranslatable` for constructs whose meaning differs between the two
    engines (Unicode classes such as ``\\w``, backreferences, flags, lookbehind).
    Runtime: linear in the pattern, times the group states its conditionals need.

    >>> print(java_fullmatch(r"a\\.b*\\Z"))
    \\A(?:a\\x{2e}(?:b){0,}\\z)\\z
    """
    tree = _parser.parse(pattern)
    if tree.state.flags & ~(_c.SRE_FLAG_UNICODE):
        raise Untranslatable(f"flags are not supported in {pattern!r}")
    read = _referenced(tree)
    translator = _Translator(pattern, read)
    states = translator.sequence(list(tree), {frozenset(): ""}, frozenset())
    return rf"\A(?:{_alternation(states.values())})\z"


def _referenced(items: Iterable[Any]) -> frozenset[int]:
    """Groups read by conditionals anywhere in ``items``."""
    found: set[int] = set()
    for op, av in items:
        if op is _c.GROUPREF_EXISTS:
            found.add(av[0])
        for child in _children(op, av):
            found |= _referenced(child)
    return frozenset(found)


def _children(op: Any, av: Any) -> list[Any]:
    """The sub-sequences of one parsed item."""
    if op is _c.SUBPATTERN:
        return [av[3]]
    if op in (_c.MAX_REPEAT, _c.MIN_REPEAT, _c.POSSESSIVE_REPEAT):
        return [av[2]]
    if op is _c.BRANCH:
        return list(av[1])
    if op is _c.GROUPREF_EXISTS:
        return [av[1]] + ([av[2]] if av[2] is not None else [])
    if op in (_c.ASSERT, _c.ASSERT_NOT):
        return [av[1]]
    if op is _c.ATOMIC_GROUP:
        return [av]
    return []


def _alternation(texts: Iterable[str]) -> str:
    unique = list(dict.fromkeys(texts))
    return unique[0] if len(unique) == 1 else "(?:" + "|".join(unique) + ")"


def _char(code: int) -> str:
    """One character, literal in Java whatever it is (inside a class too)."""
    if chr(code).isascii() and chr(code).isalnum():
        return chr(code)
    return f"\\x{{{code:x}}}"


class _Translator:
    """Emits Java for a parsed pattern; ``read`` are the groups conditionals ask about."""

    def __init__(self, pattern: str, read: frozenset[int]) -> None:
        self.pattern = pattern
        self.read = read

    def refuse(self, what: str) -> Untranslatable:
        return Untranslatable(f"{what} has no Java equivalent here, in {self.pattern!r}")

    # -- with group states: the parts that hold or read tracked groups --------------------

    def sequence(
        self, items: Sequence[Any], states: dict[State, str], later: frozenset[int]
    ) -> dict[State, str]:
        """Emit ``items`` after each state's text; ``later`` are groups read after them.

        While a single state is live its text is kept apart as a common prefix, so the
        text before a conditional chain is not copied into every state of the chain.
        """
        prefix, states = self._factor("", states)
        for i, item in enumerate(items):
            needed = later | _referenced(items[i + 1 :])
            if _referenced([item]) or self._sets_tracked([item]):
                states = self.item(item, states, needed)
            else:
                text = self.plain(item)
                states = {state: prefix + text for state, prefix in states.items()}
            states = self._merge(
                (frozenset((g, m) for g, m in state if g in needed), text)
                for state, text in states.items()
            )
            prefix, states = self._factor(prefix, states)
        return {state: prefix + text for state, text in states.items()}

    @staticmethod
    def _factor(prefix: str, states: dict[State, str]) -> tuple[str, dict[State, str]]:
        """Move the text of a lone state into ``prefix``."""
        if len(states) == 1:
            ((state, text),) = states.items()
            return prefix + text, {state: ""}
        return prefix, states

    def _sets_tracked(self, items: Iterable[Any]) -> bool:
        for op, av in items:
            if op is _c.SUBPATTERN and av[0] in self.read:
                return True
            if any(self._sets_tracked(child) for child in _children(op, av)):
                return True
        return False

    def _merge(self, pairs: Iterable[tuple[State, str]]) -> dict[State, str]:
        grouped: dict[State, list[str]] = {}
        for state, text in pairs:
            grouped.setdefault(state, []).append(text)
        if len(grouped) > _MAX_STATES:
            raise self.refuse("a pattern with this many conditional groups")
        return {state: _alternation(texts) for state, texts in grouped.items()}

    def item(self, item: Any, states: dict[State, str], later: frozenset[int]) -> dict[State, str]:
        """One item that sets or reads a tracked group."""
        op, av = item
        if op is _c.SUBPATTERN:
            group, add_flags, del_flags, body = av
            if add_flags or del_flags:
                raise self.refuse("an inline flag")
            inner = self.sequence(list(body), states, later | {group})
            if group in self.read:
                return self._merge(
                    (frozenset({*((g, m) for g, m in s if g != group), (group, True)}), t)
                    for s, t in inner.items()
                )
            return inner
        if op is _c.ATOMIC_GROUP:  # read as a plain group, as the template automaton does
            return self.sequence(list(av), states, later)
        if op in (_c.MAX_REPEAT, _c.POSSESSIVE_REPEAT) and av[0] == 0 and av[1] == 1:
            taken = self.sequence(list(av[2]), states, later)
            return self._merge([*states.items(), *taken.items()])
        if op is _c.BRANCH:
            out: list[tuple[State, str]] = []
            for alternative in av[1]:
                out += self.sequence(list(alternative), states, later).items()
            return self._merge(out)
        if op is _c.GROUPREF_EXISTS:
            group, yes, no = av
            out = []
            for state, text in states.items():
                matched = (group, True) in state
                branch = yes if matched else no
                if branch is None:
                    out.append((state, text))
                else:
                    out += self.sequence(list(branch), {state: text}, later).items()
            return self._merge(out)
        if op is _c.ASSERT_NOT and not av[1]:  # (?!): this path never matches
            return {}
        raise self.refuse(f"{op} around a conditional group")

    # -- plain: no tracked group inside ------------------------------------------------------

    def plain(self, item: Any) -> str:
        op, av = item
        if op is _c.LITERAL:
            return _char(av)
        if op is _c.NOT_LITERAL:
            return f"[^{_char(av)}]"
        if op is _c.ANY:
            return "[^\\n]"  # Python's "." without DOTALL; Java's would also skip \r, \u2028, ...
        if op is _c.IN:
            return self.charset(av)
        if op is _c.AT:
            return self.anchor(av)
        if op is _c.BRANCH:
            return "(?:" + "|".join(self.plains(alt) for alt in av[1]) + ")"
        if op is _c.SUBPATTERN:
            if av[1] or av[2]:
                raise self.refuse("an inline flag")
            return f"(?:{self.plains(av[3])})"
        if op is _c.ATOMIC_GROUP:
            return f"(?>{self.plains(av)})"
        if op in (_c.MAX_REPEAT, _c.MIN_REPEAT, _c.POSSESSIVE_REPEAT):
            low, high, body = av
            bound = f"{{{low},}}" if high == _c.MAXREPEAT else f"{{{low},{high}}}"
            suffix = {_c.MAX_REPEAT: "", _c.MIN_REPEAT: "?", _c.POSSESSIVE_REPEAT: "+"}[op]
            return f"(?:{self.plains(body)}){bound}{suffix}"
        if op in (_c.ASSERT, _c.ASSERT_NOT):
            direction, body = av
            if direction != 1:
                raise self.refuse("a lookbehind")
            return f"(?{'=' if op is _c.ASSERT else '!'}{self.plains(body)})"
        raise self.refuse(str(op))

    def plains(self, items: Iterable[Any]) -> str:
        return "".join(self.plain(item) for item in items)

    def anchor(self, at: Any) -> str:
        if at in (_c.AT_BEGINNING_STRING, _c.AT_BEGINNING):  # "^" is "\A" without MULTILINE
            return "\\A"
        if at is _c.AT_END_STRING:
            return "\\z"
        if at is _c.AT_END:
            return "(?=\\n?\\z)"  # Python's "$": the end, or before a final newline only
        raise self.refuse(str(at))

    def charset(self, items: Sequence[Any]) -> str:
        categories = {av for op, av in items if op is _c.CATEGORY}
        if categories:  # only a category with its complement: every character
            complements = {
                (_c.CATEGORY_SPACE, _c.CATEGORY_NOT_SPACE),
                (_c.CATEGORY_DIGIT, _c.CATEGORY_NOT_DIGIT),
                (_c.CATEGORY_WORD, _c.CATEGORY_NOT_WORD),
            }
            if not any(a in categories and b in categories for a, b in complements):
                raise self.refuse("a Unicode character class (\\s, \\d, \\w)")
            negated = any(op is _c.NEGATE for op, _ in items)
            return "[^\\x{0}-\\x{10ffff}]" if negated else "[\\x{0}-\\x{10ffff}]"
        out = []
        for op, av in items:
            if op is _c.NEGATE:
                out.append("^")
            elif op is _c.LITERAL:
                out.append(_char(av))
            elif op is _c.RANGE:
                out.append(f"{_char(av[0])}-{_char(av[1])}")
            else:
                raise self.refuse(str(op))
        return "[" + "".join(out) + "]"
