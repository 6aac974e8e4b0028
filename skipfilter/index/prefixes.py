"""Which prefix lengths are worth probing for a topic, in one dict probe.

TopicIndex groups its selectors by literal prefix; a topic must find every group whose
prefix it starts with. Probing ``topic[:n]`` for every distinct prefix length n costs
one slice, hash and dict probe per length (nine lengths for the 42 shared templates of
the mercure workload). Prefixes in a hub share long heads (``https://example.com/``
then a section), so :class:`PrefixLengths` keys the lengths by the head
``prefix[:h]``, with ``h`` the shortest non-empty prefix length: a topic then probes
only the lengths of prefixes that begin as it does (three instead of nine there).
"""

from __future__ import annotations

from collections import Counter

__all__ = ["PrefixLengths"]


class PrefixLengths:
    """A multiset of prefixes, asked "which lengths n might make ``topic[:n]`` one of you".

    Runtime: :meth:`lengths` is one slice and one dict probe. :meth:`add` and
    :meth:`remove` are O(1) plus a sort of the lengths under one head, except when a
    non-empty prefix shorter than all others arrives: one O(n) rebuild then. After
    removals the head length may be shorter than the shortest prefix; that is still
    exact, only less selective.
    """

    __slots__ = ("_by_head", "_counts", "_head", "_heads", "_none")

    def __init__(self) -> None:
        self._counts: Counter[str] = Counter()  # prefix -> how many times added
        self._head = 0  # every non-empty prefix is at least this long
        self._by_head: dict[str, Counter[int]] = {}  # head -> length -> distinct prefixes
        self._heads: dict[str, tuple[int, ...]] = {}  # head -> lengths to probe, ascending
        self._none: tuple[int, ...] = ()  # for a topic whose head no prefix has

    def add(self, prefix: str) -> None:
        """Count ``prefix`` in (a prefix may be added several times)."""
        self._counts[prefix] += 1
        if self._counts[prefix] > 1:
            return
        if prefix and (not self._head or len(prefix) < self._head):
            self._rebuild(len(prefix))
        else:
            self._count(prefix, 1)

    def remove(self, prefix: str) -> None:
        """Count ``prefix`` out; KeyError if it was not added."""
        if prefix not in self._counts:
            raise KeyError(prefix)
        self._counts[prefix] -= 1
        if not self._counts[prefix]:
            del self._counts[prefix]
            self._count(prefix, -1)

    def lengths(self, topic: str) -> tuple[int, ...]:
        """Ascending lengths n such that every prefix of ``topic`` in the set is a
        ``topic[:n]`` (some may not be: the caller's own probe decides)."""
        return self._heads.get(topic[: self._head], self._none)

    def _count(self, prefix: str, delta: int) -> None:
        """Add ``delta`` to the distinct prefixes of ``prefix``'s head and length."""
        if not prefix:  # the empty prefix: probed for every topic
            self._none = (0,) if delta > 0 else ()
            self._heads = {head: self._tuple(head) for head in self._heads}
            return
        head, size = prefix[: self._head], len(prefix)
        counts = self._by_head.setdefault(head, Counter())
        counts[size] += delta
        if not counts[size]:
            del counts[size]
        if counts:
            self._heads[head] = self._tuple(head)
        else:
            del self._by_head[head], self._heads[head]

    def _tuple(self, head: str) -> tuple[int, ...]:
        return (*self._none, *sorted(self._by_head[head]))

    def _rebuild(self, head: int) -> None:
        self._head = head
        self._by_head = {}
        for prefix in self._counts:
            if prefix:
                self._by_head.setdefault(prefix[:head], Counter())[len(prefix)] += 1
        self._heads = {h: self._tuple(h) for h in self._by_head}

    def __len__(self) -> int:
        return len(self._counts)
