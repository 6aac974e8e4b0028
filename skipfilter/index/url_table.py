"""The urlpattern syntax's table: exact selectors by topic as published, URL Patterns by URL.

Mercure 1.0 holds both kinds for one subscriber, and they see a topic differently: an
exact selector compares it byte for byte, a URL Pattern compares its parsed URL, resolved
against the hub's URL. So the table looks a topic up by both at once: :func:`resolved`
turns an update's topics into one triple each, ``(published, key, indexed form)`` (see
:mod:`~skipfilter.selectors.urlpattern.canonical`; key and form None when the topic is no
URL), computed once per match (outside the index's lock) for both roles. :class:`UrlTable`
is a :class:`~skipfilter.index.table.SelectorTable` whose topics are those triples: it
reads the first in its exact map and hands the others to its
:class:`~skipfilter.index.url_index.UrlIndex`; its memos key on the whole triple, so a
relative topic resolved against two bases is two topics.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import cast

from skipfilter.core import Bitmap
from skipfilter.index.pattern import Pattern
from skipfilter.index.table import SelectorTable, Sids
from skipfilter.index.tuning import Tuning
from skipfilter.index.url_index import UrlIndex
from skipfilter.selectors.urlpattern import Resolver

__all__ = ["Triple", "UrlTable", "resolved"]

#: One topic as the table sees it: (as published, key, indexed form), or None twice.
Triple = tuple[str, str | None, str | None]


def resolved(topics: Sequence[str], resolver: Resolver) -> list[Triple]:
    """An update's topics as :data:`Triple` (see module), what :class:`UrlTable` looks up."""
    resolve = resolver.resolve
    return [(t, None, None) if (f := resolve(t)) is None else (t, f[0], f[1]) for t in topics]


class UrlTable(SelectorTable):
    """Exact selectors and ``*`` by topic as published; URL Patterns by canonical URL.

    A :class:`~skipfilter.index.table.SelectorTable` whose topics are :data:`Triple`
    (:func:`resolved`; its memos only hash them); not thread-safe (TopicIndex holds its lock).
    """

    def __init__(self, cache_size: int, tuning: Tuning) -> None:
        super().__init__("urlpattern", cache_size, tuning)
        self._collect_indexed = cast("UrlIndex", self._candidates).collect_indexed

    def collect(self, topic: str, found: list[Sids], patterns: list[Pattern]) -> Bitmap | None:
        """Append what a :data:`Triple` matches: exact subscribers by the topic as published,
        ``*`` subscribers, URL Patterns by the key and indexed form."""
        published, key, indexed = topic  # type: ignore[str-unpack]  # a Triple: see resolved
        exact = self._exact.get(published)
        if exact is not None:
            found.append(exact)
        if self._everything.sids:
            patterns.append(self._everything)
        if key is not None:
            self._collect_indexed(key, indexed, patterns)
        return None
