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

Whatever a server sends, only the client's own errors come out: a 200 that is not
``text/event-stream`` raises :class:`NotEventStream`, a line or event over its limit
:class:`OverLimit`; a ``retry:`` is clamped to ``RETRY_RANGE``; an id is sent back as UTF-8
(as EventSource does), and one no header can carry (a control character, spaces at an end)
is not sent: the reconnection resumes from now, and the next update has ``gap=True``.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
import socket
import threading
import time
from collections.abc import AsyncIterator, Iterator, Sequence
from types import TracebackType
from typing import Any, NamedTuple, Self

import httpx

from skipfilter.client.arguments import optional_text, text_list
from skipfilter.client.auth import TokenSource, current
from skipfilter.client.errors import MercureError, NotEventStream, Unavailable
from skipfilter.client.sse import MAX_EVENT, MAX_LINE, EventStreamParser
from skipfilter.client.wire import (
    MAX_ERROR_BODY,
    aread_at_most,
    bearer,
    read_at_most,
    refusal,
    undecodable,
)

EARLIEST = "earliest"
#: Where a hub says it resumed: Mercure 1.0's header, and the one 0.x hubs sent.
RESUME_HEADERS = ("mercure-last-event-id", "last-event-id")
EVENT_STREAM = "text/event-stream"
#: Seconds to connect; the longest silence read (waiting for the response head, or between
#: two reads of a stream): three heartbeats of a hub at Mercure's default (40 s).
CONNECT_TIMEOUT, READ_TIMEOUT = 10.0, 120.0
#: The reconnection delays (seconds) a server's ``retry:`` may set: shorter or longer ones
#: are clamped to these (a hostile ``retry:`` cannot park a client, nor make it spin).
RETRY_RANGE = (0.05, 300.0)
#: What no HTTP header value can carry as is (h11 refuses or strips them).
_UNSENDABLE = re.compile(r"[\x00-\x1f\x7f]|^[ \t]|[ \t]$")


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
        connect_timeout: float = CONNECT_TIMEOUT,
        read_timeout: float | None = READ_TIMEOUT,
        max_line: int = MAX_LINE,
        max_event: int = MAX_EVENT,
        client: httpx.Client | httpx.AsyncClient | None = None,
    ) -> None:
        match = text_list(match, "match", single=False)
        match_urlpattern = text_list(match_urlpattern, "match_urlpattern", single=False)
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
        self.last_event_id = optional_text(last_event_id, "last_event_id") or ""
        self.retry = reconnect_delay
        self.max_reconnects = max_reconnects
        self.connections = 0
        self.gaps = 0
        self.read_timeout = read_timeout
        self._timeout = httpx.Timeout(connect_timeout, read=read_timeout)
        self._limits = {"max_line": max_line, "max_event": max_event}
        self._asked = ""  # the Last-Event-ID sent by the connection being opened
        self._client = client
        self._gap = False
        self._closed = threading.Event()
        self._response: httpx.Response | None = None

    # -- what both loops share ----------------------------------------------------------

    def _headers(self) -> dict[bytes, bytes]:
        """The request's headers; the id to resume from as UTF-8 (the HTML standard's
        EventSource), or, when no header can carry it, none and a gap noted."""
        headers = {b"Accept": EVENT_STREAM.encode(), b"Cache-Control": b"no-store"}
        self._asked = ""
        if self.last_event_id:
            if _UNSENDABLE.search(self.last_event_id):
                self._note_gap()
            else:
                self._asked = self.last_event_id
                headers[b"Last-Event-ID"] = self.last_event_id.encode("utf-8", "replace")
        for name, value in bearer(current(self.token)).items():
            headers[name.encode()] = value.encode("utf-8", "replace")
        return headers

    def _note_gap(self) -> None:
        if not self._gap:
            self._gap = True
            self.gaps += 1

    def _check_stream(self, response: httpx.Response) -> None:
        """A 200 that is not an event stream (a proxy's or portal's page) is refused."""
        given = response.headers.get("content-type", "")
        if given.split(";", 1)[0].strip().lower() != EVENT_STREAM:
            raise NotEventStream(
                f"{self.hub_url} answered 200 with Content-Type {given[:80]!r}, "
                f"not {EVENT_STREAM}: not a Mercure hub's stream",
                given,
            )

    def _parser(self) -> EventStreamParser:
        return EventStreamParser(self.last_event_id, **self._limits)

    def _opened(self, response: httpx.Response) -> None:
        """A stream is open: note whether the hub could resume from the id sent."""
        self.connections += 1
        asked = self._asked
        if asked and asked != EARLIEST:
            resumed = next(
                (response.headers[h] for h in RESUME_HEADERS if h in response.headers), None
            )
            if resumed == EARLIEST:
                self._note_gap()

    def _refused(self, response: httpx.Response, body: bytes) -> None:
        """Raise a refusal; return (to reconnect) on a 5xx."""
        error = refusal(response, "subscribe", body)
        if not isinstance(error, Unavailable):
            raise error

    def _updates(self, parser: EventStreamParser, chunk: bytes) -> list[Update]:
        found = [Update(e.data, e.type, e.id) for e in parser.feed(chunk)]
        self.last_event_id = parser.last_event_id
        if parser.retry is not None:
            low, high = RETRY_RANGE
            self.retry = min(max(parser.retry / 1000, low), high)
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
                            body, _ = read_at_most(response, MAX_ERROR_BODY)
                            self._refused(response, body)
                            problem = f"status {response.status_code}"
                        else:
                            self._check_stream(response)
                            self._opened(response)
                            failures = 0
                            parser = self._parser()
                            for chunk in response.iter_bytes():
                                yield from self._updates(parser, chunk)
                except httpx.DecodingError as exc:
                    raise undecodable(exc) from exc
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
                            body, _ = await aread_at_most(response, MAX_ERROR_BODY)
                            self._refused(response, body)
                            problem = f"status {response.status_code}"
                        else:
                            self._check_stream(response)
                            self._opened(response)
                            failures = 0
                            parser = self._parser()
                            async for chunk in response.aiter_bytes():
                                for update in self._updates(parser, chunk):
                                    yield update
                except httpx.DecodingError as exc:
                    raise undecodable(exc) from exc
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
    sends ``retry:``, which is clamped to ``RETRY_RANGE``), ``max_reconnects`` (None:
    forever), ``connect_timeout`` (10 s), ``read_timeout`` (120 s: the longest wait for the
    response head or between two reads of the stream, after which the connection counts as
    dead and is reopened; keep it above the hub's heartbeat; None waits forever),
    ``max_line`` and ``max_event`` (characters: ``OverLimit`` past them), ``client``.
    Nothing connects until the subscription is iterated (``for`` or ``async for``).
    """
    return Subscription(hub_url, match, match_urlpattern, **kw)
