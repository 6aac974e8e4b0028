"""deploy/systemd/skipfilter-hub.service: systemd accepts it (``systemd-analyze verify``, with
ExecStart pointed at this checkout's ``skipfilter``), the hub accepts its command line, and
it gives the drain the time ``--shutdown-timeout`` asks for before SIGKILL."""

from __future__ import annotations

import argparse
import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from skipfilter.hub.server.cli import add_arguments, settings_from_args
from tests.hub.hubtest import PUBLISHER_KEY, SUBSCRIBER_KEY

ROOT = Path(__file__).resolve().parents[2]
UNIT = ROOT / "deploy" / "systemd" / "skipfilter-hub.service"
INSTALLED = "/opt/skipfilter/.venv/bin/skipfilter"
ANALYZE = shutil.which("systemd-analyze") or "/usr/bin/systemd-analyze"


def _directives() -> dict[str, str]:
    found = {}
    for line in UNIT.read_text().splitlines():
        if "=" in line and not line.startswith(("#", ";")):
            name, _, value = line.partition("=")
            found[name.strip()] = value.strip()
    return found


@pytest.mark.skipif(
    not os.environ.get("CI") and not Path(ANALYZE).exists(),
    reason="systemd-analyze not installed (make system-deps installs it as root)",
)
def test_systemd_accepts_the_unit(tmp_path: Path) -> None:
    """Nothing said: an unknown directive, a bad value or a missing binary is a warning."""
    text = UNIT.read_text()
    assert INSTALLED in text
    here = str(Path(sys.executable).parent / "skipfilter")
    copy = tmp_path / UNIT.name
    copy.write_text(text.replace(INSTALLED, here))
    done = subprocess.run(
        [ANALYZE, "verify", "--man=no", str(copy)], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0 and not (done.stdout + done.stderr).strip(), done


def test_the_hub_accepts_the_units_command_line() -> None:
    """The flags parse and, with the keys of the environment file, make valid settings."""
    command = shlex.split(_directives()["ExecStart"])
    assert command[:2] == [INSTALLED, "hub"]
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    args = parser.parse_args(command[2:])
    environment = {
        "MERCURE_TRUSTED_ISSUERS": "https://auth.example.com",
        "MERCURE_PUBLISHER_JWT_KEY": PUBLISHER_KEY,
        "MERCURE_SUBSCRIBER_JWT_KEY": SUBSCRIBER_KEY,
    }
    settings = settings_from_args(args, environment)
    assert settings.public_urls == ("https://hub.example.com",)
    assert float(_directives()["TimeoutStopSec"]) > args.shutdown_timeout
    assert _directives()["KillSignal"] == "SIGTERM"
