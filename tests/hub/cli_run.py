"""The ``skipfilter`` command run as a user runs it (a separate process), and what a refusal
must look like: exit 2, one line on stderr, no traceback, nothing on stdout (no banner)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

#: Run before the CLI to take an installed module away, as when its extra is not installed:
#: ``sys.modules[name] = None`` is how Python marks a module that cannot be imported.
WITHOUT = (
    "import sys; sys.modules[{name!r}] = None; from skipfilter.cli import main; sys.exit(main())"
)


def skipfilter(
    *argv: str,
    env: dict[str, str] | None = None,
    cwd: Path | None = None,
    without: str | None = None,
    timeout: float = 60,
) -> subprocess.CompletedProcess[str]:
    """``python -m skipfilter.cli ARGV`` (``without``: that module made unimportable)."""
    clean = {k: v for k, v in os.environ.items() if not k.startswith("MERCURE_")}
    clean.pop("SERVER_NAME", None)
    head = ["-c", WITHOUT.format(name=without)] if without else ["-m", "skipfilter.cli"]
    return subprocess.run(
        [sys.executable, *head, *argv],
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**clean, **(env or {})},
        cwd=cwd,
    )


def refusal(found: subprocess.CompletedProcess[str], prefix: str = "skipfilter hub: ") -> str:
    """The one line a refused command printed; AssertionError unless it is exactly that."""
    said = found.stdout + found.stderr
    assert found.returncode == 2, said
    assert "Traceback" not in said, said
    assert found.stdout == "", said  # no banner, no usage
    lines = found.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith(prefix), said
    return lines[0]
