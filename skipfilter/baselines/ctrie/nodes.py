"""Node types and the compare-and-swap primitive behind :mod:`skipfilter.baselines.ctrie`.

Private to the Ctrie. Every node is immutable once published except for three
fields that are only ever changed by compare-and-swap: ``INode.main`` (which main
node an I-node points to), ``MainNode.prev`` (GCAS bookkeeping) and the Ctrie
root (see :mod:`skipfilter.baselines.ctrie`).

Classes:

- :class:`Gen` -- a generation tag; identity is all it has.
- :class:`INode` -- an indirection node, the only mutable link in the trie.
- :class:`CNode` -- a main node holding branches keyed by topic word.
- :class:`TNode` -- a tomb: the main node of an I-node whose C-node became empty.
- :class:`Failed` -- marks an aborted GCAS in a main node's ``prev``.
- :class:`Branch` -- subscribers whose pattern ends at a word, and the I-node below it.
- :class:`Ref` -- a reference cell with compare-and-set (the Ctrie root).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Hashable, Sequence
from typing import Generic, TypeVar

T = TypeVar("T")

__all__ = [
    "Branch",
    "CNode",
    "Failed",
    "Gen",
    "INode",
    "MainNode",
    "ReadMain",
    "Ref",
    "Spelling",
    "TNode",
    "cas_main",
    "cas_prev",
    "chain",
]

# The one lock of the structure. It guards nothing but the compare and the
# store of a single reference (see cas_main): no allocation, no user code
# (``is`` cannot call back), so it is held for a handful of bytecodes.
_CAS_LOCK = threading.Lock()


class Gen:
    """A generation: snapshots hand out fresh ones. Compared by identity only."""

    __slots__ = ()


class Failed:
    """Stored in ``prev`` of a main node whose GCAS lost to a snapshot.

    ``prev`` is the main node the I-node must be rolled back to.
    """

    __slots__ = ("prev",)

    def __init__(self, prev: MainNode) -> None:
        self.prev = prev


#: A subscriber and how it spelled its pattern: the text, or None for the canonical one.
Spelling = tuple[Hashable, str | None]
_NO_SPELLINGS: frozenset[Spelling] = frozenset()


class Branch:
    """Subscribers whose pattern ends at this word, and the I-node for longer patterns.

    Two spellings of one pattern (``#`` and ``#.#``: runs of the multi wildcard collapse)
    end at the same branch and are two subscriptions: removing one keeps the other.
    ``subs`` holds every subscriber (what lookups read); ``spellings`` records, for the
    few subscribers with a non-canonical spelling, each spelling they hold (None for the
    canonical one). A subscriber absent from ``spellings`` holds the canonical spelling.
    """

    __slots__ = ("inode", "spellings", "subs")

    def __init__(
        self,
        inode: INode | None,
        subs: frozenset[Hashable],
        spellings: frozenset[Spelling] = _NO_SPELLINGS,
    ) -> None:
        self.inode = inode
        self.subs = subs
        self.spellings = spellings

    def with_inode(self, inode: INode | None) -> Branch:
        """A copy hanging ``inode`` below the same subscribers."""
        return Branch(inode, self.subs, self.spellings)

    def _spelled(self, sub: Hashable) -> set[str | None]:
        return {spelling for who, spelling in self.spellings if who == sub}

    def joined(self, sub: Hashable, spelling: str | None) -> Branch | None:
        """A copy with ``sub`` subscribed in ``spelling`` (None: canonical); None if it is."""
        held = self._spelled(sub)
        if not held:
            if spelling is None:
                if sub in self.subs:
                    return None
                return Branch(self.inode, self.subs | {sub}, self.spellings)
            added = {(sub, spelling), (sub, None)} if sub in self.subs else {(sub, spelling)}
            return Branch(self.inode, self.subs | {sub}, self.spellings | added)
        if spelling in held:
            return None
        return Branch(self.inode, self.subs, self.spellings | {(sub, spelling)})

    def left(self, sub: Hashable, spelling: str | None) -> tuple[bool, Branch | None]:
        """(whether ``sub`` held ``spelling``, the branch without it or None if empty)."""
        held = self._spelled(sub)
        if not held:
            if spelling is not None or sub not in self.subs:
                return False, self
            subs, spellings = self.subs - {sub}, self.spellings
        else:
            if spelling not in held:
                return False, self
            rest = held - {spelling}
            spellings = self.spellings - {(sub, spelling)}
            if rest == {None}:  # back to the canonical spelling alone
                spellings -= {(sub, None)}
            subs = self.subs if rest else self.subs - {sub}
        if not subs and self.inode is None:
            return True, None
        return True, Branch(self.inode, subs, spellings)


class CNode:
    """An immutable map word -> :class:`Branch`; updates build a copy.

    ``gen`` is the generation the node was built for: a C-node built for another
    generation is renewed (its I-nodes copied) before it is written to.
    ``prev`` is ``None`` once the GCAS that published the node has committed.
    """

    __slots__ = ("branches", "gen", "prev")

    def __init__(self, branches: dict[str, Branch], gen: Gen) -> None:
        self.branches = branches
        self.gen = gen
        self.prev: MainNode | Failed | None = None

    def with_branch(self, word: str, branch: Branch | None, gen: Gen) -> CNode:
        """A copy with ``word`` mapped to ``branch`` (or removed when ``None``)."""
        branches = dict(self.branches)
        if branch is None:
            del branches[word]
        else:
            branches[word] = branch
        return CNode(branches, gen)

    def renewed(self, gen: Gen, read: ReadMain) -> CNode:
        """A copy whose I-nodes are copies in ``gen``, so they may be written in ``gen``."""
        branches = {
            word: br if br.inode is None else br.with_inode(INode(read(br.inode), gen))
            for word, br in self.branches.items()
        }
        return CNode(branches, gen)

    def compressed(self, read: ReadMain) -> CNode:
        """A copy without links to tombed I-nodes; branches left empty are dropped."""
        branches: dict[str, Branch] = {}
        for word, br in self.branches.items():
            if br.inode is not None and type(read(br.inode)) is TNode:
                if br.subs:
                    branches[word] = br.with_inode(None)
            else:
                branches[word] = br
        return CNode(branches, self.gen)


class TNode:
    """A tomb: the I-node's subtree is empty and its parent should drop the link."""

    __slots__ = ("prev",)

    def __init__(self) -> None:
        self.prev: MainNode | Failed | None = None


MainNode = CNode | TNode


class INode:
    """An indirection node: the one place an update is published, by CAS on ``main``."""

    __slots__ = ("gen", "main")

    def __init__(self, main: MainNode, gen: Gen) -> None:
        self.main = main
        self.gen = gen


#: Reads an I-node's main node, completing any pending GCAS first.
ReadMain = Callable[[INode], MainNode]


class Ref(Generic[T]):
    """A reference cell with compare-and-set; holds the Ctrie root."""

    __slots__ = ("value",)

    def __init__(self, value: T) -> None:
        self.value = value

    def cas(self, expected: T, new: T) -> bool:
        """Set ``value`` to ``new`` if it is still ``expected``; say whether it was."""
        with _CAS_LOCK:
            if self.value is expected:
                self.value = new
                return True
            return False


def chain(words: Sequence[str], sub: Hashable, spelling: str | None, gen: Gen) -> Branch:
    """A fresh branch path for ``words`` ending in a branch holding ``sub`` (as spelled).

    ``words[0]`` is the word the returned branch is stored under by the caller.
    """
    branch = Branch(None, frozenset()).joined(sub, spelling)
    assert branch is not None
    for word in reversed(words[1:]):
        branch = Branch(INode(CNode({word: branch}, gen), gen), frozenset())
    return branch


def cas_main(inode: INode, expected: MainNode, new: MainNode) -> bool:
    """Set ``inode.main`` to ``new`` if it is still ``expected``; say whether it was."""
    with _CAS_LOCK:
        if inode.main is expected:
            inode.main = new
            return True
        return False


def cas_prev(node: MainNode, expected: MainNode | Failed | None, new: Failed | None) -> bool:
    """Set ``node.prev`` to ``new`` if it is still ``expected``; say whether it was."""
    with _CAS_LOCK:
        if node.prev is expected:
            node.prev = new
            return True
        return False
