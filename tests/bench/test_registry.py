"""The registry of implementations says what each really supports and needs."""

from __future__ import annotations

import re
import sys

import pytest

from skipfilter.bench import measure
from skipfilter.bench.model import Config
from skipfilter.bench.registry import IMPLEMENTATIONS, Implementation, make_matcher
from skipfilter.bench.report import print_tables
from skipfilter.cli import main
from skipfilter.errors import MissingExtra
from skipfilter.extras import install_command
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


#: What a missing bench extra's message tells to run, from this checkout.
BENCH_INSTALL = install_command("bench")
GHOST = Implementation(
    "ghost", "Ghost", "no_such_module:Ghost", ("amqp",), requires="no_such_module", extra="bench"
)


def test_a_missing_extra_is_named_not_raised_at_import() -> None:
    assert not GHOST.available()
    assert GHOST.missing() == f"needs no_such_module (the bench extra): {BENCH_INSTALL}"
    with pytest.raises(MissingExtra, match=re.escape(BENCH_INSTALL)) as caught:
        GHOST.make("amqp")
    assert caught.value.extra == "bench"
    assert all(impl.available() for impl in IMPLEMENTATIONS.values())  # the dev extra has all


def test_paho_without_paho_mqtt_names_the_bench_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    for module in ("paho", "paho.mqtt"):  # importing them now fails as if absent
        monkeypatch.setitem(sys.modules, module, None)
    paho = IMPLEMENTATIONS["paho"]
    assert paho.missing() == f"needs paho.mqtt (the bench extra): {BENCH_INSTALL}"
    with pytest.raises(MissingExtra, match=re.escape(BENCH_INSTALL)):
        paho.make("mqtt")


def test_the_bench_reports_a_missing_extra_and_measures_the_rest(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    registry = {"TopicIndex": IMPLEMENTATIONS["topicindex"], "Ghost": GHOST}
    monkeypatch.setattr(measure, "implementations", lambda: registry)
    config = Config(workloads=("amqp",), sizes=(50,), messages=20, memory=False)
    report = measure.measure(config)
    ghost = next(c for c in report.cells if c.impl == "Ghost")
    assert ghost.us_per_op is None and ghost.verified is None and not ghost.unsupported
    assert BENCH_INSTALL in ghost.note
    assert report.verified
    print_tables(report)  # the advice survives the terminal's markup
    shown = f"Ghost at 50: needs no_such_module (the bench extra): {BENCH_INSTALL}"
    assert shown in capsys.readouterr().out


def test_skipfilter_bench_without_its_extra_says_which(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setitem(sys.modules, "rich", None)
    with pytest.raises(SystemExit) as stopped:
        main(["bench", "--quick"])
    assert stopped.value.code == 2
    assert capsys.readouterr().err == (
        f"skipfilter bench needs rich (the bench extra): {BENCH_INSTALL}\n"
    )
