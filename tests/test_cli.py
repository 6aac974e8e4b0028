"""The ``skipfilter`` command itself, run as a user runs it: its version, its help in plain
text, and a mistake said in one line."""

from __future__ import annotations

import subprocess
import sys

import skipfilter


def _run(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "skipfilter.cli", *argv], capture_output=True, text=True, timeout=60
    )


def test_version_says_the_installed_version() -> None:
    """Was: 'unrecognized arguments: --version' with the usage, exit 2."""
    found = _run("--version")
    assert found.returncode == 0, found.stderr
    assert found.stdout.strip() == f"skipfilter {skipfilter.__version__}"


def test_help_is_plain_text_that_lists_the_commands() -> None:
    """Was: the module's reStructuredText docstring (``skipfilter``) as the description."""
    found = _run("--help")
    assert found.returncode == 0, found.stderr
    assert "``" not in found.stdout and ":func:" not in found.stdout
    for command in ("demo", "hub", "token", "bench", "route"):
        assert f"\n    {command} " in found.stdout, command
    assert "--version" in found.stdout


def test_a_command_line_mistake_is_one_line_naming_it() -> None:
    """Was: the whole usage, then the error."""
    found = _run("demo", "--subscribers", "many")
    assert found.returncode == 2 and found.stdout == ""
    lines = found.stderr.splitlines()
    assert len(lines) == 1, found.stderr
    assert "argument --subscribers: invalid int value: 'many'" in lines[0]
    assert "skipfilter demo --help" in lines[0]
