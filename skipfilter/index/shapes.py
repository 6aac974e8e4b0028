"""Word-syntax patterns by *shape*: one hash probe per shape instead of a trie walk.

Filter sets written by programs follow a few templates: ``site7/+/temp``,
``site7/dev81/#``, ``+/dev81/+`` are three shapes however many sites and devices they
name. A shape is where a pattern's literal words stand and whether a multi wildcard ends
it; within a shape a pattern is known by its literal words. So a topic of n words finds
its patterns with one dict probe per shape that fits n words, keyed by the topic's words
at that shape's literal positions (``operator.itemgetter``, in C): on the IoT workloads
about half the cost of walking the word trie. Where shapes are many (AMQP-style sets,
dozens per word count) the trie's walk is cheaper; :meth:`ShapeIndex.probes` tells the
caller how many a word count has.

A key files the pattern's holder bitmap itself, not the pattern: a probe's hit is ORed
at once, and each object between the dict and the ids is one more cold read per matched
pattern (docs/topic-index.md measures it). Only patterns proved by their words are filed
here, so no two share a key; those with words after a multi wildcard (AMQP ``a.#.b``)
need their test and stay in the word trie.

- :class:`ShapeIndex` -- holder bitmaps of distinct patterns, by shape.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from operator import itemgetter

from skipfilter.core import Bitmap
from skipfilter.index.pattern import Pattern
from skipfilter.selectors import WordSyntax

__all__ = ["Probe", "ShapeIndex", "needs_test"]

#: Where a pattern's literal words stand, where its multi wildcard starts (its number of
#: words before it, or of all its words when it has none) and whether it has one.
Shape = tuple[tuple[int, ...], int, bool]

#: Word counts whose probes are kept at once (topics of unusual lengths come and go).
PROBE_SETS = 64

#: One shape, ready for a topic: its key from the topic's words, its holders by key.
Probe = tuple[Callable[[list[str]], Hashable], dict[Hashable, Bitmap]]


def needs_test(words: list[str], syntax: WordSyntax) -> bool:
    """Whether a pattern's words may find it for a topic it does not match: neither the
    shapes nor the word trie look at the words after the multi wildcard (AMQP ``a.#.b``),
    the only place a syntax allows them."""
    return syntax.multi in words[:-1]


def _no_literal(words: list[str]) -> Hashable:
    return ()


class ShapeIndex:
    """Distinct patterns' holder bitmaps, filed by shape, then by their literal words.

    The :meth:`probes` of a topic find the holders of exactly the patterns that match it:
    MQTT's ``$`` rule and the multi wildcard's least word count are applied, and a pattern
    with words after its multi wildcard is never filed (:meth:`add` refuses it). Runtime:
    :meth:`add` and :meth:`remove` O(pattern words); a topic, one dict probe per shape
    fitting its word count. Not thread-safe (TopicIndex's lock).
    """

    __slots__ = ("_multi", "_multi_min", "_probes", "_shapes", "_single", "_syntax")

    def __init__(self, syntax: WordSyntax) -> None:
        self._syntax = syntax
        self._single, self._multi, self._multi_min = syntax.single, syntax.multi, syntax.multi_min
        self._shapes: dict[Shape, dict[Hashable, Bitmap]] = {}
        # (word count, '$' topic) -> the probes of the shapes fitting it; rebuilt lazily
        # when a shape appears or goes (rare: shapes are few, patterns many).
        self._probes: dict[tuple[int, bool], tuple[Probe, ...]] = {}

    def __len__(self) -> int:
        """Number of distinct shapes."""
        return len(self._shapes)

    def _place(self, pattern: Pattern) -> tuple[Shape, Hashable]:
        """A pattern's shape and its key within it."""
        assert pattern.selector is not None
        words = self._syntax.words(pattern.selector.text)
        if needs_test(words, self._syntax):
            raise ValueError(f"{pattern.selector.text!r} has words after its multi wildcard")
        multi = words.index(self._multi) if self._multi in words else -1
        head = words if multi < 0 else words[:multi]
        literals = tuple(i for i, word in enumerate(head) if word != self._single)
        key = tuple(head[i] for i in literals)
        return (literals, len(head), multi >= 0), key[0] if len(key) == 1 else key

    def add(self, pattern: Pattern) -> bool:
        """File a new distinct pattern's holders (``pattern.sids``, kept current by the
        caller); return whether its shape is new (the probes of some word counts changed).
        Raises ValueError for a pattern with words after its multi wildcard."""
        shape, key = self._place(pattern)
        by_key = self._shapes.get(shape)
        new = by_key is None
        if by_key is None:
            by_key = self._shapes[shape] = {}
            self._probes.clear()
        assert key not in by_key, "distinct patterns of one shape have distinct words"
        by_key[key] = pattern.sids
        return new

    def remove(self, pattern: Pattern) -> bool:
        """Unfile a pattern no subscriber holds any more; return whether its shape went."""
        shape, key = self._place(pattern)
        by_key = self._shapes[shape]
        del by_key[key]
        if by_key:
            return False
        del self._shapes[shape]
        self._probes.clear()
        return True

    def probes(self, n: int, dollar: bool) -> tuple[Probe, ...]:
        """The probes for a topic of ``n`` words (``dollar``: one starting with ``$`` under
        MQTT's rule): for each, ``by_key.get(key(words))`` is the holder bitmap of the
        pattern of that shape matching the topic's ``words``, or None."""
        probes = self._probes.get((n, dollar))
        if probes is not None:
            return probes
        fitting = []
        for (literals, head, multi), by_key in self._shapes.items():
            fits = head + self._multi_min <= n if multi else head == n
            wild_first = not literals or literals[0] != 0
            if fits and not (dollar and wild_first):
                getter = itemgetter(*literals) if literals else _no_literal
                fitting.append((getter, by_key))
        if len(self._probes) >= PROBE_SETS:
            self._probes.clear()
        probes = self._probes[n, dollar] = tuple(fitting)
        return probes
