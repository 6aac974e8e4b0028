"""The chaos soak's faults on the local multi-worker mode (``skipfilter hub --workers N`` on
the default SQLite history): one supervisor, one port, N worker processes sharing one file.

The soak cannot ``wait4`` the workers (the supervisor is their parent and reaps them), so a
worker is found in ``/proc`` (the supervisor's children that multiprocessing spawned) and
counted dead once it is gone or a zombie. The faults:

* ``kill``: SIGKILL one worker; the supervisor restarts it;
* ``drain``: SIGTERM one worker: it drains (within the shutdown timeout) and is restarted;
* ``roll``: SIGHUP to the supervisor: every worker replaced, one at a time, port kept open.

At least one worker is never under a fault, so the port always has someone serving it.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import random
import signal
import time
from pathlib import Path

#: Seconds a fault may wait for the supervisor to bring the workers back to N.
RESTORE_TIMEOUT = 60.0
#: A worker younger than this is restarted with a pause when it dies (workers.STABLE_AFTER).
STABLE_AFTER = 10.0


def worker_pids(supervisor: int) -> list[int]:
    """Live worker processes of ``supervisor`` (not multiprocessing's resource tracker)."""
    try:
        listing = Path(f"/proc/{supervisor}/task/{supervisor}/children").read_text()
    except FileNotFoundError:
        return []
    found = []
    for pid in (int(p) for p in listing.split()):
        try:
            command = Path(f"/proc/{pid}/cmdline").read_bytes()
        except FileNotFoundError:
            continue
        if b"spawn_main" in command and alive(pid):
            found.append(pid)
    return found


def alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie, waiting for its parent to reap it, does not)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return False
    return stat[stat.rindex(")") + 2] not in "ZX"


class LocalWorkers:
    """The workers of one supervisor, and which of them a fault holds right now."""

    def __init__(self, count: int, rng: random.Random) -> None:
        self.count = count
        self.rng = rng
        self.supervisor = 0  # set once the supervisor runs
        self.busy: set[int] = set()  # pids under a kill or drain
        self.rolling = False
        self.first_seen: dict[int, float] = {}
        #: Faults' outcomes the report must flag (a drain past its bound, workers not back).
        self.overruns: list[str] = []

    def pids(self) -> list[int]:
        now = time.monotonic()
        found = worker_pids(self.supervisor) if self.supervisor else []
        for pid in found:
            self.first_seen.setdefault(pid, now)
        return found

    def pick(self) -> int | None:
        """A worker to fault, leaving at least one other serving; older ones first (a
        worker dying young is restarted after a pause, so the faults would thin the pool)."""
        if self.rolling:
            return None
        free = [pid for pid in self.pids() if pid not in self.busy]
        if len(free) < 2:
            return None
        now = time.monotonic()
        stable = [pid for pid in free if now - self.first_seen[pid] >= STABLE_AFTER]
        return self.rng.choice(stable or free)

    async def kill(self, pid: int) -> tuple[float, float]:
        """SIGKILL a worker; returns when the signal went and when the process was gone."""
        at = time.monotonic()
        _signal(pid, signal.SIGKILL)
        await _gone(pid, 10)
        return at, time.monotonic()

    async def drain(self, pid: int, bound: float) -> float:
        """SIGTERM a worker; returns how long it took to exit (flagged past ``bound``)."""
        started = time.monotonic()
        _signal(pid, signal.SIGTERM)
        if not await _gone(pid, bound + 10):
            _signal(pid, signal.SIGKILL)
            await _gone(pid, 10)
            self.overruns.append(f"worker pid {pid} still running {bound + 10} s after SIGTERM")
        took = time.monotonic() - started
        if took > bound + 1:
            self.overruns.append(f"worker pid {pid} drained in {took:.1f} s")
        return took

    async def roll(self) -> float:
        """SIGHUP the supervisor; returns how long until every worker was a new one."""
        started = time.monotonic()
        old = set(self.pids())
        os.kill(self.supervisor, signal.SIGHUP)
        deadline = started + RESTORE_TIMEOUT + self.count * 20
        while True:
            now_pids = set(self.pids())
            if not (now_pids & old) and len(now_pids) >= self.count:
                return time.monotonic() - started
            if time.monotonic() > deadline:
                self.overruns.append(f"rolling replacement unfinished: {old & now_pids} remain")
                return time.monotonic() - started
            await asyncio.sleep(0.05)

    async def restored(self) -> bool:
        """Wait until N workers run again (the supervisor restarts the one faulted)."""
        deadline = time.monotonic() + RESTORE_TIMEOUT
        while len(self.pids()) < self.count:
            if time.monotonic() > deadline:
                self.overruns.append(f"only {len(self.pids())} of {self.count} workers back")
                return False
            await asyncio.sleep(0.05)
        return True


def _signal(pid: int, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, sig)


async def _gone(pid: int, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while alive(pid):
        if time.monotonic() > deadline:
            return False
        await asyncio.sleep(0.01)
    return True
