"""paho-mqtt's ``MQTTMatcher`` behind the :class:`~skipfilter.matcher.Matcher` interface.

:class:`PahoMatcher` is a third-party Python trie users run today; MQTT only. It
validates filters with :func:`~skipfilter.selectors.compile_selector` first, so it
refuses exactly the input every other implementation refuses.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Sequence
from itertools import count

from paho.mqtt.matcher import MQTTMatcher
from pyroaring import BitMap64

from skipfilter.baselines.base import validated_texts
from skipfilter.matcher import SelectorInput, registration
from skipfilter.selectors import topic_checker

__all__ = ["PahoMatcher"]


class _PahoRole:
    """One paho ``MQTTMatcher``: filter -> set of sids."""

    __slots__ = ("trie",)

    def __init__(self) -> None:
        self.trie = MQTTMatcher()  # type: ignore[no-untyped-call]

    def add(self, text: str, sid: int) -> None:
        try:
            sids: set[int] = self.trie[text]
        except KeyError:
            sids = self.trie[text] = set()
        sids.add(sid)

    def discard(self, text: str, sid: int) -> None:
        sids: set[int] = self.trie[text]
        sids.discard(sid)
        if not sids:
            del self.trie[text]  # type: ignore[no-untyped-call]

    def lookup(self, topic: str, out: set[int]) -> None:
        for sids in self.trie.iter_match(topic):  # type: ignore[no-untyped-call]
            out |= sids


class PahoMatcher:
    """paho-mqtt's ``MQTTMatcher`` (a plain Python trie) behind the Matcher interface; MQTT only.

    paho implements the ``$`` rule (wildcards at the first level skip ``$`` topics) and
    ``#`` matching the parent level, so its answers equal our MQTT semantics. It does
    not validate filters (``a/#/b`` would be stored); this adapter rejects them first.
    It is not thread-safe: one lock serialises every operation here.
    Runtime: :meth:`match` O(nodes visited) per topic, subscribe/unsubscribe O(levels).
    """

    def __init__(self, syntax: str = "mqtt") -> None:
        if syntax != "mqtt":
            raise ValueError(f"PahoMatcher supports mqtt selectors only, not {syntax!r}")
        self._ids = count()
        self._lock = threading.Lock()
        self._check_topics = topic_checker("mqtt")  # as TopicIndex checks them
        self._patterns: dict[int, tuple[tuple[str, ...], tuple[str, ...]]] = {}
        self._subscribed = _PahoRole()
        self._authorized = _PahoRole()

    @property
    def syntax(self) -> str:
        """Always ``"mqtt"``."""
        return "mqtt"

    def subscribe(
        self,
        selectors: Iterable[SelectorInput],
        allowed: Iterable[SelectorInput] | None = None,
        payload: object = None,
    ) -> int:
        """Store each filter's sid in the subscribed (and allowed) matcher; return the sid."""
        texts, authorized = registration(
            selectors, allowed, lambda items, what: validated_texts(items, "mqtt", what)
        )
        with self._lock:
            sid = next(self._ids)
            self._patterns[sid] = (texts, authorized)
            for text in texts:
                self._subscribed.add(text, sid)
            for text in authorized:
                self._authorized.add(text, sid)
        return sid

    def unsubscribe(self, sid: int) -> bool:
        """Remove every filter of ``sid``."""
        with self._lock:
            entry = self._patterns.pop(sid, None)
            if entry is None:
                return False
            for text in entry[0]:
                self._subscribed.discard(text, sid)
            for text in entry[1]:
                self._authorized.discard(text, sid)
            return True

    def match(self, topics: Sequence[str], private: bool = False) -> BitMap64:
        """``iter_match`` each topic; private: AND the allowed matcher's answer."""
        self._check_topics(topics)
        found: set[int] = set()
        lock = self._lock
        lock.acquire()  # as TopicIndex.match takes its lock (cheaper than `with`)
        try:
            for topic in topics:
                self._subscribed.lookup(topic, found)
            if private and found:
                allowed: set[int] = set()
                for topic in topics:
                    self._authorized.lookup(topic, allowed)
                found &= allowed
        finally:
            lock.release()
        return BitMap64(found)

    def __len__(self) -> int:
        return len(self._patterns)
