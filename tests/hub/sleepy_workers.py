"""``skipfilter hub --workers 2``'s supervisor running workers that only sleep: those it starts
at first serve at once, a replacement (SIGHUP) never does, so a signal sent during a rolling
replacement always finds one starting. Run as ``python -m tests.hub.sleepy_workers``."""

from __future__ import annotations

import argparse
import socket
import sys
import time

from skipfilter.hub.server.serve import Seat
from skipfilter.hub.settings import HubSettings

WORKERS = 2


def sleepy(
    args: argparse.Namespace,
    settings: HubSettings,
    worker: int,
    shared: socket.socket | None = None,
    metrics: socket.socket | None = None,
    seat: Seat | None = None,
) -> int:
    """A worker that serves nothing until SIGTERM ends it (the default action); only those
    on the first seats say they serve."""
    assert seat is not None
    if seat.slot < args.workers:
        seat.ready()
    print(f"worker {worker} sleeps on seat {seat.slot}", flush=True)
    while True:
        time.sleep(3600)


def main() -> int:
    from skipfilter.hub.server.workers import supervise

    args = argparse.Namespace(workers=WORKERS, shutdown_timeout=2.0, addr="127.0.0.1:0")
    return supervise(args, HubSettings(anonymous=True), sleepy)


if __name__ == "__main__":
    sys.exit(main())
