"""A process's resident memory from /proc: what the hostile-input tests and benchmarks weigh."""

from __future__ import annotations


def resident_bytes(pid: int | str = "self") -> int:
    """Resident memory (``VmRSS``) of process ``pid`` (this one by default), in bytes."""
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    raise LookupError(f"/proc/{pid}/status has no VmRSS (a zombie process has none)")
