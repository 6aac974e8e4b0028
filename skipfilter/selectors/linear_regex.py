"""The ``regex`` syntax's engine: RE2 (``google-re2``), which matches in time linear in the
topic whatever the pattern, where Python's backtracking ``re`` took 12 s for ``(a+)+$`` on
one 29-character topic.

RE2's syntax is Python's without the constructs that need backtracking: backreferences
(``\\1``, ``(?P=name)``), lookahead and lookbehind (``(?=``, ``(?!``, ``(?<=``, ``(?<!``),
possessive and atomic forms, and conditionals are refused, naming the construct. A
compiled program may take at most :data:`MAX_MEM` bytes (a bigger one is refused, not
built), and a counted repetition at most 1,000 copies.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Final

import re2  # type: ignore[import-untyped]

from skipfilter.errors import InvalidSelector

__all__ = ["MAX_MEM", "compile_linear", "is_linear_test"]

#: The most memory RE2 may give one compiled pattern, its matching caches included (RE2's
#: default): ``\\p{L}{1000}`` is refused, ``\\p{L}{100}`` compiles in milliseconds.
MAX_MEM: Final = 8 << 20

_OPTIONS: Final = re2.Options()
_OPTIONS.max_mem = MAX_MEM
_OPTIONS.log_errors = False  # RE2 would print each refusal to stderr

# What Python's re reads that RE2 refuses, by the text that starts it, with its name.
_BACKTRACKING: Final = (
    (re.compile(r"\\[1-9]|\(\?P="), "a backreference"),
    (re.compile(r"\(\?<?[=!]"), "a lookaround assertion"),
    (re.compile(r"\(\?>|[*+?}][+]"), "an atomic group or possessive repeat"),
    (re.compile(r"\(\?\("), "a conditional group"),
)


def compile_linear(text: str) -> Callable[[str], object]:
    """RE2's full match of ``text``; :class:`~skipfilter.errors.InvalidSelector` naming what
    RE2 cannot take (a backtracking construct, a program past :data:`MAX_MEM`, bad syntax)."""
    try:
        return _FullMatch(re2.compile(text, _OPTIONS))
    except re2.error as exc:
        reason = exc.args[0] if exc.args else exc
        if isinstance(reason, bytes):
            reason = reason.decode("utf-8", "replace")
        for construct, name in _BACKTRACKING:
            found = construct.search(text)
            if found is not None:
                raise InvalidSelector.at(
                    f"bad regex ({name} {found.group()!r}: the regex syntax is RE2's, which "
                    "matches in linear time and has none)",
                    text,
                    found.start() + 1,
                ) from exc
        if "too large" in str(reason):
            reason = f"{reason}: more than {MAX_MEM:,} bytes of program"
        raise InvalidSelector.at(f"bad regex ({reason})", text, _column(text)) from exc
    except (TypeError, UnicodeEncodeError) as exc:  # a lone surrogate is no UTF-8
        raise InvalidSelector.at(f"bad regex ({exc})", text, 1) from exc


def _column(text: str) -> int:
    """Where Python's parser finds ``text`` wrong (RE2 says what, not where), else 1."""
    try:
        re.compile(text)  # parsing only: nothing is matched
    except re.error as exc:
        return exc.pos + 1 if exc.pos is not None else 1
    except (OverflowError, RecursionError, ValueError):
        return 1
    return 1


class _FullMatch:
    """A compiled RE2 pattern's full match; a topic that is no UTF-8 (a lone surrogate)
    matches nothing instead of raising."""

    __slots__ = ("fullmatch", "pattern")

    def __init__(self, compiled: re2._Regexp) -> None:
        self.fullmatch = compiled.fullmatch
        self.pattern: str = compiled.pattern

    def __call__(self, topic: str) -> object:
        try:
            return self.fullmatch(topic)
        except UnicodeEncodeError:
            return None


def is_linear_test(test: object) -> str | None:
    """The pattern of a test :func:`compile_linear` made, else None."""
    return test.pattern if isinstance(test, _FullMatch) else None
