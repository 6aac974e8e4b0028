"""Match a template regex by automaton simulation: linear time whatever its shape.

:class:`NFAMatcher` takes the regex source :mod:`skipfilter.selectors.uritemplate.regex`
builds, parses it with the standard library's regex parser and runs it as a
Thompson NFA over the topic, keeping the *set* of live states instead of
backtracking. Visited state sets are cached as the states of a lazily built DFA,
so a topic usually costs one dict lookup per character.

Guarantee: ``match(topic)`` costs O(len(topic) x S), S the number of NFA states,
itself O(len(regex)) (bounded repeats of up to :data:`EXPAND` copies are unrolled;
longer ones, like prefixes ``:9999``, are one loop with a counter). Each step is
one DFA transition when cached, or one pass over at most S live states when not.
Why S bounds the live states: a state is (node, group flags, counter), flags are
kept only while a later ``(?(g)...)`` may read them (the builder's chains read the
previous group only), and of two states that differ only in their counter the
smaller one is kept, since it can do everything the larger can (all counted
repeats here have minimum 0 once the mandatory copies are unrolled).

The language is the regex's, reading atomic groups and possessive repeats as
plain ones: the builder only adds them where they do not change the language
(see :mod:`skipfilter.selectors.uritemplate`), and a differential test holds it to that.

Private module: :mod:`skipfilter.selectors.uritemplate` is the public face.
"""

from __future__ import annotations

import importlib
from typing import Any

from skipfilter.errors import SkipFilterError

_parser: Any = importlib.import_module("re._parser")  # the parser re.compile uses
_c: Any = importlib.import_module("re._constants")

EXPAND = 8  # bounded repeats with at most this many optional copies are unrolled
CACHE_STATES = 256  # DFA states cached per matcher before the cache is reset

# Node kinds.
_CHAR, _EPS, _SET, _COND, _RESET, _HEAD, _INC, _FAIL, _ACCEPT = range(9)


class UnsupportedRegex(SkipFilterError, ValueError):
    """The regex uses a construct the builder never emits."""


Entry = tuple[int, int]  # (node, flags): a state with its counter left out
Formula = tuple[tuple[int, int], ...]  # counter = min of (counts[src] + delta), src -1: delta


class _DState:
    """A cached set of NFA states: a DFA state with its outgoing transitions.

    The counters of the states are not part of it: they travel beside it in a tuple
    of slots (states whose counters are always equal share one), and each transition
    carries the (min, +) formulas that compute the next slots, so counting does not
    defeat the cache.
    """

    __slots__ = ("accept", "counted", "dead", "entries", "limits", "next", "slot")

    def __init__(
        self, entries: tuple[Entry, ...], slot: tuple[int, ...], accept: bool, bound: list[int]
    ) -> None:
        self.entries = entries
        self.slot = slot  # per entry: its counter's slot, or -1 outside counted loops
        self.accept = accept
        self.dead = not entries
        limits: dict[int, int] = {}
        for (node, _), k in zip(entries, slot, strict=True):
            if k >= 0:
                limits[k] = bound[node] - 1
        # A counter c may take another iteration after the current one iff c < limit.
        self.limits = tuple(limits[k] for k in range(len(limits)))
        self.counted = bool(self.limits)
        self.next: dict[Any, tuple[_DState, tuple[Formula, ...]]] = {}


class NFAMatcher:
    """Anchored full-match of one template regex in O(len(topic) x len(regex)).

    Thread-safe: the only mutable state is the DFA cache, whose entries are
    written whole (a race computes a transition twice, never a wrong one).
    """

    def __init__(self, regex: str) -> None:
        tree = list(_parser.parse(regex))
        at_start = tree[:1] == [(_c.AT, _c.AT_BEGINNING_STRING)]
        at_end = tree[-1:] == [(_c.AT, _c.AT_END_STRING)]
        if not (at_start and at_end and len(tree) >= 2):
            raise UnsupportedRegex("the regex must be anchored by \\A ... \\Z")
        self._kind: list[int] = []
        self._arg: list[Any] = []
        self._out: list[list[int]] = []
        self._bound: list[int] = []  # per node: the bound of the counted loop holding it, or 0
        self._bits: dict[int, int] = {}  # group number -> flag bit, for groups read by (?(g))
        for g in _groups_read(tree):
            self._bits[g] = 1 << len(self._bits)
        accept = self._node(_ACCEPT, None, [])
        self._start_node = self._seq(tree[1:-1], accept)
        self._live = self._liveness()
        self._eps: dict[int, tuple[tuple[int, ...], tuple[int, ...]]] = {}
        self._alphabet = frozenset().union(
            *(a for k, a in zip(self._kind, self._arg, strict=True) if k == _CHAR)
        )
        self._reset_cache()

    # --- construction (right to left: each piece is built knowing what follows it) ---

    def _node(self, kind: int, arg: Any, out: list[int]) -> int:
        self._kind.append(kind)
        self._arg.append(arg)
        self._out.append(out)
        self._bound.append(0)
        return len(self._kind) - 1

    def _seq(self, items: list[tuple[Any, Any]], nxt: int) -> int:
        for op, av in reversed(items):
            nxt = self._item(op, av, nxt)
        return nxt

    def _item(self, op: Any, av: Any, nxt: int) -> int:
        if op is _c.LITERAL:
            return self._node(_CHAR, frozenset(chr(av)), [nxt])
        if op is _c.IN:
            return self._node(_CHAR, _char_set(av), [nxt])
        if op is _c.BRANCH:
            return self._node(_EPS, None, [self._seq(list(alt), nxt) for alt in av[1]])
        if op is _c.SUBPATTERN:
            group, add_flags, del_flags, body = av
            if add_flags or del_flags:
                raise UnsupportedRegex("inline flags")
            if group in self._bits:
                nxt = self._node(_SET, self._bits[group], [nxt])
            return self._seq(list(body), nxt)
        if op is _c.ATOMIC_GROUP:  # language-preserving where the builder puts it
            return self._seq(list(av), nxt)
        if op in (_c.MAX_REPEAT, _c.MIN_REPEAT, _c.POSSESSIVE_REPEAT):
            lo, hi, body = av
            return self._repeat(lo, hi, body, nxt)
        if op is _c.GROUPREF_EXISTS:
            group, yes, no = av
            no_start = self._seq(list(no), nxt) if no is not None else nxt
            return self._node(_COND, self._bits[group], [self._seq(list(yes), nxt), no_start])
        if op is _c.ASSERT_NOT and not list(av[1]):  # (?!): never matches
            return self._node(_FAIL, None, [])
        raise UnsupportedRegex(f"regex construct {op}")

    def _repeat(self, lo: int, hi: Any, pattern: Any, nxt: int) -> int:
        body = list(pattern)
        if hi is _c.MAXREPEAT:
            loop = self._node(_EPS, None, [])
            self._out[loop] = [self._seq(body, loop), nxt]
            tail = loop
        elif hi - lo <= EXPAND or _needs_counter(body) or pattern.getwidth()[0] == 0:
            tail = nxt  # (?:x(?:x(?:x)?)?)?
            for _ in range(hi - lo):
                tail = self._node(_EPS, None, [self._seq(body, tail), nxt])
        else:  # x{0,n}, x never empty, as one loop counting its iterations in the state
            leave = self._node(_RESET, None, [nxt])
            head = self._node(_HEAD, hi - lo, [])
            first = len(self._kind)
            self._out[head] = [self._seq(body, self._node(_INC, None, [head])), leave]
            for node in range(first, len(self._kind)):
                self._bound[node] = hi - lo
            tail = self._node(_RESET, None, [head])
        for _ in range(lo):
            tail = self._seq(body, tail)
        return tail

    def _liveness(self) -> list[int]:
        """Per node, the flags a ``(?(g)...)`` reachable before ``g`` is set again may read."""
        n = len(self._kind)
        live = [0] * n
        if not self._bits:
            return live
        changed = True
        while changed:  # backward data flow; nodes mostly point to older ones, so the
            changed = False  # passes in creation order number 1 + the loop nesting depth
            for i in range(n):
                k = self._kind[i]
                acc = 0
                for o in self._out[i]:
                    acc |= live[o]
                if k == _SET:
                    acc &= ~self._arg[i]
                elif k == _COND:
                    acc |= self._arg[i]
                if acc != live[i]:
                    live[i] = acc
                    changed = True
        return live

    # --- simulation --------------------------------------------------------------------

    def _reset_cache(self) -> None:
        self._cache: dict[tuple[tuple[Entry, ...], tuple[int, ...]], _DState] = {}
        self._start, formulas = self._closure([(self._start_node, 0, -1, 0)], ())
        self._start_counts = tuple(_evaluate(f, ()) for f in formulas)

    def _intern(self, entries: tuple[Entry, ...], slot: tuple[int, ...]) -> _DState:
        found = self._cache.get((entries, slot))
        if found is None:
            accept = any(self._kind[node] == _ACCEPT for node, _ in entries)
            found = _DState(entries, slot, accept, self._bound)
            self._cache[(entries, slot)] = found
        return found

    def _empty_moves(self, node: int) -> tuple[tuple[int, ...], tuple[int, ...]]:
        """The reading/accepting nodes and the flag or counter nodes that ``node`` reaches
        by plain empty moves (computed once per node, on first use)."""
        found = self._eps.get(node)
        if found is None:
            kind, out = self._kind, self._out
            reading: list[int] = []
            special: list[int] = []
            seen, stack = {node}, [node]
            while stack:
                x = stack.pop()
                k = kind[x]
                if k == _EPS:
                    for o in out[x]:
                        if o not in seen:
                            seen.add(o)
                            stack.append(o)
                elif k in (_CHAR, _ACCEPT):
                    reading.append(x)
                elif k != _FAIL:
                    special.append(x)
            found = (tuple(reading), tuple(special))
            self._eps[node] = found
        return found

    def _closure(
        self, seeds: list[tuple[int, int, int, int]], room: tuple[bool, ...]
    ) -> tuple[_DState, tuple[Formula, ...]]:
        """The reading and accepting states reachable by empty moves from ``seeds``.

        A seed is (node, flags, src, delta): its counter is ``counts[src] + delta``, or
        ``delta`` when ``src`` is -1. ``room[src]`` says whether ``counts[src]`` may take
        another iteration. Returns the interned state and the formulas of its counters.
        """
        kind, arg, out, live, bound = self._kind, self._arg, self._out, self._live, self._bound
        best: dict[Entry, dict[int, int]] = {}  # (node, flags) -> src -> smallest delta

        def better(key: Entry, src: int, delta: int) -> bool:
            terms = best.get(key)
            if terms is None:
                best[key] = {src: delta}
                return True
            if terms.get(-1, 1) == 0 or terms.get(src, delta + 1) <= delta:
                return False  # dominated: a counter of 0, or the same source for less
            terms[src] = delta
            return True

        stack = seeds
        while stack:
            node, flags, src, delta = stack.pop()
            reading, special = self._empty_moves(node)
            for x in reading:
                better((x, flags & live[x]), src, delta)
            for x in special:
                f = flags & live[x]
                if not better((x, f), src, delta):
                    continue
                k = kind[x]
                if k == _SET:
                    stack.append((out[x][0], f | arg[x], src, delta))
                elif k == _COND:
                    stack.append((out[x][0 if f & arg[x] else 1], f, src, delta))
                elif k == _RESET:
                    stack.append((out[x][0], f, -1, 0))
                elif k == _HEAD:
                    # Another iteration iff counter < bound. A source's counter is below
                    # the bound (it is inside the loop), so delta 0 always may; bodies
                    # are never empty, so delta is at most 1 here.
                    if src == -1:
                        fits = delta < arg[x]
                    else:
                        assert delta <= 1
                        fits = delta == 0 or room[src]
                    if fits:
                        stack.append((out[x][0], f, src, delta))
                    stack.append((out[x][1], f, src, delta))
                else:  # _INC
                    stack.append((out[x][0], f, src, delta + 1))
        entries = tuple(sorted(k for k in best if kind[k[0]] == _CHAR or kind[k[0]] == _ACCEPT))
        slots: dict[tuple[Formula, int], int] = {}  # (formula, bound) -> slot
        slot = []
        for entry in entries:
            if bound[entry[0]]:
                key = (tuple(sorted(best[entry].items())), bound[entry[0]])
                slot.append(slots.setdefault(key, len(slots)))
            else:
                slot.append(-1)
        return self._intern(entries, tuple(slot)), tuple(f for f, _ in slots)

    def _step(
        self, state: _DState, counts: tuple[int, ...], ch: str, room: tuple[bool, ...]
    ) -> tuple[_DState, tuple[Formula, ...]]:
        kind, arg, out = self._kind, self._arg, self._out
        seeds = [
            (out[node][0], flags, src, 0)
            for (node, flags), src in zip(state.entries, state.slot, strict=True)
            if kind[node] == _CHAR and ch in arg[node]
        ]
        if len(self._cache) >= CACHE_STATES:
            self._reset_cache()  # bounded memory; the next states are cached afresh
        found = self._closure(seeds, room)
        if ch in self._alphabet:  # other characters all lead to the dead state: not cached
            state.next[(ch, room) if state.counted else ch] = found
        return found

    def match(self, topic: str) -> bool:
        """True when the regex matches the whole of ``topic``; O(len(topic) x len(regex))."""
        state, counts = self._start, self._start_counts
        for ch in topic:
            if state.counted:
                room = tuple([c < lim for c, lim in zip(counts, state.limits, strict=True)])
                found = state.next.get((ch, room))
                if found is None:
                    found = self._step(state, counts, ch, room)
                state, formulas = found
                counts = tuple([_evaluate(f, counts) for f in formulas])
            else:
                found = state.next.get(ch)
                if found is None:
                    found = self._step(state, (), ch, ())
                state = found[0]
                if state.counted:
                    counts = tuple([_evaluate(f, ()) for f in found[1]])
            if state.dead:
                return False
        return state.accept


def _evaluate(formula: Formula, counts: tuple[int, ...]) -> int:
    if len(formula) == 1:
        src, delta = formula[0]
        return delta if src == -1 else counts[src] + delta
    return min(delta if src == -1 else counts[src] + delta for src, delta in formula)


_CHAR_SETS: dict[tuple[Any, ...], frozenset[str]] = {}


def _char_set(items: Any) -> frozenset[str]:
    key = tuple(items)
    found = _CHAR_SETS.get(key)
    if found is None:
        found = _CHAR_SETS[key] = _build_char_set(key)  # the builder uses a few classes
    return found


def _build_char_set(items: Any) -> frozenset[str]:
    out: set[str] = set()
    for op, av in items:
        if op is _c.LITERAL:
            out.add(chr(av))
        elif op is _c.RANGE and av[1] - av[0] < 4096:
            out.update(chr(c) for c in range(av[0], av[1] + 1))
        else:
            raise UnsupportedRegex(f"character class item {op}")
    return frozenset(out)


def _walk(items: Any) -> Any:
    """Every (op, av) of a parsed regex, nested ones included."""
    for op, av in items:
        yield op, av
        if op is _c.BRANCH:
            for alt in av[1]:
                yield from _walk(alt)
        elif op is _c.SUBPATTERN:
            yield from _walk(av[3])
        elif op is _c.ATOMIC_GROUP:
            yield from _walk(av)
        elif op in (_c.MAX_REPEAT, _c.MIN_REPEAT, _c.POSSESSIVE_REPEAT):
            yield from _walk(av[2])
        elif op is _c.GROUPREF_EXISTS:
            yield from _walk(av[1])
            if av[2] is not None:
                yield from _walk(av[2])
        elif op in (_c.ASSERT, _c.ASSERT_NOT):
            yield from _walk(av[1])


def _groups_read(items: Any) -> list[int]:
    return sorted({av[0] for op, av in _walk(items) if op is _c.GROUPREF_EXISTS})


def _needs_counter(items: Any) -> bool:
    """True when some bounded repeat inside would be built with a counter."""
    return any(
        op in (_c.MAX_REPEAT, _c.MIN_REPEAT, _c.POSSESSIVE_REPEAT)
        and av[1] is not _c.MAXREPEAT
        and av[1] - av[0] > EXPAND
        for op, av in _walk(items)
    )
