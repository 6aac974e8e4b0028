"""Every missing-extra message names a command that installs the extra from where this copy
came from (here: the clone, editable), never a bare ``skipfilter[...]`` from a package index
the project is not on (anyone could register that name).

Each message is produced for real: a subprocess whose import system refuses the extra's
module (a ``sys.meta_path`` finder, as if it were not installed), then the command it names is
checked against this tree (an interpreter that exists, the clone's pyproject, an extra it
declares) and run by pip with ``--dry-run``.
"""

from __future__ import annotations

import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from skipfilter.extras import install_command

ROOT = Path(__file__).resolve().parent.parent

#: A finder that makes the modules named in argv[1] (comma-separated) absent, then runs argv[2].
BLOCKED = """
import importlib.abc, sys
class Absent(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if any(name == m or name.startswith(m + ".") for m in BLOCK):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None
BLOCK = sys.argv[1].split(",")
sys.meta_path.insert(0, Absent())
exec(sys.argv[2])
"""

CASES = {
    "client": ("httpx", "import skipfilter.client"),
    "hub": ("starlette,uvicorn,jwt", "from skipfilter.cli import main; sys.exit(main(['hub']))"),
    "hub (token)": ("jwt", "from skipfilter.cli import main; sys.exit(main(['token', '--dev']))"),
    "bench": ("rich", "from skipfilter.cli import main; main(['bench', '--quick'])"),
    "bench (paho baseline)": (
        "paho",
        "from skipfilter.bench.registry import IMPLEMENTATIONS as I; print(I['paho'].missing())",
    ),
    "redis": (
        "redis",
        "from skipfilter.hub.settings import HubSettings\n"
        "from skipfilter.hub.transports import open_transport\n"
        "open_transport(HubSettings(transport_url='redis://127.0.0.1:1/0', anonymous=True))",
    ),
    "spark": (
        "pyspark",
        "import argparse, skipfilter.spark.cli as c\nsys.exit(c.run(argparse.Namespace()))",
    ),
}


def message(block: str, code: str, cwd: Path) -> str:
    """What the code says (stdout and stderr) with ``block`` uninstalled."""
    done = subprocess.run(
        [sys.executable, "-c", BLOCKED, block, code],
        cwd=cwd, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    return done.stdout + done.stderr


@pytest.mark.parametrize("case", CASES)
def test_a_missing_extra_names_a_command_that_installs_it(case: str, tmp_path: Path) -> None:
    extra = case.split()[0]
    block, code = CASES[case]
    said = message(block, code, tmp_path)  # from another folder: the path still leads home
    command = install_command(extra)
    assert command in said, said
    assert f"(the {extra} extra)" in said
    assert f"'skipfilter[{extra}]'" not in said and "pip install 'skipfilter" not in said
    argv = shlex.split(command)
    assert argv[:4] == [sys.executable, "-m", "pip", "install"]
    assert argv[4:] == ["-e", f"{ROOT}[{extra}]"]
    declared = (ROOT / "pyproject.toml").read_text()
    assert f"\n{extra} = [" in declared  # an extra the project declares


def test_the_named_command_is_one_pip_runs(tmp_path: Path) -> None:
    """The command as named, with ``--dry-run`` (nothing changes) and offline flags added."""
    argv = shlex.split(install_command("client"))
    offline = ["--dry-run", "--no-deps", "--no-build-isolation", "--no-index", "--quiet"]
    done = subprocess.run(
        [*argv[:4], *offline, *argv[4:]], cwd=tmp_path, capture_output=True, text=True,
        timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
