"""``--workers N``: N hub processes on one machine, one port, one shared history (the SQLite
file, or Redis), kept running by a supervisor that never turns one failure into all.

Each worker is a whole hub (index, ring, connections) in its own process, taking
connections from one listening socket the supervisor opened while it has room for them
(``accept.py``): a full worker leaves them to the others. They see one stream of updates
through the transport (the shared SQLite history, or Redis): an update published to any
worker reaches subscribers on all of them.

The supervisor:

- restarts a worker that dies, at once the first time and with a growing pause (0.5 s
  doubling up to 30 s) while it keeps dying young; the others keep serving throughout.
  A worker that cannot reach the transport at start-up does not die: it waits and retries
  (saying why) and takes connections once it can serve them.
- on SIGHUP, replaces the workers one at a time without closing the port: a new worker is
  started, and once it serves, the old one is drained (SIGTERM) and awaited before the next.
- on SIGTERM or SIGINT, drains every worker and exits 0. Nothing else makes it exit.
"""

from __future__ import annotations

import argparse
import logging
import multiprocessing
import signal
import socket
import time
from dataclasses import dataclass, field
from multiprocessing.process import BaseProcess
from types import FrameType
from typing import Any, Protocol

from skipfilter.hub.server.accept import RoomBoard
from skipfilter.hub.server.serve import Seat, bind_listeners, raise_open_files_limit
from skipfilter.hub.settings import HubSettings

log = logging.getLogger("skipfilter.hub")

#: Pause before restarting a worker that died young, doubling up to the maximum.
RESTART_PAUSE = 0.5
RESTART_PAUSE_MAX = 30.0
#: A worker that ran this long before dying is restarted at once.
STABLE_AFTER = 10.0
#: Seconds a replacement (SIGHUP) may take to serve before the replacement is abandoned.
READY_TIMEOUT = 60.0
#: Seconds the supervisor waits beyond a worker's own drain bound before SIGKILL.
KILL_GRACE = 5.0


class WorkerTarget(Protocol):
    """What each worker process runs (``serve.serve_one``): one hub on the supervisor's
    sockets, from its seat on the room board; returns the exit status. The supervisor is
    handed it, as uvicorn's ``Multiprocess`` is handed its target, so it imports no server."""

    def __call__(
        self,
        args: argparse.Namespace,
        settings: HubSettings,
        worker: int,
        shared: socket.socket | None = ...,
        metrics: socket.socket | None = ...,
        seat: Seat | None = ...,
    ) -> int: ...


def _worker(
    target: WorkerTarget,
    args: argparse.Namespace,
    settings: HubSettings,
    index: int,
    shared: socket.socket,
    metrics: socket.socket | None,
    board: RoomBoard,
    seat: int,
    ready: Any,
) -> None:
    raise_open_files_limit()
    raise SystemExit(
        target(args, settings, index, shared, metrics=metrics, seat=Seat(board, seat, ready.set))
    )


def _say(message: str) -> None:
    print(f"skipfilter hub: {message}", flush=True)


@dataclass
class _Worker:
    """One running worker process: which of the N it is, its seat on the room board."""

    index: int
    seat: int
    process: BaseProcess
    ready: Any
    started: float = field(default_factory=time.monotonic)

    @property
    def pid(self) -> int | None:
        return self.process.pid


@dataclass
class _Retiring:
    """A worker told to drain, and when it gets SIGKILL if it has not left."""

    worker: _Worker
    kill_at: float


class Supervisor:
    """Runs ``args.workers`` workers (each running ``target``) on ``listener`` until SIGTERM
    or SIGINT."""

    def __init__(
        self,
        args: argparse.Namespace,
        settings: HubSettings,
        listener: socket.socket,
        metrics: list[socket.socket | None],
        target: WorkerTarget,
    ) -> None:
        self.target = target
        self.args = args
        self.settings = settings
        self.listener = listener
        self.metrics = metrics
        self.count = args.workers
        self.context = multiprocessing.get_context("spawn")
        self.board = RoomBoard(self.count + 1)  # one seat more: a replacement's, on SIGHUP
        self.spare = [self.count]
        self.workers: list[_Worker | None] = [None] * self.count
        self.seats = list(range(self.count))  # each worker's seat on the board
        self.failures = [0] * self.count
        self.restart_at: list[float | None] = [None] * self.count
        self.replacement: _Worker | None = None
        self.rolling: list[int] = []
        self.retiring: list[_Retiring] = []
        self.signals: list[int] = []

    def _spawn(self, index: int, seat: int) -> _Worker:
        self.board.set(seat, 0)
        ready = self.context.Event()
        process = self.context.Process(
            target=_worker,
            args=(
                self.target,
                self.args,
                self.settings,
                index,
                self.listener,
                self.metrics[index],
                self.board,
                seat,
                ready,
            ),
            name=f"skipfilter-hub-{index}",
        )
        process.start()
        _say(f"worker {index} started (pid {process.pid})")
        return _Worker(index, seat, process, ready)

    def run(self) -> int:
        """Supervise until told to stop; returns the exit status (0)."""

        def note(signum: int, frame: FrameType | None) -> None:
            self.signals.append(signum)

        handled = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)
        previous = {sig: signal.signal(sig, note) for sig in handled}
        try:
            for index in range(self.count):
                self.workers[index] = self._spawn(index, index)
            _say(f"{self.count} workers started")
            while True:
                time.sleep(0.1)
                while self.signals:
                    signum = self.signals.pop(0)
                    if signum == signal.SIGHUP:
                        _say("SIGHUP: replacing the workers one at a time")
                        self.rolling = list(range(self.count))
                    else:
                        return self._stop_all(signal.Signals(signum).name)
                self._keep_alive()
                self._roll()
                self._reap_retiring()
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)

    # -- failures -----------------------------------------------------------------------

    def _keep_alive(self) -> None:
        """Restart dead workers (with backoff when they die young); never stop the others."""
        now = time.monotonic()
        for index, worker in enumerate(self.workers):
            if worker is not None and not worker.process.is_alive():
                worker.process.join()
                self.board.set(worker.seat, 0)
                lived = now - worker.started
                self.failures[index] = 0 if lived >= STABLE_AFTER else self.failures[index] + 1
                failures = self.failures[index]
                pause = 0.0 if failures <= 1 else RESTART_PAUSE * 2 ** (failures - 2)
                pause = min(pause, RESTART_PAUSE_MAX)
                _say(
                    f"worker {index} (pid {worker.pid}) exited with {worker.process.exitcode} "
                    f"after {lived:.1f} s; restarting it in {pause:g} s"
                )
                self.workers[index] = None
                self.restart_at[index] = now + pause
            due = self.restart_at[index]
            if self.workers[index] is None and due is not None and now >= due:
                self.restart_at[index] = None
                self.workers[index] = self._spawn(index, self.seats[index])

    # -- rolling replacement (SIGHUP) ---------------------------------------------------

    def _roll(self) -> None:
        """One step of a rolling replacement: start the next replacement, or swap in the
        one that now serves, draining the worker it replaces."""
        replacement = self.replacement
        if replacement is None:
            if not self.rolling or self.retiring:
                return  # one at a time: the previous worker has not left yet
            index = self.rolling.pop(0)
            if self.workers[index] is None:
                return  # dead, being restarted anyway
            self.replacement = self._spawn(index, self.spare.pop())
            return
        old = self.workers[replacement.index]
        if replacement.ready.is_set():
            self.replacement = None
            self.workers[replacement.index] = replacement
            self.seats[replacement.index] = replacement.seat
            if old is not None:
                self._retire(old)
            return
        waited = time.monotonic() - replacement.started
        if replacement.process.is_alive() and waited < READY_TIMEOUT:
            return
        _say(
            f"replacement of worker {replacement.index} did not serve within {waited:.0f} s; "
            "keeping the old one and stopping the replacement"
        )
        replacement.process.kill()
        replacement.process.join()
        self.board.set(replacement.seat, 0)
        self.spare.append(replacement.seat)
        self.replacement = None
        self.rolling = []

    def _retire(self, worker: _Worker) -> None:
        if worker.process.is_alive() and worker.pid is not None:
            worker.process.terminate()  # SIGTERM: it drains
        kill_at = time.monotonic() + self.args.shutdown_timeout + KILL_GRACE
        self.retiring.append(_Retiring(worker, kill_at))

    def _reap_retiring(self) -> None:
        now = time.monotonic()
        for retiring in list(self.retiring):
            process = retiring.worker.process
            if process.is_alive():
                if now >= retiring.kill_at:
                    _say(f"worker pid {process.pid} did not drain in time: SIGKILL")
                    process.kill()
                continue
            process.join()
            self.board.set(retiring.worker.seat, 0)
            self.spare.append(retiring.worker.seat)
            self.retiring.remove(retiring)
            _say(f"worker {retiring.worker.index} (pid {process.pid}) drained and left")

    # -- stopping -----------------------------------------------------------------------

    def _stop_all(self, why: str) -> int:
        _say(f"{why}: draining {self.count} workers")
        for worker in [*self.workers, self.replacement]:
            if worker is not None:
                self._retire(worker)
        self.workers = [None] * self.count
        self.replacement = None
        while self.retiring:
            time.sleep(0.1)
            self._reap_retiring()
        return 0


def supervise(
    args: argparse.Namespace,
    settings: HubSettings,
    target: WorkerTarget,
    bound: tuple[socket.socket, list[socket.socket]] | None = None,
) -> int:
    """Run ``args.workers`` workers of ``target`` until told to stop; returns the exit status.
    ``bound``: the listener and the metrics listeners already bound (``bind_listeners``)."""
    try:
        shared, each = bound or bind_listeners(args.addr, settings.metrics_addr, args.workers)
    except ValueError as exc:
        _say(str(exc))
        return 2
    # worker i serves its metrics on port + i
    metrics: list[socket.socket | None] = [*each] if each else [None] * args.workers
    return Supervisor(args, settings, shared, metrics, target).run()
