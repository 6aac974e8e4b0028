"""`skipfilter bench` end to end, so the command behind docs/benchmarks.md cannot silently break."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from pyroaring import BitMap64

from skipfilter.baselines import LinearScan
from skipfilter.bench import measure
from skipfilter.bench.measure import implementations
from skipfilter.bench.model import REFERENCE, WORKLOADS, Config
from skipfilter.bench.registry import Implementation
from skipfilter.bench.scenarios import scenario
from skipfilter.selectors import SYNTAXES


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """One tiny quick run through the real CLI, JSON out, charts and markdown written."""
    out = tmp_path_factory.mktemp("bench")
    page = out / "page.md"
    page.write_text("# Benchmarks\n\nProse that must survive.\n", encoding="utf-8")
    command = [
        sys.executable,
        "-m",
        "skipfilter.cli",
        "bench",
        "--quick",
        "--sizes",
        "200,400",
        "--messages",
        "60",
        "--budget",
        "0.05",
        "--json",
        "--plot",
        str(out / "img"),
        "--markdown",
        str(page),
    ]
    done = subprocess.run(command, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    data: dict[str, Any] = json.loads(done.stdout)
    data["_dir"] = str(out)
    return data


def test_every_implementation_and_workload_present(report: dict[str, Any]) -> None:
    seen = {(r["workload"], r["size"], r["impl"]) for r in report["results"]}
    for workload in WORKLOADS:
        for size in (200, 400):
            for impl in implementations():
                assert (workload, size, impl) in seen


def test_measured_cells_have_positive_costs_and_ratios(report: dict[str, Any]) -> None:
    measured = [r for r in report["results"] if r["us_per_op"] is not None]
    # every implementation ran somewhere (Paho only has the mqtt workload)
    assert {r["impl"] for r in measured} == set(implementations())
    for r in measured:
        assert r["us_per_op"] > 0 and r["ops_per_s"] > 0
        assert r["ratio_to_best"] >= 1.0
        assert r["speedup_vs_linear"] > 0
        assert r["subscribe_us"] > 0 and r["unsubscribe_us"] > 0
        assert 3 <= r["ops_timed"] <= r["ops_total"]
    # exactly one fastest implementation per (workload, size)
    for workload in WORKLOADS:
        best = [r for r in measured if r["workload"] == workload and r["ratio_to_best"] == 1.0]
        assert len(best) == 2  # one per size


def test_recipients_verified_against_topicindex(report: dict[str, Any]) -> None:
    assert report["verified"] is True
    for r in report["results"]:
        if r["us_per_op"] is None:
            assert r["verified"] is None and r["unsupported"]
        elif r["impl"] == REFERENCE:
            assert r["verified"] is True and r["ops_timed"] == r["ops_total"]
        else:
            assert r["verified"] is True and r["mismatches"] == 0


def test_memory_measured_at_the_largest_size(report: dict[str, Any]) -> None:
    for r in report["results"]:
        if r["workload"] == "mercure" and r["size"] == 400 and r["us_per_op"] is not None:
            assert r["heap_bytes_per_sub"] > 0


def test_charts_and_markdown_written(report: dict[str, Any]) -> None:
    out = Path(report["_dir"])
    for name in ["subscribe.png", "memory.png", *(f"lookup-{w}.png" for w in WORKLOADS)]:
        assert (out / "img" / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    page = (out / "page.md").read_text(encoding="utf-8")
    assert "Prose that must survive." in page
    assert "### Workload `mercure`" in page and "(img/lookup-mercure.png)" in page


class Lossy(LinearScan):
    """A scan that drops one recipient of every non-empty answer."""

    def match(self, topics: Sequence[str], private: bool = False) -> BitMap64:
        result = super().match(topics, private)
        if result:
            result.remove(result.max())
        return result


def test_a_wrong_implementation_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    """The verification can fail: a matcher that drops a recipient is reported."""
    lossy = Implementation("lossy", "Lossy", f"{__name__}:Lossy", SYNTAXES)
    registry = {"TopicIndex": implementations()["TopicIndex"], "Lossy": lossy}
    monkeypatch.setattr(measure, "implementations", lambda: registry)
    config = Config(workloads=("mercure",), sizes=(300,), messages=50, memory=False)
    report = measure.measure(config)
    cell = next(c for c in report.cells if c.impl == "Lossy")
    assert cell.verified is False and cell.mismatches > 0
    assert report.verified is False


def test_mqtt_workload_is_amqp_respelled() -> None:
    amqp, mqtt = scenario("amqp", 50, 20, 3), scenario("mqtt", 50, 20, 3)
    assert mqtt.syntax == "mqtt"
    for a, m in zip(amqp.subscribers, mqtt.subscribers, strict=True):
        assert isinstance(a.selectors[0], str)  # amqp's workload types none of its selectors
        assert a.selectors[0].replace(".", "/").replace("*", "+") == m.selectors[0]
