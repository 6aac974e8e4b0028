"""``--workers N``: N hub processes on one machine, one port, one shared transport.

Each worker is a whole hub (index, ring, connections) in its own process, accepting from
one listening socket the supervisor opened: whichever worker is free takes the next
connection, and a worker at its open-files limit simply stops taking them (with one
socket per worker, SO_REUSEPORT, the kernel would hash some connections onto a full
worker and drop them). Each worker uses its own core and its own open-files limit. They
see one stream of updates through the transport (Redis): an update published to any
worker reaches subscribers on all of them.
The supervisor restarts a worker that dies and stops them all on SIGTERM or SIGINT.
"""

from __future__ import annotations

import argparse
import logging
import multiprocessing
import signal
import socket
import time
from multiprocessing.process import BaseProcess
from types import FrameType

from skipfilter.hub.settings import HubSettings

log = logging.getLogger("skipfilter.hub")

#: A worker that dies sooner than this after its start is not restarted (a broken setup).
_MIN_LIFETIME = 5.0


def _worker(
    args: argparse.Namespace, settings: HubSettings, index: int, shared: socket.socket
) -> None:
    from skipfilter.hub.cli import serve_one
    from skipfilter.hub.serve import raise_open_files_limit

    raise_open_files_limit()
    raise SystemExit(serve_one(args, settings, index, shared))


def supervise(args: argparse.Namespace, settings: HubSettings) -> int:
    """Run ``args.workers`` workers until told to stop; returns the exit status."""
    from skipfilter.hub.serve import listen

    try:
        shared = listen(args.addr)
    except (ValueError, OSError) as exc:
        print(f"skipfilter hub: {exc}", flush=True)
        return 2
    context = multiprocessing.get_context("spawn")
    workers: list[BaseProcess | None] = [None] * args.workers
    started = [0.0] * args.workers
    stopping = False

    def start(index: int) -> None:
        process = context.Process(
            target=_worker, args=(args, settings, index, shared), name=f"skipfilter-hub-{index}"
        )
        process.start()
        workers[index] = process
        started[index] = time.monotonic()

    def stop(signum: int, frame: FrameType | None) -> None:
        nonlocal stopping
        stopping = True
        for process in workers:
            if process is not None and process.is_alive() and process.pid is not None:
                process.terminate()  # SIGTERM: each worker ends its streams and stops

    previous = {sig: signal.signal(sig, stop) for sig in (signal.SIGTERM, signal.SIGINT)}
    try:
        for index in range(args.workers):
            start(index)
        print(f"skipfilter hub: {args.workers} workers started", flush=True)
        status = 0
        while True:
            time.sleep(0.2)
            alive = 0
            for index, process in enumerate(workers):
                if process is None:
                    continue
                if process.is_alive():
                    alive += 1
                    continue
                process.join()
                code = process.exitcode or 0
                if stopping:
                    workers[index] = None
                    continue
                if time.monotonic() - started[index] < _MIN_LIFETIME:
                    print(f"skipfilter hub: worker {index} failed at start ({code})", flush=True)
                    stop(signal.SIGTERM, None)
                    status = 1
                    workers[index] = None
                    continue
                print(f"skipfilter hub: worker {index} exited ({code}); restarting", flush=True)
                start(index)
                alive += 1
            if stopping and alive == 0:
                return status
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
