"""URL Patterns filed by what every topic they match must have: the urlpattern candidate index.

A topic reaches this index in its indexed form
(:func:`~skipfilter.selectors.urlpattern.canonical.indexed`: the index key, then a
canonical absolute URL), never as published: URL Patterns compare parsed URLs, so
``https://EXAMPLE.com:443`` and ``https://example.com/`` must meet the same patterns.
Each distinct pattern is filed by its :class:`~skipfilter.selectors.urlpattern.UrlFacts`:

- ``literal`` patterns in a hash map by key (protocol, host, port, path): one probe, no
  test unless the pattern also fixes username, password, search or hash;
- ``origin`` patterns (``https://example.com/books/:id``) in a
  :class:`~skipfilter.index.prefix_index.PrefixIndex` over the key: only those whose
  protocol, host, port and literal path start fit the topic are tested, and only if their
  path has the topic's number of ``/`` (or no fixed number);
- ``host`` patterns (``https://*.example.com/*``, ``*://example.com/x``) in a second one
  over the reversed host name and the path;
- the rest (``*://*/*``) are tested for every topic.
"""

from __future__ import annotations

import dataclasses

from skipfilter.index.pattern import Pattern
from skipfilter.index.prefix_index import PrefixIndex
from skipfilter.selectors.urlpattern import UrlFacts, host_key
from skipfilter.selectors.urlpattern.canonical import SEPARATOR

__all__ = ["UrlIndex"]


def _facts(pattern: Pattern) -> UrlFacts:
    assert pattern.selector is not None and pattern.selector.url is not None
    return pattern.selector.url


class UrlIndex:
    """Distinct URL patterns filed by literal key, origin and path prefix, or host suffix.

    :meth:`collect` appends, for a topic (in its indexed form), exactly the patterns that
    match it. Runtime: one dict probe, then the prefix probes and tests of
    :class:`~skipfilter.index.prefix_index.PrefixIndex` per non-empty filing, then one
    test per unfiled pattern.
    """

    __slots__ = ("_any", "_by_host", "_by_origin", "_filed", "_hosts", "_literal")

    def __init__(self, cache_size: int, threshold: int) -> None:
        """``cache_size`` and ``threshold`` are the prefix indexes' (see PrefixIndex)."""
        self._literal: dict[str, list[Pattern]] = {}
        self._by_origin = PrefixIndex("/", cache_size, threshold)
        self._by_host = PrefixIndex("/", cache_size, threshold)
        self._hosts = 0  # patterns in _by_host: a topic computes its host key only if any
        self._any: list[Pattern] = []
        # pattern -> the pattern filed in a prefix index in its place: the same subscribers,
        # a selector whose prefix, segments and test are in the index's terms.
        self._filed: dict[Pattern, Pattern] = {}

    def add(self, pattern: Pattern) -> None:
        """File a new distinct pattern."""
        facts = _facts(pattern)
        if facts.filing == "literal":
            pattern.tested = facts.tested
            self._literal.setdefault(facts.key, []).append(pattern)
            return
        assert pattern.selector is not None
        selector = dataclasses.replace(
            pattern.selector, prefix=facts.key, segments=facts.segments, test=facts.test
        )
        filed = self._filed[pattern] = Pattern(selector, pattern.sids)
        if facts.filing == "origin":
            self._by_origin.add(filed)
        elif facts.filing == "host":
            self._by_host.add(filed)
            self._hosts += 1
        else:
            self._any.append(filed)

    def remove(self, pattern: Pattern) -> None:
        """Unfile a pattern no subscriber holds any more."""
        facts = _facts(pattern)
        if facts.filing == "literal":
            same_key = self._literal[facts.key]
            same_key.remove(pattern)
            if not same_key:
                del self._literal[facts.key]
            return
        filed = self._filed.pop(pattern)
        if facts.filing == "origin":
            self._by_origin.remove(filed)
        elif facts.filing == "host":
            self._by_host.remove(filed)
            self._hosts -= 1
        else:
            self._any.remove(filed)

    def collect(self, topic: str, out: list[Pattern]) -> None:
        """Append every filed pattern that matches ``topic`` (in its indexed form)."""
        self.collect_indexed(topic[: topic.index(SEPARATOR)], topic, out)

    def collect_indexed(self, key: str, topic: str, out: list[Pattern]) -> None:
        """:meth:`collect` given the topic's key too (the start of its indexed form)."""
        literal = self._literal.get(key)
        if literal is not None:
            for pattern in literal:
                if not pattern.tested or _facts(pattern).test(topic):
                    out.append(pattern)
        if self._filed:
            self._by_origin.collect(topic, out, key)
            if self._hosts:
                _, host, _, pathname = key.split("\n")
                self._by_host.collect(topic, out, host_key(host, pathname))
            for pattern in self._any:
                assert pattern.selector is not None
                if pattern.selector.test(topic):
                    out.append(pattern)

    def stats(self) -> dict[str, int]:
        """Pattern counts by filing, for metrics and tuning."""
        origin, host = self._by_origin.stats(), self._by_host.stats()
        return {
            "literal_keys": len(self._literal),
            "prefix_groups": origin["prefix_groups"],
            "cached_groups": origin["cached_groups"] + host["cached_groups"],
            "host_groups": host["prefix_groups"],
            "unfiled_patterns": len(self._any),
        }
