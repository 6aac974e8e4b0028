"""The hub's start in the background, and the health probes that answer in every state.

A process answers from the moment it listens, and listens without waiting for its
transport: a Redis that accepts and never answers, or silent sentinels, hold the start for
as long as redis-py's timeouts, and a liveness probe must not kill the process meanwhile.
While its hub starts (reaching the transport, or waiting to retry it), publishes and
subscriptions get a 503 naming why (the transport's URL with its password hidden), and the
probes say where it is.

- ``GET /livez``: 200 while the process's loop runs (starting, waiting for the transport,
  serving, draining); 503 only once the start has failed for good (restart the process).
- ``GET /readyz``: 200 only while serving; 503 with a one-line reason otherwise (starting,
  waiting for the transport, the transport or fan-out failing, draining).
- ``GET /healthz``: as before these probes existed: 200 while serving, 503 saying why
  (shutting down, unhealthy); while starting, 503 ``unhealthy: starting ...``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from typing import Generic, TypeVar

from starlette.responses import PlainTextResponse, Response

from skipfilter.hub.core.hub import Hub
from skipfilter.hub.transports import TransportUnavailable

log = logging.getLogger("skipfilter.hub")

T = TypeVar("T")

#: Seconds a client is told to wait before retrying a request the starting hub refused.
RETRY_AFTER = 1
#: Seconds a request (and the server's start, before it takes connections) waits for a start
#: still reaching its transport: a reachable one answers within it, a silent one is not
#: waited for (its first attempt may take 10 s, 45 s over three silent sentinels).
START_GRACE = 0.5


class Startup(Generic[T]):
    """Runs ``start`` (which builds the hub, sets ``hub``, starts it and returns what serves
    requests) once, in the background; ``serving()`` is that result once started."""

    def __init__(self, start: Callable[[Startup[T]], Awaitable[T]]) -> None:
        self._start = start
        self.hub: Hub | None = None
        self._task: asyncio.Task[T] | None = None
        self.failed: str | None = None  # why the start failed for good (None: it did not)
        self.stopped = False  # told to stop before it served

    def begin(self) -> asyncio.Task[T]:
        """Start once (idempotent); the task ends when the hub serves, or failed."""
        if self._task is None:
            self._task = asyncio.create_task(self._run(), name="skipfilter-hub-start")
        return self._task

    async def _run(self) -> T:
        try:
            return await self._start(self)
        except TransportUnavailable:
            if self.hub is not None and self.hub.stopping:
                self.stopped = True  # Ctrl-C or SIGTERM while waiting: nothing to say
            else:
                self.failed = "the transport could not be reached"
            raise
        except Exception as exc:
            self.failed = f"{type(exc).__name__}: {exc}"
            log.error("hub: could not start: %s", self.failed)
            raise

    def serving(self) -> T | None:
        """What serves requests, once the hub has started (None before)."""
        task = self._task
        if task is None or not task.done() or task.cancelled() or task.exception() is not None:
            return None
        return task.result()

    async def settle(self, grace: float = START_GRACE) -> T | None:
        """Wait until the hub serves, or its start fails, or it waits for its transport
        (then None at once: a request is answered now, not when Redis comes back), or
        ``grace`` seconds pass while it still reaches its transport (then None)."""
        task = self.begin()
        deadline = asyncio.get_running_loop().time() + grace
        while not task.done():
            hub = self.hub
            if hub is not None and (hub.waiting is not None or hub.stopping):
                return None
            left = deadline - asyncio.get_running_loop().time()
            if left <= 0:
                return None
            await asyncio.wait({task}, timeout=min(0.05, left))
        return self.serving()

    def reason(self) -> str:
        """Why the hub does not serve yet, in one line."""
        if self.failed is not None:
            return f"the hub could not start ({self.failed[:300]}): restart it"
        hub = self.hub
        if self.stopped or (hub is not None and hub.stopping):
            return "the hub is shutting down"
        if hub is not None and hub.waiting is not None:
            return f"the hub is starting: waiting for its transport ({hub.waiting[:300]})"
        if hub is not None:
            return f"the hub is starting: reaching its transport ({hub.transport.shown})"
        return "the hub is starting"

    def refuse(self) -> Response:
        """503 for any request but the probes while the hub does not serve."""
        return PlainTextResponse(
            f"{self.reason()}: nothing was done with this request; retry shortly\n",
            status_code=503,
            headers={"Retry-After": str(RETRY_AFTER)},
        )

    async def finish(self) -> T | None:
        """At shutdown: the start's result (None if it never served), its task ended."""
        task = self._task
        if task is None:
            return None
        if not task.done():
            if self.hub is not None:
                self.hub.begin_stopping()
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(asyncio.shield(task), 5)
            if not task.done():
                task.cancel()
        with contextlib.suppress(BaseException):
            await task
        return self.serving()


async def livez(startup: Startup[object]) -> Response:
    """200 while the process's loop runs; 503 once its start failed for good."""
    if startup.failed is not None:
        return PlainTextResponse(f"{startup.reason()}\n", status_code=503)
    return PlainTextResponse("ok\n")


async def readyz(startup: Startup[object]) -> Response:
    """200 only while the hub serves (a worker draining while the others serve the port
    answers for the port); else 503 with the reason."""
    hub = startup.hub
    if startup.serving() is None or hub is None:
        return PlainTextResponse(f"not ready: {startup.reason()}\n", status_code=503)
    if hub.stopping:
        if hub.others_serve():
            return PlainTextResponse("ok: this worker drains, the others serve\n")
        return PlainTextResponse("not ready: the hub is shutting down\n", status_code=503)
    problem = await hub.health()
    if problem is not None:
        return PlainTextResponse(f"not ready: {problem}\n", status_code=503)
    return PlainTextResponse("ok\n")
