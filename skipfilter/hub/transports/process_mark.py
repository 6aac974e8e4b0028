"""A process's mark: what tells a live process from a dead one whose pid was reused.

Workers sharing one SQLite file on one machine (WAL needs them on the same host) can know,
not guess, whether another worker is gone: its pid names no process any more, or names one
started at another time (the pid was reused), or one that died and awaits its parent
(a zombie). The mark is ``boot/namespace/pid/start``: the kernel's boot id (a mark written
before this machine's last boot is dead), the pid namespace (pids of another container mean
nothing here: such a mark cannot be judged, so it is never taken for gone), the pid and the
process's start time in clock ticks since boot (``/proc/PID/stat``, field 22). Where there is
no ``/proc`` the mark holds the pid alone and ``os.kill(pid, 0)`` judges it.
"""

from __future__ import annotations

import functools
import os
from dataclasses import dataclass
from pathlib import Path

_PROC = Path("/proc")


@dataclass(frozen=True, slots=True)
class ProcessMark:
    """One process, for as long as this machine runs: pid plus what a reused pid changes."""

    boot: str
    namespace: str
    pid: int
    start: int

    def __str__(self) -> str:
        return f"{self.boot}/{self.namespace}/{self.pid}/{self.start}"

    @classmethod
    def parse(cls, text: str) -> ProcessMark:
        """The mark ``str(mark)`` wrote; ValueError naming the text for anything else."""
        parts = text.split("/")
        if len(parts) != 4 or not all(p.isascii() and p.isdigit() for p in parts[2:]):
            raise ValueError(f"not a process mark: {text[:80]!r}")
        return cls(parts[0], parts[1], int(parts[2]), int(parts[3]))


def current() -> ProcessMark:
    """This process's mark (computed each call: a forked child has a mark of its own)."""
    boot, pid = _boot(), os.getpid()
    return ProcessMark(boot, _namespace(), pid, _stat(pid)[1] if boot else 0)


def gone(mark: ProcessMark) -> bool:
    """Whether the process ``mark`` names has certainly ended (a paused one has not; one in
    another pid namespace cannot be judged and is not taken for gone). Runtime: one read of
    ``/proc/PID/stat``."""
    boot = _boot()
    if mark.boot != boot:
        return True  # written before this machine last booted (or with /proc, without)
    if not boot:  # no /proc: the pid is all there is
        return not _signalable(mark.pid)
    if mark.namespace != _namespace():
        return False
    try:
        state, start = _stat(mark.pid)
    except (FileNotFoundError, ProcessLookupError):
        return True
    return state in "ZX" or start != mark.start


@functools.cache
def _boot() -> str:
    try:
        return (_PROC / "sys/kernel/random/boot_id").read_text().strip()
    except OSError:
        return ""


@functools.cache
def _namespace() -> str:
    try:
        link = os.readlink(_PROC / "self/ns/pid")  # "pid:[4026531836]"
    except OSError:
        return ""
    return "".join(c for c in link if c.isdigit())


def _stat(pid: int) -> tuple[str, int]:
    """State letter and start time (clock ticks since boot) of ``pid``; FileNotFoundError
    when there is no such process."""
    text = (_PROC / str(pid) / "stat").read_text()
    fields = text[text.rindex(")") + 2 :].split()  # the name in parentheses may hold anything
    if not fields:  # the process ended while its stat was read
        raise ProcessLookupError(pid)
    return fields[0], int(fields[19])


def _signalable(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's process: it exists
        return True
    return True
