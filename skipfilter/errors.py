"""Exceptions raised by skipfilter.

Every error names the bad part of the input, so a server can pass the message
straight back to its client as a 4xx body.
"""

from __future__ import annotations


class SkipFilterError(Exception):
    """Base class of every error skipfilter raises on purpose."""


class InvalidSelector(SkipFilterError, ValueError):
    """A topic selector that cannot be compiled in its syntax.

    ``selector`` is the offending text, ``column`` the 1-based position of the
    problem when one is known.
    """

    def __init__(self, message: str, selector: str = "", column: int | None = None) -> None:
        super().__init__(message)
        self.selector = selector
        self.column = column

    @classmethod
    def at(cls, what: str, text: str, column: int) -> InvalidSelector:
        """One whose message names the bad part, its column and the selector."""
        return cls(f"{what} at column {column} in {text!r}", text, column)


class PatternTooCostly(InvalidSelector):
    """A URL Pattern (or a subscription's patterns together) that would cost more to compile
    than a limit allows; refused before compiling. ``cost`` is the estimate, ``limit`` the
    limit passed (both in the units of :mod:`skipfilter.selectors.urlpattern.cost`), and the
    message names the limit."""

    def __init__(self, message: str, selector: str, cost: int, limit: int) -> None:
        super().__init__(message, selector, 1)
        self.cost = cost
        self.limit = limit


class MissingExtra(SkipFilterError, ImportError):
    """An optional part was used without the extra that installs what it needs.

    ``extra`` is the extra's name (``bench``); the message names the command that installs it
    where this copy came from (:func:`skipfilter.extras.install_command`).
    """

    def __init__(self, message: str, extra: str) -> None:
        super().__init__(message)
        self.extra = extra


class InvalidTopic(SkipFilterError, ValueError):
    """A topic an update is published on that its syntax refuses (MQTT ``a/+``, NATS ``a..b``).

    ``topic`` is the offending text, ``column`` the 1-based position of the problem.
    """

    def __init__(self, message: str, topic: str = "", column: int | None = None) -> None:
        super().__init__(message)
        self.topic = topic
        self.column = column
