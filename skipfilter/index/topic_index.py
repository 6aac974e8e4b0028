"""TopicIndex: Mercure delivery semantics at bitmap speed, even when every topic is new.

A hub's topics are usually new (``/users/613193cee6...``), so a cache keyed by topic
misses on every message. TopicIndex therefore indexes the *selectors*, not the
subscribers:

- exact selectors go through a hash map from topic to its subscribers (the id itself
  when there is one);
- selectors that match everything go in one bitmap;
- every other distinct selector is a pattern, stored once with the bitmap of the
  subscribers that hold it, in a candidate index that hands a topic only the patterns
  that can match it: by literal prefix and segment count for mercure and regex
  (:mod:`~skipfilter.index.prefix_index`), by shape or in a word trie for amqp, nats and
  mqtt (:mod:`~skipfilter.index.word_index`);
- for amqp, nats and mqtt, each subscriber's pattern also goes by subscriber id into
  per-level bitmaps, where a topic's subscribers are an AND over its levels
  (:mod:`~skipfilter.index.level_index`); per topic word count, the index learns which
  of the two answers cheaper (:mod:`~skipfilter.index.word_paths`);
- the union of the patterns a topic matches is memoized by which patterns they are, so
  never-seen topics of one shape (``/books/1``, ``/books/2``) share it, and a topic
  with a costly answer is memoized when it repeats.

A private update goes to subscribers that match it AND are authorized for one of its
topics: the same structure built over the ``allowed`` selectors, and one bitmap AND.

An index may hold selectors of several syntaxes (``extra_syntaxes``: Mercure's
compatibility mode, 0.x URI templates beside 1.0 URL Patterns): one table per syntax,
exact topics filed once, ORed per answer (:mod:`~skipfilter.index.mixed_table`).

Classes:

- :class:`TopicIndex` -- the index (its two tables: :mod:`~skipfilter.index.table`).
- :class:`Subscription` -- what one subscriber registered.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from itertools import count

from skipfilter.core import Bitmap
from skipfilter.errors import InvalidSelector
from skipfilter.index.mixed_table import MixedTable
from skipfilter.index.table import SelectorTable
from skipfilter.index.tuning import Tuning
from skipfilter.index.url_table import UrlTable, resolved
from skipfilter.matcher import check_selector_list
from skipfilter.selectors import (
    EXACT,
    SYNTAXES,
    WORD_SYNTAXES,
    Selector,
    TypedSelector,
    compile_selector,
    selector_type,
    topic_checker,
)
from skipfilter.selectors.topics import topics_type_error
from skipfilter.selectors.urlpattern import CostBudget, Resolver, compile_urlpattern, resolver

__all__ = ["Subscription", "TopicIndex"]


@dataclass(frozen=True, slots=True)
class Subscription:
    """What one subscriber registered: its selectors, its authorization, its payload.

    A selector in the index's syntax is a plain string; another (an exact topic in a
    ``urlpattern`` index, or one a plain string would not mean) a :class:`TypedSelector`.
    """

    selectors: tuple[str | TypedSelector, ...]
    allowed: tuple[str | TypedSelector, ...]
    payload: object


class _Entry:
    """One subscriber, stored compactly: exact selectors as plain strings.

    Strings and tuples of strings are not tracked by the garbage collector, which
    keeps a full collection's walk (and so subscribe's amortized cost) small.
    """

    __slots__ = ("allowed_exact", "allowed_patterns", "exact", "patterns", "payload")

    def __init__(
        self,
        split: tuple[tuple[str, ...], tuple[Selector, ...]],
        allowed: tuple[tuple[str, ...], tuple[Selector, ...]],
        payload: object,
    ) -> None:
        self.exact, self.patterns = split
        self.allowed_exact, self.allowed_patterns = allowed
        self.payload = payload


def _mercure_exact(text: str) -> bool:
    return "{" not in text and text != "*"


_AMQP = WORD_SYNTAXES["amqp"]


def _amqp_exact(text: str) -> bool:
    return _AMQP.single not in text and _AMQP.multi not in text


_MQTT = WORD_SYNTAXES["mqtt"]


def _mqtt_exact(text: str) -> bool:
    """A valid MQTT filter without wildcards: not empty, no ``+``, ``#`` or NUL."""
    wildcard = _MQTT.single in text or _MQTT.multi in text
    return bool(text) and not wildcard and _MQTT.refused_in(text) is None


_NATS = WORD_SYNTAXES["nats"]


def _nats_exact(text: str) -> bool:
    """A valid NATS subject without wildcards: no empty token, no ``*``, ``>`` or refused
    character (a ``*`` inside a token is literal to NATS; such rare subjects compile)."""
    sep = _NATS.delimiter
    wildcard = _NATS.single in text or _NATS.multi in text
    empty_token = not text or text[0] == sep or text[-1] == sep or sep + sep in text
    return not wildcard and not empty_token and _NATS.refused_in(text) is None


#: Per syntax, a check that a selector is a valid exact topic, cheaper than compiling it
#: (MQTT: half of an IoT filter set names one device's sensor; compiling one cost ~10 µs).
#: Must agree with compile_selector: True only where it compiles to that exact topic.
_PLAINLY_EXACT = {
    "mercure": _mercure_exact,
    "amqp": _amqp_exact,
    "nats": _nats_exact,
    "mqtt": _mqtt_exact,
}

#: A selector as subscribe takes it: a string in the index's syntax, or typed.
SelectorInput = str | TypedSelector

#: Syntaxes that cannot be an index's extra syntax, and why.
_NOT_EXTRA = {
    "urlpattern": "its base URL and topic resolution are the index's: make it the primary "
    "syntax and the others extra",
    "nats": "it refuses topics other syntaxes publish to (a..b, a.*): make it the primary "
    "syntax, whose topic rules the index applies",
    "mqtt": "it refuses topics other syntaxes publish to (a/+, ''): make it the primary "
    "syntax, whose topic rules the index applies",
}


def _checked_extras(syntax: str, extra_syntaxes: Iterable[str]) -> tuple[str, ...]:
    """``extra_syntaxes`` as a tuple, each a known syntax that may join ``syntax``."""
    if isinstance(extra_syntaxes, (str, bytes)):
        raise TypeError("extra_syntaxes must be a sequence of syntax names, not a single string")
    try:
        extras = tuple(extra_syntaxes)
    except TypeError:
        kind = type(extra_syntaxes).__name__
        raise TypeError(f"extra_syntaxes must be a sequence of syntax names, got {kind}") from None
    for extra in extras:
        if not isinstance(extra, str):
            raise TypeError(f"extra_syntaxes must be strings, got {type(extra).__name__}")
        if extra not in SYNTAXES:
            raise ValueError(
                f"unknown extra syntax {extra!r}; expected one of {', '.join(SYNTAXES)}"
            )
        if extra == syntax:
            raise ValueError(f"extra syntax {extra!r} is the index's own syntax")
        if extras.count(extra) > 1:
            raise ValueError(f"extra syntax {extra!r} is given twice")
        why = _NOT_EXTRA.get(extra)
        if why is not None:
            raise ValueError(f"{extra!r} cannot be an extra syntax: {why}")
    return extras


class TopicIndex:
    """Subscribers by topic selectors, with Mercure's public and private delivery rules.

    Methods for changing subscribers: :meth:`subscribe`, :meth:`unsubscribe`.
    Methods for matching: :meth:`match`, :meth:`payloads`.
    Methods for looking up: :meth:`get`, ``len()``, ``in``.

    Thread-safe and linearizable, like :class:`~skipfilter.core.SkipFilter`: once
    :meth:`unsubscribe` returns, no later match contains the subscriber; once
    :meth:`subscribe` returns, every later match that should contain it does.

    Example::

        >>> idx = TopicIndex("mercure")
        >>> books = idx.subscribe(["https://example.com/books/{id}"], payload="books")
        >>> alice = idx.subscribe(["/users/alice"], allowed=["/users/alice"], payload="alice")
        >>> sorted(idx.payloads(idx.match(["https://example.com/books/1", "/users/alice"])))
        ['alice', 'books']
        >>> list(idx.payloads(idx.match(["/users/alice"], private=True)))
        ['alice']

    Several syntaxes in one index (Mercure's compatibility mode: 0.x URI templates beside
    1.0 URL Patterns), one bitmap per update; a private update needs a subscribed selector
    and an allowed one, of any syntax each::

        >>> hub = "https://example.com/.well-known/mercure"
        >>> idx = TopicIndex("urlpattern", base_url=hub, extra_syntaxes=("mercure",))
        >>> v1 = idx.subscribe(["/books/:id"], payload="1.0")
        >>> v0 = idx.subscribe(
        ...     [TypedSelector("https://example.com/books/{id}", "mercure")],
        ...     allowed=[TypedSelector("https://example.com/books/:id", "urlpattern")],
        ...     payload="0.x",
        ... )
        >>> sorted(idx.payloads(idx.match(["https://example.com/books/1"])))
        ['0.x', '1.0']
        >>> list(idx.payloads(idx.match(["https://example.com/books/1"], private=True)))
        ['0.x']
        >>> idx.get(v0).selectors  # typed, so get() -> subscribe() round-trips
        (TypedSelector(text='https://example.com/books/{id}', syntax='mercure'),)
    """

    def __init__(
        self,
        syntax: str = "mercure",
        cache_size: int = 100_000,
        *,
        first_id: int = 0,
        tuning: Tuning | None = None,
        base_url: str | None = None,
        extra_syntaxes: Sequence[str] = (),
    ) -> None:
        """Make an empty index for selectors in ``syntax`` (one of :data:`SYNTAXES`).

        ``cache_size`` bounds, per group of selectors sharing a prefix, the LRU of
        per-topic results (only groups with many distinct selectors keep one), and
        each memo. ``first_id`` is the first subscriber id; ids are 64-bit and never
        reused. ``tuning`` sets how eagerly answers are memoized (defaults: :class:`Tuning`).
        ``base_url`` (``urlpattern`` only; Mercure: the hub's URL) is what relative URL
        Patterns and relative topics resolve against, unless a call gives its own.
        ``extra_syntaxes`` are syntaxes the index holds too, as :class:`TypedSelector`
        values (Mercure's compatibility mode: ``"mercure"`` beside ``"urlpattern"``); plain
        strings stay in ``syntax``, whose topic and ``base_url`` rules apply. ``urlpattern``,
        ``nats`` and ``mqtt`` can only be the primary syntax (ValueError saying why).
        """
        if syntax not in SYNTAXES:
            raise ValueError(f"unknown syntax {syntax!r}; expected one of {', '.join(SYNTAXES)}")
        if isinstance(cache_size, bool) or not isinstance(cache_size, int):
            raise TypeError(f"cache_size must be an int, got {type(cache_size).__name__}")
        if cache_size <= 0:
            raise ValueError(f"cache_size must be positive, got {cache_size}")
        self._syntax = syntax
        self._lock = threading.Lock()
        self._check_topics = topic_checker(syntax)
        if not 0 <= first_id < 2**64:
            raise ValueError(f"first_id must be in [0, 2**64), got {first_id}")
        self._ids = count(first_id)
        self._entries: dict[int, _Entry] = {}
        self._plainly_exact = _PLAINLY_EXACT.get(syntax)
        if tuning is not None and not isinstance(tuning, Tuning):
            raise TypeError(f"tuning must be a Tuning, got {type(tuning).__name__}")
        self._tuning = tuning if tuning is not None else Tuning()
        self._base_url = base_url
        self._subscribed: SelectorTable | MixedTable
        self._authorized: SelectorTable | MixedTable
        self._resolver: Resolver | None = None  # urlpattern: topics to their URLs
        self._extras = _checked_extras(syntax, extra_syntaxes)
        if syntax == "urlpattern":
            self._resolver = resolver(base_url)  # ValueError for a base that is no URL
            self._subscribed = UrlTable(cache_size, self._tuning)
            self._authorized = UrlTable(cache_size, self._tuning)
        else:
            if base_url is not None:
                raise ValueError(f"base_url applies to the urlpattern syntax, not {syntax!r}")
            self._subscribed = SelectorTable(syntax, cache_size, self._tuning)
            self._authorized = SelectorTable(syntax, cache_size, self._tuning)
        # Per extra syntax, its tables (subscribed, allowed): the mixed tables' parts.
        self._extra_tables: dict[str, tuple[SelectorTable, SelectorTable]] = {
            extra: (
                SelectorTable(extra, cache_size, self._tuning),
                SelectorTable(extra, cache_size, self._tuning),
            )
            for extra in self._extras
        }
        if self._extras:
            subscribed = {extra: pair[0] for extra, pair in self._extra_tables.items()}
            authorized = {extra: pair[1] for extra, pair in self._extra_tables.items()}
            self._subscribed = MixedTable(self._subscribed, subscribed)
            self._authorized = MixedTable(self._authorized, authorized)

    @property
    def syntax(self) -> str:
        """The selector syntax of this index (that of plain strings)."""
        return self._syntax

    @property
    def extra_syntaxes(self) -> tuple[str, ...]:
        """The other syntaxes the index holds, as :class:`TypedSelector` values."""
        return self._extras

    def _split(
        self,
        selectors: Iterable[SelectorInput],
        what: str,
        base_url: str | None,
        budget: CostBudget,
    ) -> tuple[tuple[str, ...], tuple[Selector, ...]]:
        """Validate and compile ``selectors``: (exact topics, other selectors), deduplicated;
        URL Patterns compiled anew spend from ``budget``."""
        check_selector_list(selectors, what)
        exact: dict[str, None] = {}
        patterns: dict[Selector, None] = {}
        plain = self._plainly_exact
        syntax = self._syntax
        extras = self._extras
        for item in selectors:
            text, kind = selector_type(item, syntax, what, extras)
            if kind == EXACT:
                exact[text] = None
                continue
            if kind != syntax:  # an extra syntax's
                extra_plain = _PLAINLY_EXACT.get(kind)
                if extra_plain is not None and extra_plain(text):
                    exact[text] = None
                    continue
                selector = self._extra_selector(text, kind)
            elif plain is not None and plain(text):
                exact[text] = None
                continue
            else:
                held = self._subscribed.known(text) or self._authorized.known(text)
                if held is None or (held.base is not None and held.base != base_url):
                    held = self._compile(text, base_url, budget)
                selector = held
            if selector.exact is not None:
                exact[selector.exact] = None
            else:
                patterns[selector] = None
        return tuple(exact), tuple(patterns)

    def _extra_selector(self, text: str, syntax: str) -> Selector:
        """``text`` compiled in the extra syntax ``syntax``, or the selector held already."""
        subscribed, authorized = self._extra_tables[syntax]
        return subscribed.known(text) or authorized.known(text) or compile_selector(text, syntax)

    def _compile(self, text: str, base_url: str | None, budget: CostBudget) -> Selector:
        """``text`` compiled in the index's syntax. A URL Pattern's selector drops the base
        when the pattern is absolute, so it is one selector whatever the subscription's base;
        it is compiled once (the package is tried without the base first, which costs
        microseconds for a relative pattern)."""
        if self._syntax != "urlpattern":
            return compile_selector(text, self._syntax)
        return compile_urlpattern(text, base_url, keep_base=False, budget=budget)

    def subscribe(
        self,
        selectors: Iterable[SelectorInput],
        allowed: Iterable[SelectorInput] | None = None,
        payload: object = None,
        *,
        base_url: str | None = None,
    ) -> int:
        """Add a subscriber; return its id (never reused).

        ``selectors`` are the topics it subscribes to; ``allowed`` the selectors it is
        authorized for (the JWT ``mercure.subscribe`` claim; None: no private
        updates). Each is a string in the index's syntax or a :class:`TypedSelector`
        (``"exact"``, the index's syntax or an extra one). ``base_url`` (``urlpattern``
        only; default: the index's) resolves this subscriber's relative URL Patterns. Raises
        :class:`~skipfilter.errors.InvalidSelector` before changing anything if a selector
        does not compile, :class:`~skipfilter.errors.PatternTooCostly` if a URL Pattern
        would cost more than ``PATTERN_COST_LIMIT`` to compile, or the patterns compiled
        for this call more than ``SUBSCRIPTION_COST_LIMIT`` together
        (:mod:`skipfilter.selectors.urlpattern.cost`). Runtime: O(number of selectors),
        plus a compile for each selector no subscriber holds yet (not for a plainly
        literal URL Pattern).
        """
        base = self._base_for(base_url)
        budget = CostBudget()
        split = self._split(selectors, "selectors", base, budget)
        if not split[0] and not split[1]:
            raise ValueError("a subscriber needs at least one selector")
        authorized = (
            self._split(allowed, "allowed", base, budget) if allowed is not None else ((), ())
        )
        entry = _Entry(split, authorized, payload)
        with self._lock:
            sid = next(self._ids)
            self._entries[sid] = entry
            self._subscribed.register(entry.exact, entry.patterns, sid)
            self._authorized.register(entry.allowed_exact, entry.allowed_patterns, sid)
        return sid

    def unsubscribe(self, sid: int) -> bool:
        """Remove a subscriber; return whether it was subscribed. O(its selectors)."""
        with self._lock:
            entry = self._entries.pop(sid, None)
            if entry is None:
                return False
            self._subscribed.unregister(entry.exact, entry.patterns, sid)
            self._authorized.unregister(entry.allowed_exact, entry.allowed_patterns, sid)
            return True

    def _base_for(self, base_url: str | None) -> str | None:
        """The base URL of one call: its own, else the index's; checked."""
        if base_url is None:
            return self._base_url
        if self._syntax != "urlpattern":
            raise ValueError(f"base_url applies to the urlpattern syntax, not {self._syntax!r}")
        resolver(base_url)  # ValueError for a base that is no absolute URL
        return base_url

    def match(
        self, topics: Sequence[str], private: bool = False, *, base_url: str | None = None
    ) -> Bitmap:
        """Return the ids of the subscribers an update on ``topics`` goes to.

        Public: those with a selector matching any topic. Private: those, AND with
        an allowed selector matching any topic (possibly another one). The result
        is a fresh bitmap. Runtime per topic, independent of the number of
        subscribers: one exact-map probe, then a few prefix probes and the tests of
        the selectors filed under the topic's prefix and segment count (mercure,
        regex), or for amqp, nats and mqtt either a probe per pattern shape (or a walk of
        the word trie) and an OR per matched pattern, or one AND per topic word in the
        level index, whichever is cheaper for such topics; then one copy of the union for
        the topics' shape. Raises :class:`~skipfilter.errors.InvalidTopic` for a topic
        the syntax cannot publish to (MQTT ``a/+``, NATS ``a..b``).

        ``urlpattern``: exact selectors compare the topics as given, URL Patterns their
        canonical URLs, relative ones resolved against ``base_url`` (default: the
        index's); a topic that is no URL matches no URL Pattern.
        """
        try:  # no check up front: a wrong type fails below, and is named then
            self._check_topics(topics)
            # only exact topics filed: no URL to resolve, no memo to keep (asked again
            # under the lock: a pattern filed meanwhile sends the match the long way)
            if base_url is None and not self._subscribed.holds_patterns():
                lock = self._lock
                lock.acquire()
                try:
                    table = self._subscribed
                    if not table.holds_patterns():
                        result = table.exact_answer(topics)
                        if not (private and result):
                            return result
                        if not self._authorized.holds_patterns():
                            result &= self._authorized.exact_answer(topics)
                            return result
                finally:
                    lock.release()
            keys = topics
            if self._resolver is not None:  # each topic as published and as a URL: url_table
                keys = resolved(  # type: ignore[assignment]
                    topics,
                    self._resolver if base_url is None else resolver(self._base_for(base_url)),
                )
            elif base_url is not None:
                self._base_for(base_url)
            lock = self._lock
            lock.acquire()  # not `with`: half the cost, on the per-message path
            try:
                result = self._subscribed.answer(keys)
                if private and result:
                    result &= self._authorized.answer(keys)
                return result
            finally:
                lock.release()
        except (TypeError, AttributeError, KeyError, IndexError):
            named = topics_type_error(topics)
            if named is None:
                raise
            raise named from None

    def payloads(self, sids: Iterable[int]) -> Iterator[object]:
        """Yield the payload of each id in ``sids`` still subscribed, in id order."""
        entries = self._entries
        for sid in sids:
            entry = entries.get(sid)
            if entry is not None:
                yield entry.payload

    def get(self, sid: int) -> Subscription | None:
        """Return what subscriber ``sid`` registered, or None. O(1)."""
        entry = self._entries.get(sid)
        if entry is None:
            return None
        shown = self._shown
        pattern = self._shown_pattern
        texts = (*map(shown, entry.exact), *map(pattern, entry.patterns))
        allowed = (*map(shown, entry.allowed_exact), *map(pattern, entry.allowed_patterns))
        return Subscription(texts, allowed, entry.payload)

    def _shown_pattern(self, selector: Selector) -> str | TypedSelector:
        """A pattern as :meth:`get` returns it: plain in the index's syntax, else typed."""
        if selector.syntax == self._syntax:
            return selector.text
        return TypedSelector(selector.text, selector.syntax)

    def _shown(self, topic: str) -> str | TypedSelector:
        """An exact topic as :meth:`get` returns it: plain if it means itself in the syntax."""
        if self._syntax != "urlpattern":
            plain = self._plainly_exact
            if plain is not None and plain(topic):
                return topic
            try:
                if compile_selector(topic, self._syntax).exact == topic:
                    return topic
            except InvalidSelector:
                pass
        return TypedSelector(topic, EXACT)

    def __len__(self) -> int:
        """Number of subscribers."""
        return len(self._entries)

    def __contains__(self, sid: object) -> bool:
        return sid in self._entries

    def stats(self) -> dict[str, int]:
        """Sizes of the internal tables, for metrics and tuning."""
        with self._lock:
            stats = {"subscribers": len(self._entries)}
            stats.update({f"subscribed_{k}": v for k, v in self._subscribed.stats().items()})
            stats.update({f"allowed_{k}": v for k, v in self._authorized.stats().items()})
            return stats

    def __repr__(self) -> str:
        extras = f", extra_syntaxes={self._extras!r}" if self._extras else ""
        return f"TopicIndex(syntax={self._syntax!r}{extras}, subscribers={len(self)})"
