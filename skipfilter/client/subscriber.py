"""Subscribing to a Mercure hub: :func:`subscribe` returns a :class:`Subscription`, read
with ``for`` (blocking) or ``async for`` (asyncio), that reconnects as EventSource does.

After a stream ends or the connection fails, it waits the reconnection time (``retry:``
from the hub, else ``reconnect_delay``) and reconnects with ``Last-Event-ID``, so updates
published meanwhile are replayed from the hub's history. A hub that did not know that id
answers ``Mercure-Last-Event-ID: earliest`` (draft-08 §7): some updates may be lost, and the
next update yielded says so (``gap=True``; ``Subscription.gaps`` counts them), so the program
can refetch its state. A refusal (400, 401, 403) is raised, as EventSource stops too; a 5xx
or a connection failure is retried. A token given as a callable is asked at each connection,
so a :class:`~skipfilter.client.auth.TokenMinter` renews it across ``exp``.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import threading
import time
from collections.abc import AsyncIterator, Iterator, Sequence
from types import TracebackType
from typing import Any, NamedTuple, Self

import httpx

from skipfilter.client.auth import TokenSource, current
from skipfilter.client.errors import MercureError, Unavailable
from skipfilter.client.sse import EventStreamParser
from skipfilter.client.wire import bearer, refusal

EARLIEST = "earliest"
#: Where a hub says it resumed: Mercure 1.0's header, and the one 0.x hubs sent.
RESUME_HEADERS = ("mercure-last-event-id", "last-event-id")


class Update(NamedTuple):
    """An update received: ``data``, its ``type`` (``message`` unless the publisher set
    one) and ``id``. ``gap`` is True on the first update after a reconnection the hub could
    not resume exactly: updates published in between may be missing."""

    data: str
    type: str = "message"
    id: str = ""
    gap: bool = False


class Subscription:
    """One subscription to a hub, reconnecting until closed (see the module docstring).

    Iterate it once, with ``for`` or ``async for``. ``last_event_id`` is where it would
    resume; ``retry`` the reconnection delay in seconds; ``connections`` how many streams
    it opened; ``gaps`` how many resumptions the hub could not honour. :meth:`close` (from
    any thread) ends the iteration.
    """

    def __init__(
        self,
        hub_url: str,
        match: Sequence[str] = (),
        match_urlpattern: Sequence[str] = (),
        *,
        token: TokenSource = None,
        last_event_id: str | None = None,
        legacy: bool = False,
        reconnect_delay: float = 3.0,
        max_reconnects: int | None = None,
        read_timeout: float | None = None,
        client: httpx.Client | httpx.AsyncClient | None = None,
    ) -> None:
        if not match and not match_urlpattern:
            raise ValueError("subscribe to something: give match or match_urlpattern")
        if legacy and match_urlpattern:
            raise ValueError("Mercure 0.x has no match_urlpattern: give topic selectors as match")
        self.hub_url = hub_url
        name = "topic" if legacy else "match"
        pairs: list[tuple[str, Any]] = [(name, m) for m in match]
        pairs += [("match_urlpattern", p) for p in match_urlpattern]
        self._params = httpx.QueryParams(pairs)
        self.token = token
        self.last_event_id = last_event_id or ""
        self.retry = reconnect_delay
        self.max_reconnects = max_reconnects
        self.connections = 0
        self.gaps = 0
        self._timeout = httpx.Timeout(10, read=read_timeout)
        self._client = client
        self._gap = False
        self._closed = threading.Event()
        self._response: httpx.Response | None = None

    # -- what both loops share ----------------------------------------------------------

    def _headers(self) -> dict[str, str]:
        headers = {"Accept": "text/event-stream", "Cache-Control": "no-store"}
        if self.last_event_id:
            headers["Last-Event-ID"] = self.last_event_id
        return {**headers, **bearer(current(self.token))}

    def _opened(self, response: httpx.Response) -> None:
        """A stream is open: note whether the hub could resume from the id sent."""
        self.connections += 1
        asked = self.last_event_id
        if asked and asked != EARLIEST:
            resumed = next(
                (response.headers[h] for h in RESUME_HEADERS if h in response.headers), None
            )
            if resumed == EARLIEST:
                self._gap = True
                self.gaps += 1

    def _refused(self, response: httpx.Response) -> None:
        """Raise a refusal; return (to reconnect) on a 5xx."""
        error = refusal(response, "subscribe")
        if not isinstance(error, Unavailable):
            raise error

    def _updates(self, parser: EventStreamParser, chunk: bytes) -> list[Update]:
        found = [Update(e.data, e.type, e.id) for e in parser.feed(chunk)]
        self.last_event_id = parser.last_event_id
        if parser.retry is not None:
            self.retry = parser.retry / 1000
        if found and self._gap:
            self._gap = False
            found[0] = found[0]._replace(gap=True)
        return found

    def _another(self, failures: int) -> bool:
        """Whether to reconnect after ``failures`` attempts in a row."""
        if self._closed.is_set():
            return False
        return self.max_reconnects is None or failures <= self.max_reconnects

    def _gave_up(self, problem: str) -> MercureError:
        return Unavailable(
            f"gave up on {self.hub_url} after {self.max_reconnects} reconnections ({problem})",
            may_be_stored=False,
        )

    # -- blocking -----------------------------------------------------------------------

    def __iter__(self) -> Iterator[Update]:
        own = self._client is None
        client = self._client or httpx.Client(timeout=self._timeout)
        assert isinstance(client, httpx.Client), "an httpx.AsyncClient iterates with async for"
        failures = 0
        try:
            while not self._closed.is_set():
                problem = "the stream ended"
                try:
                    with client.stream(
                        "GET", self.hub_url, params=self._params, headers=self._headers()
                    ) as response:
                        self._response = response
                        if response.status_code != 200:
                            response.read()
                            self._refused(response)
                            problem = f"status {response.status_code}"
                        else:
                            self._opened(response)
                            failures = 0
                            parser = EventStreamParser(self.last_event_id)
                            for chunk in response.iter_bytes():
                                yield from self._updates(parser, chunk)
                except httpx.TransportError as exc:
                    problem = str(exc) or type(exc).__name__
                finally:
                    self._response = None
                failures += 1
                if not self._another(failures):
                    if self._closed.is_set():
                        return
                    raise self._gave_up(problem)
                self._closed.wait(self.retry)
        finally:
            if own:
                client.close()

    # -- asyncio ------------------------------------------------------------------------

    async def __aiter__(self) -> AsyncIterator[Update]:
        own = self._client is None
        client = self._client or httpx.AsyncClient(timeout=self._timeout)
        assert isinstance(client, httpx.AsyncClient), "an httpx.Client iterates with for"
        failures = 0
        try:
            while not self._closed.is_set():
                problem = "the stream ended"
                try:
                    async with client.stream(
                        "GET", self.hub_url, params=self._params, headers=self._headers()
                    ) as response:
                        self._response = response
                        if response.status_code != 200:
                            await response.aread()
                            self._refused(response)
                            problem = f"status {response.status_code}"
                        else:
                            self._opened(response)
                            failures = 0
                            parser = EventStreamParser(self.last_event_id)
                            async for chunk in response.aiter_bytes():
                                for update in self._updates(parser, chunk):
                                    yield update
                except httpx.TransportError as exc:
                    problem = str(exc) or type(exc).__name__
                finally:
                    self._response = None
                failures += 1
                if not self._another(failures):
                    if self._closed.is_set():
                        return
                    raise self._gave_up(problem)
                await self._pause()
        finally:
            if own:
                await client.aclose()

    async def _pause(self) -> None:
        deadline = time.monotonic() + self.retry
        while not self._closed.is_set() and time.monotonic() < deadline:
            await asyncio.sleep(min(0.05, max(0.0, deadline - time.monotonic())))

    # -- closing ------------------------------------------------------------------------

    def close(self) -> None:
        """Stop: the iteration ends after the update being read (no reconnection)."""
        self._closed.set()
        response = self._response
        if response is not None:
            stream: Any = response.extensions.get("network_stream")
            sock = stream.get_extra_info("socket") if stream is not None else None
            if sock is not None:
                with contextlib.suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()


def subscribe(
    hub_url: str,
    match: Sequence[str] = (),
    match_urlpattern: Sequence[str] = (),
    **kw: Any,
) -> Subscription:
    """Subscribe to exact topics (``match``; ``"*"`` for all) and URL Patterns
    (``match_urlpattern``, ``https://example.com/books/:id``) at the hub ``hub_url``.

    Keywords: ``token`` (a string, or a callable such as a TokenMinter), ``last_event_id``
    (resume after it; ``"earliest"``: the whole history), ``legacy`` (Mercure 0.x: ``match``
    values are sent as ``topic=`` selectors), ``reconnect_delay`` (seconds, until the hub
    sends ``retry:``), ``max_reconnects`` (None: forever), ``read_timeout`` (None: wait
    forever; set it above the hub's heartbeat to notice a dead connection), ``client``.
    Nothing connects until the subscription is iterated (``for`` or ``async for``).
    """
    return Subscription(hub_url, match, match_urlpattern, **kw)
