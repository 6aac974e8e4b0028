"""Ctrie: a concurrent subscription trie with O(1) snapshots, after Workiva's matchbox.

A pub/sub subscription index in the manner of matchbox (Go), which applies the
Ctrie of Prokopec, Bronson, Bagwell and Odersky ("Concurrent Tries with Efficient
Non-Blocking Snapshots", PPoPP 2012) to topic patterns. It is offered as a
backend to compare the skipfilter index against.

Structure. I-nodes (indirection nodes) point to main nodes. A C-node maps a topic
*word* to a branch (the set of subscribers whose pattern ends at that word, and
an optional child I-node for longer patterns). Nodes are immutable: an update
copies one C-node and publishes the copy with a compare-and-swap (CAS) on the
parent I-node, retrying from the root when it loses a race. When a removal
empties a C-node below the root, the C-node becomes a T-node (tomb) and the
parent drops its link to it, level by level, so churn does not grow memory.

Snapshots. Every I-node carries a generation. :meth:`Ctrie.snapshot` swaps the
root for a copy in a fresh generation with an RDCSS (a double-compare
single-swap: the root changes only if the root's main node is still the one
read); every write goes through GCAS, a CAS that only commits when the I-node's
generation is still the root's. Writers meeting an I-node of an older
generation first copy ("renew") it into theirs. So a snapshot costs O(1) and the
two tries then share every node until one of them writes, path by path.

What "lock-free" means here. CPython exposes no compare-and-swap to Python
code, so the CAS is emulated: one module-level :class:`threading.Lock` guards
just the compare and the store of one reference (no allocation, no user code,
since ``is`` cannot call back). It is the only lock. Traversals take no lock: a
single attribute load of an object reference is atomic in CPython, with the GIL
and in free-threaded builds alike, and published nodes never change. A lookup
takes the lock only to help finish a write it finds half-done (a pending GCAS or
root swap). So the algorithm is non-blocking in structure -- no operation waits
for another to finish; a loser retries, and some operation always succeeds (as
in the paper, lock-free, not wait-free: one writer can in principle keep losing)
-- but the implementation is not lock-free in the formal sense: a thread
descheduled while it holds the CAS lock (a few bytecodes) delays every other
CAS. Under the GIL threads interleave rather than run in parallel, so threads
bring no speed-up; what remains is that readers never wait for writers and
snapshots are O(1). Under free-threaded Python, traversals run in parallel and
only the CAS itself is serialised, by that one lock.

Consistency. Each (pattern, subscriber) pair is linearizable: once
:meth:`Ctrie.subscribe` returns, every later lookup whose topic the pattern
matches returns the subscriber; once :meth:`Ctrie.unsubscribe` returns, no later
lookup returns it for that pattern. A lookup reads the patterns of one topic
one node at a time, so under concurrent writes it is not one atomic view of all
of them; look up on :meth:`Ctrie.read_only_snapshot` for that.

Semantics (AMQP 0-9-1 by default). Topics and patterns are split on the
delimiter; empty words are words. ``single`` (``*``) matches exactly one word,
``multi`` (``#``) zero or more. Runs of ``multi`` collapse (``a.#.#.b`` is stored
as ``a.#.b``). Wildcard characters inside a longer word are literal.

Classes:

- :class:`Ctrie` -- the trie (its :class:`~skipfilter.baselines.ctrie.syntax.Config`
  chooses the wildcards and delimiter).
- :class:`ReadOnlyError` -- raised when writing to a read-only snapshot.
"""

from __future__ import annotations

from collections.abc import Hashable

from skipfilter.baselines.ctrie.nodes import (
    Branch,
    CNode,
    Failed,
    Gen,
    INode,
    MainNode,
    Ref,
    TNode,
    cas_main,
    cas_prev,
    chain,
)
from skipfilter.baselines.ctrie.syntax import AMQP, Config
from skipfilter.errors import SkipFilterError

__all__ = ["Ctrie", "ReadOnlyError"]


class ReadOnlyError(SkipFilterError):
    """A write (subscribe, unsubscribe) was attempted on a read-only snapshot."""


class _RDCSS:
    """Root swap in progress: replace ``old`` by ``new`` if ``old``'s main is ``expected``."""

    __slots__ = ("committed", "expected", "new", "old")

    def __init__(self, old: INode, expected: MainNode, new: INode) -> None:
        self.old = old
        self.expected = expected
        self.new = new
        self.committed = False


class Ctrie:
    """A concurrent subscription trie: pattern -> subscribers, looked up by topic.

    Methods for changing subscriptions: :meth:`subscribe`, :meth:`unsubscribe`.
    Methods for looking up: :meth:`subscribers`, :meth:`subscriptions`, :meth:`topics`.
    Methods for snapshots: :meth:`snapshot`, :meth:`read_only_snapshot`.

    Every method is thread-safe (see the module docstring for the exact guarantee).

    >>> trie = Ctrie()
    >>> trie.subscribe("stock.#", "alice")
    >>> trie.subscribe("stock.*.nyse", "bob")
    >>> sorted(trie.subscribers("stock.ibm.nyse"))
    ['alice', 'bob']
    >>> frozen = trie.read_only_snapshot()
    >>> trie.unsubscribe("stock.#", "alice")
    True
    >>> sorted(trie.subscribers("stock.ibm.nyse")), sorted(frozen.subscribers("stock.ibm.nyse"))
    (['bob'], ['alice', 'bob'])
    """

    __slots__ = ("_config", "_read_only", "_root")

    def __init__(self, config: Config = AMQP) -> None:
        gen = Gen()
        self._config = config
        self._read_only = False
        self._root: Ref[INode | _RDCSS] = Ref(INode(CNode({}, gen), gen))

    @classmethod
    def _over(cls, config: Config, root: INode, read_only: bool) -> Ctrie:
        """A Ctrie sharing ``root`` (a snapshot)."""
        trie = cls.__new__(cls)
        trie._config = config
        trie._read_only = read_only
        trie._root = Ref(root)
        return trie

    @property
    def config(self) -> Config:
        """The wildcard syntax of this trie."""
        return self._config

    @property
    def read_only(self) -> bool:
        """Whether this is a read-only snapshot (writes raise :class:`ReadOnlyError`)."""
        return self._read_only

    def __repr__(self) -> str:
        kind = "read-only " if self._read_only else ""
        return f"<{kind}Ctrie {self._config!r}>"

    # -- writing ---------------------------------------------------------------------

    def subscribe(self, pattern: str, subscriber: Hashable) -> None:
        """Add ``subscriber`` to ``pattern`` (no-op if already there).

        Two spellings of one pattern (``#`` and ``#.#``) share a node but are two
        subscriptions: each is removed by its own :meth:`unsubscribe`.
        Runtime complexity: O(d + b + s) per attempt, for d pattern words, b branches
        in the C-node copied and s subscribers already on the pattern; attempts
        repeat only when a concurrent write wins the race.
        """
        self._check_writable("subscribe")
        words, spelling = self._spelled(pattern)
        while True:
            root = self._read_root()
            if self._insert(root, words, subscriber, spelling, root.gen):
                return

    def unsubscribe(self, pattern: str, subscriber: Hashable) -> bool:
        """Remove ``subscriber`` from ``pattern`` as spelled; return whether it was subscribed.

        Emptied nodes are pruned up the path. Runtime complexity: as :meth:`subscribe`.
        """
        self._check_writable("unsubscribe")
        words, spelling = self._spelled(pattern)
        while True:
            root = self._read_root()
            removed = self._remove(root, words, subscriber, spelling, root.gen)
            if removed is not None:
                return removed

    def _spelled(self, pattern: str) -> tuple[tuple[str, ...], str | None]:
        """The pattern's path (runs of ``multi`` collapsed), and its spelling when that is
        not the path's own (None)."""
        words = self._config.split_pattern(pattern)
        return words, None if pattern == self._config.delimiter.join(words) else pattern

    def _check_writable(self, operation: str) -> None:
        if self._read_only:
            raise ReadOnlyError(
                f"cannot {operation} on a read-only Ctrie snapshot; "
                "use snapshot() for a writable copy"
            )

    def _insert(
        self,
        i: INode,
        words: tuple[str, ...],
        sub: Hashable,
        spelling: str | None,
        start_gen: Gen,
    ) -> bool:
        """One attempt at subscribe from root ``i``; False means restart."""
        parent_depth = -1
        parent = i
        last = len(words) - 1
        depth = 0
        while True:
            main = self._gcas_read(i)
            if isinstance(main, TNode):
                # Only below the root; the parent still links to a tomb: prune, retry.
                self._clean(parent, parent_depth == 0)
                return False
            word = words[depth]
            br = main.branches.get(word)
            if br is not None and br.inode is not None and depth < last:
                child = br.inode
                if child.gen is start_gen:
                    parent, parent_depth, i, depth = i, depth, child, depth + 1
                    continue
                # The child belongs to an older generation (a snapshot shares it).
                if not self._gcas(i, main, main.renewed(start_gen, self._gcas_read)):
                    return False
                continue
            if br is not None and depth == last and br.joined(sub, spelling) is None:
                return True
            cn = main
            if cn.gen is not i.gen:
                cn = main.renewed(i.gen, self._gcas_read)
                br = cn.branches.get(word)
            new: Branch | None
            if br is None:
                new = chain(words[depth:], sub, spelling, i.gen)
            elif depth < last:  # the branch ends here: hang the rest of the path below it
                rest = chain(words[depth + 1 :], sub, spelling, i.gen)
                new = br.with_inode(INode(CNode({words[depth + 1]: rest}, i.gen), i.gen))
            else:
                new = br.joined(sub, spelling)
                assert new is not None  # renewing kept the subscribers checked above
            return self._gcas(i, main, cn.with_branch(word, new, i.gen))

    def _remove(
        self,
        i: INode,
        words: tuple[str, ...],
        sub: Hashable,
        spelling: str | None,
        start_gen: Gen,
    ) -> bool | None:
        """One attempt at unsubscribe from root ``i``; None means restart."""
        path: list[tuple[INode, str]] = []  # (ancestor I-node, word taken from it)
        last = len(words) - 1
        depth = 0
        while True:
            main = self._gcas_read(i)
            if isinstance(main, TNode):
                self._clean(path[-1][0], len(path) == 1)
                return None
            word = words[depth]
            br = main.branches.get(word)
            if br is None:
                return False
            if depth < last:
                child = br.inode
                if child is None:
                    return False
                if child.gen is start_gen:
                    path.append((i, word))
                    i, depth = child, depth + 1
                    continue
                if not self._gcas(i, main, main.renewed(start_gen, self._gcas_read)):
                    return None
                continue
            if not br.left(sub, spelling)[0]:
                return False
            cn = main
            if cn.gen is not i.gen:
                cn = main.renewed(i.gen, self._gcas_read)
                br = cn.branches[word]
            _, new = br.left(sub, spelling)
            contracted = self._contracted(cn.with_branch(word, new, i.gen), depth == 0)
            if not self._gcas(i, main, contracted):
                return None
            if isinstance(contracted, TNode):
                self._prune_up(path, i, start_gen)
            return True

    @staticmethod
    def _contracted(cn: CNode, is_root: bool) -> MainNode:
        """A tomb for an empty C-node below the root, else ``cn``."""
        if cn.branches or is_root:
            return cn
        return TNode()

    def _clean(self, i: INode, is_root: bool) -> None:
        """Drop ``i``'s links to tombed children (one attempt; losers retry anyway)."""
        main = self._gcas_read(i)
        if isinstance(main, CNode):
            self._gcas(i, main, self._contracted(main.compressed(self._gcas_read), is_root))

    def _prune_up(self, path: list[tuple[INode, str]], child: INode, start_gen: Gen) -> None:
        """After ``child`` became a tomb, unlink it, and its ancestors while they empty."""
        for depth in range(len(path) - 1, -1, -1):
            parent, word = path[depth]
            if not self._unlink(parent, child, word, depth == 0, start_gen):
                return
            child = parent

    def _unlink(
        self, parent: INode, child: INode, word: str, is_root: bool, start_gen: Gen
    ) -> bool:
        """Drop ``parent``'s link to tombed ``child``; return whether ``parent`` is a tomb now."""
        while True:
            pm = self._gcas_read(parent)
            if isinstance(pm, TNode):
                return True
            br = pm.branches.get(word)
            if br is None or br.inode is not child:
                return False
            if not isinstance(self._gcas_read(child), TNode):
                return False
            new = br.with_inode(None) if br.subs else None
            contracted = self._contracted(pm.with_branch(word, new, pm.gen), is_root)
            if self._gcas(parent, pm, contracted):
                return isinstance(contracted, TNode)
            if self._read_root().gen is not start_gen:
                return False  # a snapshot intervened; later writers prune lazily

    # -- reading ---------------------------------------------------------------------

    def subscribers(self, topic: str) -> set[Hashable]:
        """Every subscriber with a pattern matching ``topic``.

        Never restarts and never waits for a writer. Runtime complexity: O(v) for v
        trie nodes visited -- O(t) for t topic words along exact branches, plus each
        wildcard branch met; every ``#`` tries each remaining suffix of the topic.
        """
        words = topic.split(self._config.delimiter)
        found: set[Hashable] = set()
        self._collect(self._read_root(), words, 0, found)
        return found

    def _collect(self, i: INode, words: list[str], k: int, found: set[Hashable]) -> None:
        """Add the subscribers of patterns below ``i`` that match ``words[k:]``.

        Unlike writes, lookups need not renew I-nodes of an older generation: one is
        reachable only while no write has gone down its path since the snapshot, so
        its content is still current. A tomb reads as an empty subtree.
        """
        main = i.main
        if main.prev is not None:
            main = self._gcas_complete(i, main)
        if isinstance(main, TNode):
            return  # an emptied subtree
        branches = main.branches
        n = len(words)
        single, multi = self._config.single, self._config.multi
        if k < n:
            # One word taken by the branch of that word, or by the single wildcard.
            word = words[k]
            k += 1
            for key in (word, single) if word != single and word != multi else (single,):
                br = branches.get(key)
                if br is not None:
                    if k == n:
                        found.update(br.subs)
                    if br.inode is not None:
                        self._collect(br.inode, words, k, found)
            k -= 1
        br = branches.get(multi)
        if br is not None:  # the multi wildcard takes any number of words, the rest all
            found.update(br.subs)
            if br.inode is not None:
                for j in range(k, n + 1):
                    self._collect(br.inode, words, j, found)

    def subscriptions(self) -> dict[str, set[Hashable]]:
        """Every pattern with subscribers, as each spelled it -> its subscribers, as of one
        instant.

        Reads a read-only snapshot. Runtime complexity: O(nodes + pairs).
        """
        trie = self.read_only_snapshot()
        delimiter = trie._config.delimiter
        result: dict[str, set[Hashable]] = {}
        stack: list[tuple[INode, tuple[str, ...]]] = [(trie._read_root(), ())]
        while stack:
            i, prefix = stack.pop()
            main = trie._gcas_read(i)
            if isinstance(main, TNode):
                continue
            for word, br in main.branches.items():
                words = (*prefix, word)
                canonical = delimiter.join(words)
                spelled = {who for who, _ in br.spellings}
                if br.subs - spelled:
                    result.setdefault(canonical, set()).update(br.subs - spelled)
                for who, spelling in br.spellings:
                    result.setdefault(spelling or canonical, set()).add(who)
                if br.inode is not None:
                    stack.append((br.inode, words))
        return result

    def topics(self) -> list[str]:
        """Every pattern with subscribers, sorted, as of one instant.

        Runtime complexity: O(nodes + pairs + p log p) for p patterns.
        """
        return sorted(self.subscriptions())

    def _node_count(self) -> int:
        """How many I-nodes are reachable (1 when empty) -- for contraction tests."""
        count = 0
        stack = [self._read_root()]
        while stack:
            i = stack.pop()
            count += 1
            main = self._gcas_read(i)
            if isinstance(main, CNode):
                stack.extend(br.inode for br in main.branches.values() if br.inode is not None)
        return count

    # -- snapshots -------------------------------------------------------------------

    def snapshot(self) -> Ctrie:
        """A writable copy; later writes to either never show in the other.

        Runtime complexity: O(1); each side then copies a path the first time it
        writes to it.
        """
        if self._read_only:
            # Nothing will change the root any more: share it under a new generation.
            root = self._read_root()
            return Ctrie._over(self._config, INode(self._gcas_read(root), Gen()), False)
        while True:
            root = self._read_root()
            main = self._gcas_read(root)
            if self._rdcss_root(root, main, INode(main, Gen())):
                return Ctrie._over(self._config, INode(main, Gen()), False)

    def read_only_snapshot(self) -> Ctrie:
        """A read-only view of this instant; cheaper than :meth:`snapshot` for reading.

        Runtime complexity: O(1).
        """
        if self._read_only:
            return self
        while True:
            root = self._read_root()
            main = self._gcas_read(root)
            if self._rdcss_root(root, main, INode(main, Gen())):
                return Ctrie._over(self._config, root, True)

    # -- GCAS and RDCSS ----------------------------------------------------------------

    def _gcas(self, i: INode, old: MainNode, new: MainNode) -> bool:
        """CAS ``i.main`` from ``old`` to ``new``, committed only if no snapshot intervened."""
        new.prev = old
        if cas_main(i, old, new):
            self._gcas_complete(i, new)
            return new.prev is None
        return False

    def _gcas_read(self, i: INode) -> MainNode:
        """``i``'s main node, committing or rolling back a GCAS left half-done."""
        main = i.main
        if main.prev is None:
            return main
        return self._gcas_complete(i, main)

    def _gcas_complete(self, i: INode, main: MainNode) -> MainNode:
        """Finish the GCAS that installed ``main``: commit if the generation held, else undo."""
        while True:
            prev = main.prev
            root = self._read_root(abort=True)
            if prev is None:
                return main
            if isinstance(prev, Failed):
                if cas_main(i, main, prev.prev):
                    return prev.prev
                main = i.main
            elif root.gen is i.gen and not self._read_only:
                if cas_prev(main, prev, None):
                    return main
            else:
                cas_prev(main, prev, Failed(prev))
                main = i.main

    def _read_root(self, abort: bool = False) -> INode:
        """The root I-node, finishing (or, with ``abort``, undoing) a root swap under way."""
        root = self._root.value
        if isinstance(root, INode):
            return root
        return self._rdcss_complete(abort)

    def _rdcss_root(self, old: INode, expected: MainNode, new: INode) -> bool:
        """Swap the root from ``old`` to ``new`` if ``old``'s main node is still ``expected``."""
        descriptor = _RDCSS(old, expected, new)
        if self._root.cas(old, descriptor):
            self._rdcss_complete(abort=False)
            return descriptor.committed
        return False

    def _rdcss_complete(self, abort: bool) -> INode:
        while True:
            root = self._root.value
            if isinstance(root, INode):
                return root
            if abort:
                if self._root.cas(root, root.old):
                    return root.old
            elif self._gcas_read(root.old) is root.expected:
                if self._root.cas(root, root.new):
                    root.committed = True
                    return root.new
            elif self._root.cas(root, root.old):
                return root.old
