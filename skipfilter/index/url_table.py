"""The urlpattern syntax's table: exact selectors by topic as published, URL Patterns by URL.

Mercure 1.0 holds both kinds for one subscriber, and they see a topic differently: an
exact selector compares it byte for byte, a URL Pattern compares its parsed URL, resolved
against the hub's URL. :class:`UrlTable` keeps one
:class:`~skipfilter.index.table.SelectorTable` for each view and ORs their answers;
:class:`Resolved` carries both views of an update's topics, computed once per match
(outside the index's lock) for both roles (subscribed and allowed).
"""

from __future__ import annotations

from collections.abc import Sequence

from skipfilter.core import Bitmap
from skipfilter.index.table import SelectorTable
from skipfilter.index.tuning import Tuning
from skipfilter.index.url_index import url_topic
from skipfilter.selectors import EXACT, Selector
from skipfilter.selectors.urlpattern import Resolver

__all__ = ["Resolved", "UrlTable"]


class Resolved(tuple[str, ...]):
    """An update's topics as published, and ``urls``: the :func:`url_topic` of each topic
    that is a URL (against the base), in order."""

    urls: tuple[str, ...]

    def __new__(cls, topics: Sequence[str], resolver: Resolver) -> Resolved:
        resolved = super().__new__(cls, topics)
        urls = []
        for topic in resolved:
            found = resolver.canonical(topic)
            if found is not None:
                urls.append(url_topic(*found))
        resolved.urls = tuple(urls)
        return resolved


class UrlTable:
    """Exact selectors and ``*`` by topic as published; URL Patterns by canonical URL.

    The same methods as :class:`~skipfilter.index.table.SelectorTable`; not thread-safe
    (TopicIndex holds its lock).
    """

    __slots__ = ("_exact", "_patterns", "_resolver")

    def __init__(self, cache_size: int, tuning: Tuning, resolver: Resolver) -> None:
        """``resolver`` resolves the topics :meth:`answer` gets as a plain sequence."""
        self._exact = SelectorTable(EXACT, cache_size, tuning)
        self._patterns = SelectorTable("urlpattern", cache_size, tuning)
        self._resolver = resolver

    def register(self, exact: tuple[str, ...], patterns: tuple[Selector, ...], sid: int) -> None:
        """Add ``sid`` under its exact topics and its patterns (``*`` with the exact ones)."""
        everything = tuple(p for p in patterns if p.match_all)
        self._exact.register(exact, everything, sid)
        self._patterns.register((), tuple(p for p in patterns if not p.match_all), sid)

    def unregister(self, exact: tuple[str, ...], patterns: tuple[Selector, ...], sid: int) -> None:
        """Remove ``sid`` from what :meth:`register` added it to."""
        everything = tuple(p for p in patterns if p.match_all)
        self._exact.unregister(exact, everything, sid)
        self._patterns.unregister((), tuple(p for p in patterns if not p.match_all), sid)

    def answer(self, topics: Sequence[str]) -> Bitmap:
        """A fresh bitmap of the subscribers with a selector matching any of ``topics``
        (a :class:`Resolved`, or topics resolved here against the table's base)."""
        if not isinstance(topics, Resolved):
            topics = Resolved(topics, self._resolver)
        result = self._exact.answer(topics)
        if topics.urls:
            result |= self._patterns.answer(topics.urls)
        return result

    def known(self, text: str) -> Selector | None:
        """The compiled URL Pattern for ``text`` if a subscriber already holds it."""
        return self._patterns.known(text)

    def stats(self) -> dict[str, int]:
        exact, patterns = self._exact.stats(), self._patterns.stats()
        return {
            "exact_topics": exact["exact_topics"],
            **{k: v for k, v in patterns.items() if k != "exact_topics"},
        }
