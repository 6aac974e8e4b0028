"""A word trie that narrows a topic's wildcard patterns to the few that may match it.

For the word syntaxes (AMQP, NATS, MQTT), testing every wildcard pattern of a topic's
word count costs one regex per pattern (hundreds for a new AMQP topic). :class:`WordTrie`
stores each pattern along its words and walks a topic's words through it, following
the literal word and the one-word wildcard at each level, so a topic meets only the
patterns whose words fit it. It applies the multi wildcard's least word count (NATS
``>`` needs one) and, when asked, MQTT's ``$`` rule; it ignores the words after a multi
wildcard (AMQP ``a.#.b``), so for those the answer is a *superset* the caller tests.

- :class:`WordTrie` -- the trie, generic in the stored item.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Generic, TypeVar

__all__ = ["WordTrie"]

T = TypeVar("T")


class _Node(Generic[T]):
    """One level of patterns: literal children, the single-wildcard child, and the items
    that end here (``ends``) or continue with a multi-word wildcard (``tails``)."""

    __slots__ = ("children", "ends", "single", "tails")

    def __init__(self) -> None:
        self.children: dict[str, _Node[T]] = {}
        self.single: _Node[T] | None = None
        self.ends: list[T] = []  # candidates when the topic's words end here
        self.tails: list[T] = []  # candidates whenever the walk reaches here

    def empty(self) -> bool:
        """Whether nothing is stored here or below (the node can be pruned)."""
        return not (self.children or self.single or self.ends or self.tails)


class WordTrie(Generic[T]):
    """Items stored under pattern words; :meth:`candidates` yields those that may match.

    A pattern's path ends at its first ``multi`` word (the item goes in that node's
    tails; later words are ignored) or after its last word (the node's ends). A topic
    visits one node per matching path, so each stored item is appended at most once.
    Runtime: :meth:`add` and :meth:`remove` O(pattern words) plus a list append or
    remove; :meth:`candidates` O(nodes visited + candidates).

    >>> trie: WordTrie[str] = WordTrie(".", "*", "#")
    >>> for pattern in ("a.b", "c.*", "a.#"):
    ...     trie.add(pattern.split("."), pattern)
    >>> out: list[str] = []
    >>> trie.candidates("a.b", out)
    >>> sorted(out)
    ['a.#', 'a.b']
    """

    __slots__ = ("_delimiter", "_multi", "_multi_min", "_root", "_single", "_size")

    def __init__(self, delimiter: str, single: str, multi: str, multi_min: int = 0) -> None:
        """An empty trie for topics split on ``delimiter`` with these wildcard words; the
        multi wildcard takes at least ``multi_min`` words (0 or 1)."""
        if not delimiter or single == multi:
            raise ValueError("need a non-empty delimiter and two different wildcards")
        if multi_min not in (0, 1):
            raise ValueError(f"multi_min must be 0 or 1, got {multi_min}")
        self._delimiter = delimiter
        self._single = single
        self._multi = multi
        self._multi_min = multi_min
        self._root: _Node[T] = _Node()
        self._size = 0

    def __len__(self) -> int:
        """Number of items stored."""
        return self._size

    def add(self, words: Sequence[str], item: T) -> None:
        """Store ``item`` under pattern ``words`` (``pattern.split(delimiter)``).

        Raises ValueError if ``item`` is already stored under these words (it would
        then be a candidate twice). Store each item under one pattern only.
        """
        node = self._root
        single, multi = self._single, self._multi
        bucket = None
        for word in words:
            if word == multi:
                bucket = node.tails
                break
            if word == single:
                child = node.single
                if child is None:
                    child = node.single = _Node()
            else:
                child = node.children.get(word)
                if child is None:
                    child = node.children[word] = _Node()
            node = child
        if bucket is None:
            bucket = node.ends
        if item in bucket:  # so the path existed: nothing was created
            raise ValueError(f"{item!r} is already stored under {list(words)!r}")
        bucket.append(item)
        self._size += 1

    def remove(self, words: Sequence[str], item: T) -> None:
        """Remove ``item`` stored under ``words``; drop the nodes left empty.

        Raises KeyError, changing nothing, if it is not stored there.
        """
        node = self._root
        single, multi = self._single, self._multi
        path: list[tuple[_Node[T], str]] = []  # (parent, word leading to the next node)
        bucket = None
        for word in words:
            if word == multi:
                bucket = node.tails
                break
            child = node.single if word == single else node.children.get(word)
            if child is None:
                raise KeyError(item)
            path.append((node, word))
            node = child
        if bucket is None:
            bucket = node.ends
        try:
            bucket.remove(item)
        except ValueError:
            raise KeyError(item) from None
        self._size -= 1
        while path and node.empty():
            parent, word = path.pop()
            if word == single:
                parent.single = None
            else:
                del parent.children[word]
            node = parent

    def candidates(self, topic: str, out: list[T]) -> None:
        """Append to ``out`` every item whose pattern may match ``topic``, each once."""
        self.walk(topic.split(self._delimiter), out)

    def walk(self, words: Sequence[str], out: list[T], skip_wild_first: bool = False) -> None:
        """Append to ``out`` every item whose words before its multi wildcard fit ``words``
        and whose multi wildcard, if any, gets at least ``multi_min`` words; each once.

        ``skip_wild_first``: leave out patterns whose first word is a wildcard (MQTT's rule
        for topics starting with ``$``). Runtime: O(nodes visited + items appended).
        """
        extend = out.extend
        root = self._root
        if skip_wild_first:
            if not words:
                return
            child = root.children.get(words[0])
            if child is None:
                return
            frontier = [child]
            words = words[1:]
        else:
            frontier = [root]
        for word in words:
            if len(frontier) == 1:  # the usual case: no list to build
                node = frontier[0]
                if node.tails:
                    extend(node.tails)
                child = node.children.get(word)
                single = node.single
                if child is None:
                    if single is None:
                        return
                    frontier = [single]
                elif single is None:
                    frontier = [child]
                else:
                    frontier = [child, single]
                continue
            following: list[_Node[T]] = []
            push = following.append
            for node in frontier:
                if node.tails:
                    extend(node.tails)
                child = node.children.get(word)
                if child is not None:
                    push(child)
                child = node.single
                if child is not None:
                    push(child)
            if not following:
                return
            frontier = following
        zero_words = not self._multi_min  # a multi wildcard here would take no word
        for node in frontier:
            if node.tails and zero_words:
                extend(node.tails)
            if node.ends:
                extend(node.ends)

    def _node_count(self) -> int:
        """Nodes below the root (0 when empty): for tests of pruning."""
        count = 0
        stack = [self._root]
        while stack:
            node = stack.pop()
            below = list(node.children.values())
            if node.single is not None:
                below.append(node.single)
            count += len(below)
            stack.extend(below)
        return count
