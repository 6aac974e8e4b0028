"""The ``--workers`` supervisor's signals, as real processes: SIGTERM in the middle of a
SIGHUP's rolling replacement stops the replacement too, and the supervisor exits (a
replacement left running kept the supervisor waiting for it: ``systemctl stop`` during a
reload hung until SIGKILL)."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from tests.hub import sleepy_workers
from tests.hub.test_hub_workers import _alive

_ROOT = Path(__file__).resolve().parents[2]


def test_sigterm_during_a_rolling_replacement_stops_the_replacement_and_exits() -> None:
    with tempfile.TemporaryFile(mode="w+") as log:
        supervisor = subprocess.Popen(
            [sys.executable, "-m", "tests.hub.sleepy_workers"],
            cwd=_ROOT,
            stdout=log,
            stderr=subprocess.STDOUT,
            text=True,
        )

        def output() -> str:
            log.seek(0)
            return log.read()

        def started() -> list[int]:
            return [int(p) for p in re.findall(r"started \(pid (\d+)\)", output())]

        def wait_for(check: Callable[[], bool], what: str, timeout: float = 30) -> None:
            deadline = time.monotonic() + timeout
            while not check():
                assert time.monotonic() < deadline, f"{what}: {output()}"
                assert supervisor.poll() is None, f"the supervisor exited: {output()}"
                time.sleep(0.05)

        pids: list[int] = []
        try:
            wait_for(lambda: "2 workers started" in output(), "the workers did not start")
            supervisor.send_signal(signal.SIGHUP)
            wait_for(lambda: len(started()) == 3, "no replacement was started")
            pids = started()
            seat = f"sleeps on seat {sleepy_workers.WORKERS}"  # the replacement's
            wait_for(lambda: seat in output(), "the replacement does not run")
            supervisor.send_signal(signal.SIGTERM)
            try:
                code = supervisor.wait(20)
            except subprocess.TimeoutExpired:
                raise AssertionError(f"the supervisor did not exit: {output()}") from None
            assert code == 0, output()
            assert "SIGTERM: draining 2 workers" in output()
            for pid in pids:  # the replacement too (the supervisor waited for each)
                assert not _alive(pid), f"worker pid {pid} still runs: {output()}"
        finally:
            if supervisor.poll() is None:
                supervisor.kill()
                supervisor.wait(10)
            for pid in pids:
                if _alive(pid):
                    os.kill(pid, signal.SIGKILL)
