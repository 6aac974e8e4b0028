"""benchmarks/ stays grouped by question and every command naming a script still finds it.

Tests import the shared rigs from rigs/, never from benchmarks/; asv imports only the suites
in benchmarks/asv_suites/; benchmarks/README.md names every script; and each path or module
(``benchmarks/hub/hub_load.py``, ``-m benchmarks.chaos``) that the docs, the package, the
tests or the scripts themselves name exists, so a move cannot leave a dead command behind.
"""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BENCHMARKS = ROOT / "benchmarks"

#: A script's path as the docs write it, and a module run with ``python -m``.
PATH = re.compile(r"\b(?:benchmarks|rigs)/[\w/]+\.py\b")
MODULE = re.compile(r"-m (benchmarks(?:\.\w+)+)")


def scripts() -> list[Path]:
    return sorted(
        p for p in BENCHMARKS.rglob("*.py") if p.name not in ("__init__.py", "__main__.py")
    )


def imported(path: Path) -> set[str]:
    """The top-level modules ``path`` imports, wherever in the file."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            found.add(node.module.split(".")[0])
    return found


def test_tests_import_the_rigs_never_benchmarks() -> None:
    offenders = [
        str(p.relative_to(ROOT))
        for p in (ROOT / "tests").rglob("*.py")
        if "benchmarks" in imported(p)
    ]
    assert not offenders, f"import rigs.* instead: {offenders}"


def test_asv_imports_only_the_suites() -> None:
    config = json.loads((ROOT / "asv.conf.json").read_text())
    suites = ROOT / config["benchmark_dir"]
    assert suites == BENCHMARKS / "asv_suites"
    for module in suites.glob("*.py"):
        if module.name != "__init__.py":
            assert re.search(r"def (time|peakmem|track|mem)_", module.read_text()), module


def test_every_folder_is_a_package_and_every_script_is_in_the_readme() -> None:
    readme = (BENCHMARKS / "README.md").read_text()
    for script in scripts():
        assert (script.parent / "__init__.py").is_file(), script.parent
        assert f"`{script.name}`" in readme, f"benchmarks/README.md does not name {script}"
    assert [p.name for p in BENCHMARKS.glob("*.py")] == ["__init__.py"], "scripts go in a folder"


def test_every_named_script_and_module_exists() -> None:
    texts = [ROOT / "README.md", ROOT / "Makefile", ROOT / "pyproject.toml"]
    texts += [*(ROOT / "docs").glob("*.md"), *BENCHMARKS.rglob("*.md")]
    texts += [*BENCHMARKS.rglob("*.py"), *(ROOT / "rigs").glob("*.py")]
    texts += [*(ROOT / "skipfilter").rglob("*.py"), *(ROOT / "tests").rglob("*.py")]
    dead = []
    for text_file in texts:
        text = text_file.read_text()
        for path in PATH.findall(text):
            if not (ROOT / path).is_file():
                dead.append(f"{text_file.relative_to(ROOT)}: {path}")
        for module in MODULE.findall(text):
            base = ROOT / module.replace(".", "/")
            if not (base.with_suffix(".py").is_file() or (base / "__main__.py").is_file()):
                dead.append(f"{text_file.relative_to(ROOT)}: -m {module}")
    assert not dead, dead
