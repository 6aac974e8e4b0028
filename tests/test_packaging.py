"""The sdist and the wheel as a packager and an installer meet them: built from this tree
(``python -m build``, offline with the dev extra's setuptools), then read back.

- Both hold LICENSE: this project's MIT notice and the Go skipfilter's, which the core ports.
- The metadata is complete: License-Expression and License-File (PEP 639), honest project
  URLs, classifiers, the Python it runs on.
- The sdist is the source tree: every tracked test, doc, example and benchmark, so README's
  links to docs/ lead somewhere in it.
- The wheel installs into a fresh virtual environment and runs from another folder; a
  missing extra there names the wheel file it came from, in a command pip accepts.
"""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
import sysconfig
import tarfile
import zipfile
from email.message import Message
from email.parser import Parser
from pathlib import Path

import pytest

import skipfilter

ROOT = Path(__file__).resolve().parent.parent
NAME = f"skipfilter-{skipfilter.__version__}"
GO_NOTICE = "Copyright (c) 2021 Kevin M. Burns Jr."


@pytest.fixture(scope="module")
def dist(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """dist/ with the sdist and the wheel built from the sdist, as ``make dist`` does."""
    out = tmp_path_factory.mktemp("dist")
    done = subprocess.run(
        [sys.executable, "-m", "build", "--no-isolation", "--outdir", str(out), str(ROOT)],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return out


def sdist_names(dist: Path) -> set[str]:
    with tarfile.open(dist / f"{NAME}.tar.gz") as sdist:
        return {name.removeprefix(f"{NAME}/") for name in sdist.getnames()}


def wheel_metadata(dist: Path) -> Message:
    with zipfile.ZipFile(dist / f"{NAME}-py3-none-any.whl") as wheel:
        return Parser().parsestr(wheel.read(f"{NAME}.dist-info/METADATA").decode())


def test_license_in_the_repository_sdist_and_wheel(dist: Path) -> None:
    text = (ROOT / "LICENSE").read_text()
    assert text.startswith("MIT License") and GO_NOTICE in text
    assert "https://github.com/kevburnsjr/skipfilter" in text
    assert "LICENSE" in sdist_names(dist)
    with zipfile.ZipFile(dist / f"{NAME}-py3-none-any.whl") as wheel:
        assert wheel.read(f"{NAME}.dist-info/licenses/LICENSE").decode() == text


def test_metadata_a_package_index_needs(dist: Path) -> None:
    meta = wheel_metadata(dist)
    assert meta["License-Expression"] == "MIT"
    assert meta.get_all("License-File") == ["LICENSE"]
    classifiers = meta.get_all("Classifier") or []
    for wanted in (
        "Framework :: AsyncIO",
        "Programming Language :: Python :: 3.11",
        "Programming Language :: Python :: 3 :: Only",
        "Operating System :: POSIX :: Linux",
        "Typing :: Typed",
        "Development Status :: 3 - Alpha",
    ):
        assert wanted in classifiers
    assert sum(c.startswith("Topic :: ") for c in classifiers) >= 2
    assert not [c for c in classifiers if c.startswith("License ::")]  # PEP 639: the expression
    urls = dict(u.split(", ", 1) for u in meta.get_all("Project-URL") or [])
    assert urls["Go original"] == "https://github.com/kevburnsjr/skipfilter"
    assert not {"Homepage", "Source", "Repository"} & set(urls)  # no address claimed yet
    assert meta["Requires-Python"] == ">=3.11"
    extras = set(meta.get_all("Provides-Extra") or [])
    assert {"hub", "client", "redis", "bench", "spark", "dev"} <= extras
    readme = " ".join(str(meta.get_payload()).split())  # the long description
    assert "documentation is the `docs/` folder of the source tree" in readme


def tracked(*folders: str) -> list[str]:
    """The files git tracks under ``folders`` (the tree's files without a git checkout)."""
    listed = subprocess.run(
        ["git", "ls-files", *folders], cwd=ROOT, capture_output=True, text=True, timeout=60
    )
    if listed.returncode == 0 and listed.stdout:
        return listed.stdout.split()
    return [str(p.relative_to(ROOT)) for f in folders for p in (ROOT / f).rglob("*.*")]


def test_the_sdist_is_the_source_tree(dist: Path) -> None:
    """Every test (not 9 that setuptools happened to pick), every doc and what runs them."""
    names = sdist_names(dist)
    wanted = tracked("skipfilter", "tests", "docs", "examples", "benchmarks", "rigs", "deploy")
    assert len([n for n in wanted if n.startswith("tests/")]) > 100
    missing = [n for n in wanted if n not in names]
    assert not missing, missing[:20]
    for top in ("README.md", "LICENSE", "Makefile", "pyproject.toml", "MANIFEST.in"):
        assert top in names
    assert not [n for n in names if n.endswith((".pyc", ".sqlite3"))]


def test_readme_links_lead_into_the_sdist(dist: Path) -> None:
    names = sdist_names(dist)
    readme = (ROOT / "README.md").read_text()
    links = re.findall(r"\]\(((?!https?://)[^)#]+)(?:#[^)]*)?\)", readme)
    assert len(links) >= 10
    assert [link for link in links if link not in names] == []


def test_the_wheel_runs_from_another_folder_and_names_itself_for_an_extra(
    dist: Path, tmp_path: Path
) -> None:
    """A fresh venv (its dependencies: this environment's, by a .pth line), the wheel
    installed by path; from another folder, the library runs, ``skipfilter --help`` runs,
    and without httpx ``import skipfilter.client`` names a pip command for that wheel file,
    which pip (``--dry-run``, offline) accepts."""
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300)
    python = str(venv / "bin" / "python")
    site = subprocess.run(
        [python, "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
        capture_output=True, text=True, check=True, timeout=60,
    ).stdout.strip()  # fmt: skip
    Path(site, "deps.pth").write_text(sysconfig.get_path("purelib") + "\n")
    wheel = dist / f"{NAME}-py3-none-any.whl"
    subprocess.run(
        [python, "-m", "pip", "install", "--quiet", "--no-deps", "--no-index", str(wheel)],
        check=True, timeout=300,
    )  # fmt: skip
    away = tmp_path / "elsewhere"
    away.mkdir()
    code = (
        "import skipfilter, sys\n"
        "assert skipfilter.__file__.startswith(sys.prefix), skipfilter.__file__\n"
        "sf = skipfilter.SkipFilter(test=lambda p, t: t.startswith(p))\n"
        "sf.add('/a/')\nprint(sf.match_any('/a/1'))\n"
        "sys.modules['httpx'] = None\n"
        "try:\n    import skipfilter.client\n"
        "except ImportError as exc:\n    print(exc)\n"
    )
    ran = subprocess.run(
        [python, "-c", code], cwd=away, capture_output=True, text=True, timeout=120
    )
    assert ran.returncode == 0, ran.stderr
    listed, said = ran.stdout.splitlines()
    assert listed == "['/a/']"
    command = said.split("(the client extra): ", 1)[1]
    argv = shlex.split(command)
    assert argv == [python, "-m", "pip", "install", f"{wheel}[client]"]
    accepted = subprocess.run(
        [*argv[:4], "--dry-run", "--no-index", "--quiet", *argv[4:]],
        cwd=away, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert accepted.returncode == 0, accepted.stdout + accepted.stderr
    # installed by name from an index (no PEP 610 direct_url.json): then the name is right
    Path(site, f"{NAME}.dist-info", "direct_url.json").unlink()
    ran = subprocess.run(
        [python, "-c", code], cwd=away, capture_output=True, text=True, timeout=120
    )
    said = ran.stdout.splitlines()[1]
    argv = shlex.split(said.split("(the client extra): ", 1)[1])
    assert argv == [python, "-m", "pip", "install", "skipfilter[client]"]
    helped = subprocess.run(
        [str(venv / "bin" / "skipfilter"), "--help"], cwd=away, capture_output=True, text=True,
        timeout=120,
    )  # fmt: skip
    assert helped.returncode == 0 and "hub" in helped.stdout, helped.stderr
