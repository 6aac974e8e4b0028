"""A table over several selector syntaxes: the primary syntax's table and one per extra, ORed.

Mercure's compatibility mode holds 0.x selectors (URI templates) beside 1.0 URL Patterns,
for subscribers of one id space. :class:`MixedTable` keeps each syntax's patterns in a
:class:`~skipfilter.index.table.SelectorTable` of that syntax (its own candidate index
and memos, untouched by the other syntaxes' changes) and files every exact topic once, in
the primary's exact map, whatever syntax it was written in: an exact selector means the
same in all of them, the topic equal to it. A topic's answer is the primary's OR the
answer of each extra table that holds a pattern.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from skipfilter.core import Bitmap
from skipfilter.index.table import SelectorTable
from skipfilter.index.url_table import Triple, UrlTable
from skipfilter.selectors import Selector

__all__ = ["MixedTable"]


class MixedTable:
    """For a topic, the subscribers holding a selector of any syntax that matches it.

    The interface of :class:`~skipfilter.index.table.SelectorTable` that TopicIndex uses
    (register, unregister, answer, known, stats), over one table per syntax; not
    thread-safe (TopicIndex holds its lock).
    """

    def __init__(self, primary: SelectorTable, extras: Mapping[str, SelectorTable]) -> None:
        self._primary = primary
        self._extras = dict(extras)  # syntax -> the table of its patterns (no exact topics)
        self._active: tuple[SelectorTable, ...] = ()  # the extra tables holding a pattern
        # A urlpattern primary sees each topic as a Triple (url_table.resolved); the
        # others read the topic as published, its first element.
        self._published = isinstance(primary, UrlTable)

    def register(self, exact: tuple[str, ...], patterns: tuple[Selector, ...], sid: int) -> None:
        """Add ``sid`` under its exact topics (primary) and its patterns (their syntax's)."""
        own, others = self._routed(patterns)
        self._primary.register(exact, own, sid)
        for syntax, selectors in others.items():
            self._extras[syntax].register((), selectors, sid)
        if others:
            self._activate()

    def unregister(self, exact: tuple[str, ...], patterns: tuple[Selector, ...], sid: int) -> None:
        """Remove ``sid`` from what :meth:`register` added it to."""
        own, others = self._routed(patterns)
        self._primary.unregister(exact, own, sid)
        for syntax, selectors in others.items():
            self._extras[syntax].unregister((), selectors, sid)
        if others:
            self._activate()

    def _activate(self) -> None:
        """Note which extra tables an answer must ask: those holding a pattern."""
        self._active = tuple(t for t in self._extras.values() if t.holds_patterns())

    def _routed(
        self, patterns: tuple[Selector, ...]
    ) -> tuple[tuple[Selector, ...], dict[str, tuple[Selector, ...]]]:
        """``patterns`` split: (the primary's, the others by syntax)."""
        extras = self._extras
        own: list[Selector] = []
        others: dict[str, tuple[Selector, ...]] = {}
        for selector in patterns:
            if selector.syntax in extras:
                others[selector.syntax] = (*others.get(selector.syntax, ()), selector)
            else:
                own.append(selector)
        return tuple(own), others

    def answer(self, topics: Sequence[str]) -> Bitmap:
        """A fresh bitmap of the subscribers with a selector of any syntax matching any of
        ``topics``: the primary table's answer, ORed with each extra table's that holds a
        pattern."""
        result = self._primary.answer(topics)
        if not self._active:  # no subscriber holds a pattern of an extra syntax
            return result
        published = topics
        if self._published:
            triples: Sequence[Triple] = topics  # type: ignore[assignment]
            published = [t[0] for t in triples]
        for table in self._active:
            result |= table.answer(published)
        return result

    def holds_patterns(self) -> bool:
        """Whether a subscriber holds a selector, of any syntax, that is no exact topic."""
        return bool(self._active) or self._primary.holds_patterns()

    def exact_answer(self, topics: Sequence[str]) -> Bitmap:
        """The subscribers of ``topics`` as exact topics (all filed in the primary)."""
        return self._primary.exact_answer(topics)

    def known(self, text: str) -> Selector | None:
        """The primary syntax's compiled selector for ``text``, if a subscriber holds it."""
        return self._primary.known(text)

    def known_in(self, syntax: str, text: str) -> Selector | None:
        """The compiled ``syntax`` selector for ``text``, if a subscriber holds it."""
        return self._extras[syntax].known(text)

    def stats(self) -> dict[str, int]:
        """The primary table's sizes, then each extra table's, prefixed with its syntax."""
        stats = self._primary.stats()
        for syntax, table in self._extras.items():
            stats.update(
                {f"{syntax}_{k}": v for k, v in table.stats().items() if k != "exact_topics"}
            )
        return stats
