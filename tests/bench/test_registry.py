"""The registry of implementations says what each really supports and needs."""

from __future__ import annotations

import pytest

from skipfilter.bench import measure
from skipfilter.bench.model import Config
from skipfilter.bench.registry import IMPLEMENTATIONS, Implementation, make_matcher
from skipfilter.errors import MissingExtra
from skipfilter.selectors import SYNTAXES


@pytest.mark.parametrize("name", sorted(IMPLEMENTATIONS))
def test_listed_syntaxes_are_exactly_those_the_class_accepts(name: str) -> None:
    impl = IMPLEMENTATIONS[name]
    factory = impl.factory()
    for syntax in SYNTAXES:
        if syntax in impl.syntaxes:
            assert factory(syntax).syntax == syntax
        else:
            with pytest.raises(ValueError, match=repr(syntax)):
                factory(syntax)


@pytest.mark.parametrize("name", sorted(IMPLEMENTATIONS))
def test_cached_flag_matches_the_constructor(name: str) -> None:
    impl = IMPLEMENTATIONS[name]
    syntax = impl.syntaxes[0]
    if impl.cached:
        with pytest.raises(ValueError, match="cache_size must be positive"):
            impl.factory()(syntax, 0)
    else:
        with pytest.raises(TypeError):
            impl.factory()(syntax, 16)
    assert impl.make(syntax, cache_size=16).syntax == syntax


def test_unknown_names_and_syntaxes_are_named() -> None:
    with pytest.raises(ValueError, match="unknown implementation 'nope'; expected one of"):
        make_matcher("nope", "amqp")
    with pytest.raises(ValueError, match="paho does not support 'amqp' selectors; it supports"):
        make_matcher("paho", "amqp")


GHOST = Implementation(
    "ghost", "Ghost", "no_such_module:Ghost", ("amqp",), requires="no_such_module", extra="bench"
)


def test_a_missing_extra_is_named_not_raised_at_import() -> None:
    assert not GHOST.available()
    assert GHOST.missing() == "needs no_such_module: pip install 'skipfilter[bench]'"
    with pytest.raises(MissingExtra, match=r"skipfilter\[bench\]") as caught:
        GHOST.make("amqp")
    assert caught.value.extra == "bench"
    assert all(impl.available() for impl in IMPLEMENTATIONS.values())  # the dev extra has all


def test_the_bench_reports_a_missing_extra_and_measures_the_rest(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    registry = {"TopicIndex": IMPLEMENTATIONS["topicindex"], "Ghost": GHOST}
    monkeypatch.setattr(measure, "implementations", lambda: registry)
    config = Config(workloads=("amqp",), sizes=(50,), messages=20, memory=False)
    report = measure.measure(config)
    ghost = next(c for c in report.cells if c.impl == "Ghost")
    assert ghost.us_per_op is None and ghost.verified is None and not ghost.unsupported
    assert "pip install 'skipfilter[bench]'" in ghost.note
    assert report.verified
