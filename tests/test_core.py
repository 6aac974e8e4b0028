"""SkipFilter against a brute-force oracle: random operations, eviction, 64-bit ids, errors."""

from __future__ import annotations

import pytest
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import Bundle, RuleBasedStateMachine, initialize, invariant, rule
from pyroaring import BitMap64

from skipfilter import SkipFilter

VALUES = st.integers(min_value=0, max_value=40)
KEYS = st.integers(min_value=1, max_value=7)


def divides(value: int, key: int) -> bool:
    """The test function of these tests: a value passes the keys that divide it."""
    return value % key == 0


class SkipFilterMachine(RuleBasedStateMachine):
    """Drives add/remove/match against a dict oracle, with a tiny cache so eviction happens."""

    values = Bundle("values")

    def __init__(self) -> None:
        super().__init__()
        self.oracle: dict[int, int] = {}  # value -> id
        self.next_id = 0
        self.sf: SkipFilter[int, int] | None = None

    @initialize(size=st.sampled_from([1, 2, 1000]), first_id=st.sampled_from([0, 2**32 - 3]))
    def make(self, size: int, first_id: int) -> None:
        self.sf = SkipFilter(divides, size=size, first_id=first_id)
        self.next_id = first_id

    def expected_ids(self, keys: tuple[int, ...]) -> list[int]:
        return sorted(i for v, i in self.oracle.items() if any(divides(v, k) for k in keys))

    @rule(target=values, value=VALUES)
    def add(self, value: int) -> int:
        assert self.sf is not None
        id_ = self.sf.add(value)
        if value in self.oracle:
            assert id_ == self.oracle[value], "re-adding must return the existing id"
        else:
            assert id_ == self.next_id
            self.oracle[value] = id_
            self.next_id += 1
        return value

    @rule(value=st.one_of(values, VALUES))
    def remove(self, value: int) -> None:
        assert self.sf is not None
        assert self.sf.remove(value) == (value in self.oracle)
        self.oracle.pop(value, None)

    @rule(keys=st.lists(KEYS, min_size=1, max_size=3))
    def match_ids(self, keys: list[int]) -> None:
        assert self.sf is not None
        got = self.sf.match_ids(*keys)
        assert isinstance(got, BitMap64)
        assert list(got) == self.expected_ids(tuple(keys))
        got.add(10**12)  # the caller owns the result: mutating it must not leak into the cache
        got.clear()
        assert list(self.sf.match_ids(*keys)) == self.expected_ids(tuple(keys))

    @rule(keys=st.lists(KEYS, min_size=1, max_size=3))
    def match_any(self, keys: list[int]) -> None:
        assert self.sf is not None
        by_id = {i: v for v, i in self.oracle.items()}
        assert self.sf.match_any(*keys) == [by_id[i] for i in self.expected_ids(tuple(keys))]

    @rule(start_offset=st.integers(min_value=0, max_value=20), stop_after=st.integers(0, 5))
    def walk(self, start_offset: int, stop_after: int) -> None:
        assert self.sf is not None
        start = self.next_id - 20 + start_offset if self.next_id >= 20 else start_offset
        expected = sorted((i, v) for v, i in self.oracle.items() if i >= start)
        seen: list[int] = []

        def visit(value: int) -> bool:
            seen.append(value)
            return len(seen) <= stop_after

        cursor = self.sf.walk(start, visit)
        visited = expected[: stop_after + 1]
        assert seen == [v for _, v in visited]
        assert cursor == (visited[-1][0] + 1 if visited else start)

    @invariant()
    def lookups_agree(self) -> None:
        if self.sf is None:
            return
        assert len(self.sf) == len(self.oracle)
        for value, id_ in self.oracle.items():
            assert value in self.sf
            assert self.sf.get(id_) == value
        assert list(self.sf) == sorted(self.oracle, key=self.oracle.__getitem__)


TestSkipFilterMachine = SkipFilterMachine.TestCase
TestSkipFilterMachine.settings = settings(max_examples=150, stateful_step_count=40, deadline=None)


def test_cached_key_sees_values_added_after_it_was_built() -> None:
    sf: SkipFilter[int, int] = SkipFilter(divides, size=10)
    sf.add(4)
    assert sf.match_any(2) == [4]
    sf.add(6)
    sf.add(7)
    assert sf.match_any(2) == [4, 6]


def test_removed_value_never_returned_even_from_a_cached_bitmap() -> None:
    sf: SkipFilter[int, int] = SkipFilter(divides, size=10)
    for v in range(10):
        sf.add(v)
    assert sf.match_any(3) == [0, 3, 6, 9]
    assert sf.remove(6)
    assert sf.match_any(3) == [0, 3, 9]
    assert list(sf.match_ids(3, 5)) == [0, 3, 5, 9]


def test_readding_a_removed_value_gives_a_new_id() -> None:
    sf: SkipFilter[str, str] = SkipFilter(lambda v, k: v == k)
    first = sf.add("a")
    sf.remove("a")
    second = sf.add("a")
    assert second > first
    assert list(sf.match_ids("a")) == [second]


def test_test_function_runs_once_per_value_per_key() -> None:
    calls: list[tuple[int, int]] = []

    def counting(value: int, key: int) -> bool:
        calls.append((value, key))
        return divides(value, key)

    sf: SkipFilter[int, int] = SkipFilter(counting, size=10)
    for v in range(100):
        sf.add(v)
    sf.match_ids(3)
    sf.match_ids(3)
    assert len(calls) == 100
    sf.add(100)
    sf.match_ids(3)
    assert calls[100:] == [(100, 3)]


def test_ids_cross_two_to_the_32() -> None:
    sf: SkipFilter[int, int] = SkipFilter(divides, size=4, first_id=2**32 - 2)
    ids = [sf.add(v) for v in (2, 3, 4, 6)]
    assert ids == [2**32 - 2, 2**32 - 1, 2**32, 2**32 + 1]
    assert list(sf.match_ids(2)) == [2**32 - 2, 2**32, 2**32 + 1]
    assert sf.match_any(3) == [3, 6]
    assert sf.remove(4)
    assert list(sf.match_ids(2)) == [2**32 - 2, 2**32 + 1]
    assert sf.get(2**32 + 1) == 6
    assert sf.walk(2**32, lambda v: True) == 2**32 + 2


def test_id_space_exhaustion_is_an_error_not_a_wraparound() -> None:
    sf: SkipFilter[int, int] = SkipFilter(divides, first_id=2**64 - 1)
    assert sf.add(1) == 2**64 - 1
    with pytest.raises(OverflowError, match="2\\*\\*64"):
        sf.add(2)
    assert len(sf) == 1 and 2 not in sf


@pytest.mark.parametrize(
    ("kwargs", "error", "message"),
    [
        ({"size": 0}, ValueError, "size must be positive, got 0"),
        ({"size": -5}, ValueError, "size must be positive, got -5"),
        ({"size": 1.5}, TypeError, "size must be an int, got float"),
        ({"size": True}, TypeError, "size must be an int, got bool"),
        ({"first_id": -1}, ValueError, "first_id must be in"),
        ({"first_id": 2**64}, ValueError, "first_id must be in"),
    ],
)
def test_bad_arguments_are_named(kwargs: dict[str, object], error: type, message: str) -> None:
    with pytest.raises(error, match=message.replace("*", "\\*")):
        SkipFilter(divides, **kwargs)  # type: ignore[arg-type]


def test_test_must_be_callable() -> None:
    with pytest.raises(TypeError, match="test must be callable, got int"):
        SkipFilter(3)  # type: ignore[arg-type]


def test_unhashable_value_is_a_type_error_and_changes_nothing() -> None:
    sf: SkipFilter[object, int] = SkipFilter(lambda v, k: True)
    sf.add("a")
    with pytest.raises(TypeError):
        sf.add([1, 2])
    assert len(sf) == 1 and sf.next_id == 1 and sf.match_any(1) == ["a"]


def test_failing_test_function_leaves_the_filter_usable() -> None:
    def fragile(value: int, key: int) -> bool:
        if value == 13:
            raise RuntimeError("unlucky")
        return divides(value, key)

    sf: SkipFilter[int, int] = SkipFilter(fragile, size=10)
    for v in (2, 4, 13):
        sf.add(v)
    with pytest.raises(RuntimeError, match="unlucky"):
        sf.match_ids(2)
    sf.remove(13)
    assert sf.match_any(2) == [2, 4]


def test_walk_lets_the_callback_modify_the_filter() -> None:
    sf: SkipFilter[int, int] = SkipFilter(divides)
    for v in range(5):
        sf.add(v)
    seen: list[int] = []

    def visit(value: int) -> bool:
        seen.append(value)
        if value == 1:
            sf.remove(3)
            sf.add(100)
        return True

    assert sf.walk(0, visit) == 6
    assert seen[:2] == [0, 1] and seen[-1] == 100 and len(sf) == 5
