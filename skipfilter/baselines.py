"""What users run today, each a fair and competent implementation of :class:`Matcher`.

- :class:`LinearScan` -- test every subscriber's compiled selectors per message
  (the Mercure hub up to 0.13).
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Sequence
from itertools import count

from pyroaring import BitMap64

from skipfilter.selectors import SYNTAXES, Selector, compile_selector

__all__ = ["LinearScan"]


def _compile_all(selectors: Iterable[str], syntax: str, what: str) -> tuple[Selector, ...]:
    if isinstance(selectors, str | bytes):
        raise TypeError(f"{what} must be a list of selectors, not a single string")
    return tuple(dict.fromkeys(compile_selector(text, syntax) for text in selectors))


class LinearScan:
    """Every subscriber's precompiled selectors tested against every topic, per message.

    Short-circuits on the first matching selector. Runtime of :meth:`match`:
    O(subscribers x selectors x topics); subscribe and unsubscribe O(1).
    """

    def __init__(self, syntax: str = "mercure") -> None:
        if syntax not in SYNTAXES:
            raise ValueError(f"unknown syntax {syntax!r}; expected one of {', '.join(SYNTAXES)}")
        self._syntax = syntax
        self._ids = count()
        self._lock = threading.Lock()
        self._subscribers: dict[int, tuple[tuple[Selector, ...], tuple[Selector, ...]]] = {}

    @property
    def syntax(self) -> str:
        """The selector syntax."""
        return self._syntax

    def subscribe(
        self, selectors: Iterable[str], allowed: Iterable[str] | None = None, payload: object = None
    ) -> int:
        """Add a subscriber with its compiled selectors; return its id."""
        compiled = _compile_all(selectors, self._syntax, "selectors")
        if not compiled:
            raise ValueError("a subscriber needs at least one selector")
        authorized = _compile_all(allowed, self._syntax, "allowed") if allowed is not None else ()
        with self._lock:
            sid = next(self._ids)
            self._subscribers[sid] = (compiled, authorized)
        return sid

    def unsubscribe(self, sid: int) -> bool:
        """Remove a subscriber."""
        with self._lock:
            return self._subscribers.pop(sid, None) is not None

    def match(self, topics: Sequence[str], private: bool = False) -> BitMap64:
        """Test every subscriber; Mercure rules for private updates."""
        if isinstance(topics, str | bytes):
            raise TypeError("topics must be a list of topics, not a single string")
        result = BitMap64()
        with self._lock:
            items = list(self._subscribers.items())
        for sid, (selectors, authorized) in items:
            if any(s.matches(t) for s in selectors for t in topics) and (
                not private or any(a.matches(t) for a in authorized for t in topics)
            ):
                result.add(sid)
        return result

    def __len__(self) -> int:
        return len(self._subscribers)
