"""The urlpattern syntax's table: exact selectors by topic as published, URL Patterns by URL.

Mercure 1.0 holds both kinds for one subscriber, and they see a topic differently: an
exact selector compares it byte for byte, a URL Pattern compares its parsed URL, resolved
against the hub's URL. So the table looks a topic up by both at once: :class:`Resolved`
turns an update's topics into one string each, the topic as published, ``\\x01``, then
its indexed form (:func:`~skipfilter.selectors.urlpattern.canonical.indexed`; empty when
the topic is no URL), computed once per match (outside the index's lock) for both roles.
:class:`UrlTable` is a :class:`~skipfilter.index.table.SelectorTable` that reads the first
part in its exact map and hands the second to its
:class:`~skipfilter.index.url_index.UrlIndex`; its memos key on the whole string, so a
relative topic resolved against two bases is two topics.
"""

from __future__ import annotations

from collections.abc import Sequence

from skipfilter.core import Bitmap
from skipfilter.index.pattern import Pattern
from skipfilter.index.table import SelectorTable, Sids
from skipfilter.index.tuning import Tuning
from skipfilter.selectors.urlpattern import Resolver

__all__ = ["Resolved", "UrlTable"]

#: Between a topic as published and its indexed form, which holds no control character.
_JOIN = "\x01"


class Resolved(tuple[str, ...]):
    """An update's topics, each as ``published + "\\x01" + indexed form`` (see module)."""

    __slots__ = ()

    def __new__(cls, topics: Sequence[str], resolver: Resolver) -> Resolved:
        canonical = resolver.canonical
        return super().__new__(cls, (f"{t}{_JOIN}{canonical(t) or ''}" for t in topics))


class UrlTable(SelectorTable):
    """Exact selectors and ``*`` by topic as published; URL Patterns by canonical URL.

    A :class:`~skipfilter.index.table.SelectorTable` whose topics are :class:`Resolved`
    strings; not thread-safe (TopicIndex holds its lock).
    """

    def __init__(self, cache_size: int, tuning: Tuning, resolver: Resolver) -> None:
        """``resolver`` resolves the topics :meth:`answer` gets as a plain sequence."""
        super().__init__("urlpattern", cache_size, tuning)
        self._resolver = resolver

    def answer(self, topics: Sequence[str]) -> Bitmap:
        """A fresh bitmap of the subscribers with a selector matching any of ``topics``
        (a :class:`Resolved`, or topics resolved here against the table's base)."""
        if not isinstance(topics, Resolved):
            topics = Resolved(topics, self._resolver)
        return super().answer(topics)

    def collect(self, topic: str, found: list[Sids], patterns: list[Pattern]) -> Bitmap | None:
        """Append what a :class:`Resolved` topic matches: exact subscribers by the topic as
        published, ``*`` subscribers, URL Patterns by the indexed form."""
        published, _, url = topic.rpartition(_JOIN)
        exact = self._exact.get(published)
        if exact is not None:
            found.append(exact)
        if self._everything.sids:
            patterns.append(self._everything)
        if url:
            self._collect_patterns(url, patterns)
        return None
