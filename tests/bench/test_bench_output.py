"""``skipfilter bench``'s tables reach a file whole, and ``make bench`` is the quick report
that writes nothing tracked (the docs report and asv are targets of their own)."""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
from pathlib import Path

from skipfilter.bench.model import Cell, Report
from skipfilter.bench.report import markdown

ROOT = Path(__file__).resolve().parent.parent.parent
LONG = "AnImplementationWhoseNameAloneIsWiderThanAnyTerminal" * 3
NOTE = "a note that goes on " * 20 + "and ends here"

PRINT = f"""
from skipfilter.bench.model import Cell, Report
from skipfilter.bench.report import print_tables
cells = [
    Cell("mercure", 1_000_000, "TopicIndex", us_per_op=123456.7, ops_per_s=12345678.9,
         ops_timed=5000, ops_total=5000, verified=True, recipients=12345.6),
    Cell("mercure", 1_000_000, {LONG!r}, us_per_op=98765.4, ops_per_s=1234567.8,
         ops_timed=5000, ops_total=5000, sampled=True, subscribe_us=123.4,
         unsubscribe_us=98.7, rss_bytes_per_sub=123456.7, heap_bytes_per_sub=98765.4,
         ratio_to_best=1.5, speedup_vs_linear=24000.0, verified=False, mismatches=3,
         recipients=12345.6, note={NOTE!r}),
]
print_tables(Report(cells, {{}}, {{}}))
"""


def test_terminal_tables_redirected_to_a_file_are_never_cut(tmp_path: Path) -> None:
    """Redirected, rich would draw at 80 (or the old fixed 150) columns and cut cells with
    an ellipsis: every value and the note arrive whole, each row on one line."""
    out = tmp_path / "tables.txt"
    with out.open("w") as file:
        subprocess.run(
            [sys.executable, "-c", PRINT], stdout=file, check=True, timeout=120,
            env={**os.environ, "COLUMNS": "80"},
        )  # fmt: skip
    text = out.read_text()
    assert "…" not in text
    row = next(line for line in text.splitlines() if LONG in line)
    for value in ("1,000,000", "98,765", "1,234,568", "24,000x", "5,000/5,000 *", "NO (3)"):
        assert value in row, (value, row)
    assert f"{LONG} at 1,000,000: {NOTE}" in text.replace("\n", "")


def test_markdown_rows_are_whole() -> None:
    cell = Cell("amqp", 10_000, LONG, us_per_op=1.5, verified=True, note=NOTE)
    md = markdown(Report([cell], {"seed": 0, "messages": 1, "budget": 1, "cap": 1}, {}))
    assert f"| 10,000 | {LONG} | 1.5 |" in md
    assert f"- {LONG} at 10,000: {NOTE}" in md


def make_commands(target: str) -> list[list[str]]:
    """The commands ``make TARGET`` would run with nothing installed yet (``-B``)."""
    done = subprocess.run(
        ["make", "-n", "-B", "-s", target], cwd=ROOT, capture_output=True, text=True,
        check=True, timeout=30,
    )  # fmt: skip
    lines = done.stdout.replace("\\\n", " ").splitlines()  # a recipe's continued lines
    return [shlex.split(line) for line in lines if line.strip()]


def written_by(command: list[str]) -> list[str]:
    """The paths a ``skipfilter bench`` command writes (its --plot and --markdown)."""
    return [command[i + 1] for i, a in enumerate(command) if a in ("--plot", "--markdown")]


def test_make_bench_is_quick_installs_only_bench_and_writes_nothing_tracked() -> None:
    commands = make_commands("bench")
    installs = [c for c in commands if "install" in c and "-e" in c]
    assert installs and all(c[-1] == ".[bench]" for c in installs), installs
    (bench,) = [c for c in commands if c[0].endswith("skipfilter") and c[1] == "bench"]
    assert "--quick" in bench
    assert not [c for c in commands if "asv" in " ".join(c)]
    paths = written_by(bench)
    assert len(paths) == 2
    tracked = subprocess.run(
        ["git", "ls-files", "--", *paths], cwd=ROOT, capture_output=True, text=True, timeout=30
    ).stdout
    assert tracked == "", tracked
    ignored = subprocess.run(
        ["git", "check-ignore", *paths], cwd=ROOT, capture_output=True, text=True, timeout=30
    )
    assert ignored.stdout.split() == paths  # nothing git would offer to commit either


def test_the_docs_report_and_asv_are_asked_for_by_name() -> None:
    (docs,) = [c for c in make_commands("bench-docs") if c[1:2] == ["bench"]]
    assert written_by(docs) == ["docs/img", "docs/benchmarks.md"]
    assert any(c[0].endswith("asv") and c[1] == "run" for c in make_commands("bench-asv"))
