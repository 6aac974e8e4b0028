"""A subscription session: what a subscribe request becomes, and how its stream opens.

``Sessions.prepare`` has the protocol's front end (``frontend.py``) read a request into the
hub's terms, checks them against the hub's limits, and makes a ``Plan`` of them (who
subscribes, to which selectors, with which grants, and where the replay resumes) or a
refusal; ``register``, ``stream_headers`` and ``start`` open the stream (into the index,
its response headers, the replay, then live). The HTTP module (``app``) and both stream
writers (``asgi_stream``, ``native``) use it; it knows none of them, nor which protocol
version the front end speaks.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response

from skipfilter.errors import InvalidSelector
from skipfilter.hub.core.frontend import Frontend
from skipfilter.hub.core.grants import Grants
from skipfilter.hub.core.hub import Hub
from skipfilter.hub.core.refusals import BadRequest, refuse
from skipfilter.hub.core.replay import replay
from skipfilter.hub.core.stream import Stream
from skipfilter.hub.ids import new_id
from skipfilter.hub.refusal import HubRefusal
from skipfilter.hub.settings import HubSettings
from skipfilter.hub.transports import Position, TransportUnavailable
from skipfilter.hub.update import EARLIEST, Entry
from skipfilter.selectors import TypedSelector

log = logging.getLogger("skipfilter.hub")

STREAM_HEADERS = {
    "Content-Type": "text/event-stream",
    "Cache-Control": "private, no-cache, no-store, must-revalidate, max-age=0",
    "Pragma": "no-cache",
    "Expires": "0",
    "X-Accel-Buffering": "no",
}


@dataclass(frozen=True, slots=True, kw_only=True)
class Plan:
    """An authorized subscription about to open: who, what, and where its replay starts.

    With ``replay``, stored updates after position ``replay_after`` (None: all of them)
    are sent first; ``requested`` is the entry the client's ``Last-Event-ID`` named;
    ``resume_headers`` the response headers naming where the stream resumes.
    """

    subscriber_id: str
    selectors: tuple[TypedSelector, ...]
    grants: Grants | None
    replay: bool
    replay_after: Position | None
    requested: Entry | None
    last_event_id: str | None
    origin: str | None
    resume_headers: tuple[str, ...] = ()
    #: What the front end compiled, held until the stream holds it (``SubscriptionTerms``).
    held: tuple[object, ...] = ()


def check_selectors(selectors: Sequence[TypedSelector], settings: HubSettings) -> None:
    """Refuse selectors beyond the hub's limits (400 naming the selector and the limit)."""
    if len(selectors) > settings.max_selectors:
        raise BadRequest(f"too many topic selectors: {len(selectors)} > {settings.max_selectors}")
    for typed in selectors:
        selector = typed.text
        if len(selector) > settings.max_selector_length:
            raise BadRequest(
                f"topic selector longer than {settings.max_selector_length} characters: "
                f"{selector[:60]!r}..."
            )
        templated = typed.syntax == "mercure" and "{" in selector
        variables = selector.count("{") + selector.count(",") if templated else 0
        if variables > settings.max_template_variables:
            raise BadRequest(
                f"topic selector {selector[:80]!r} has more than "
                f"{settings.max_template_variables} template variables"
            )


def exposed_headers(settings: HubSettings) -> tuple[str, ...]:
    """Response headers a cross-origin client may read: the Link header (the subscription
    API's cursor), the resume point (0.x's name too in compatibility mode) and a 401's
    challenge (a browser subscriber then reads that its token expired)."""
    legacy = ("Last-Event-ID",) if settings.compatibility else ()
    return ("Link", "Mercure-Last-Event-ID", "WWW-Authenticate", *legacy)


def cors_headers(settings: HubSettings, origin: str) -> dict[str, str]:
    """CORS headers for a request from ``origin``: credentials only for an origin listed
    explicitly (never ``*`` nor an echo of any origin with credentials, draft-08 §3);
    with ``*`` listed, any origin may read without credentials; else nothing."""
    origins = settings.cors_origins
    if origin in origins:
        allow = {"Access-Control-Allow-Origin": origin, "Access-Control-Allow-Credentials": "true"}
    elif "*" in origins:
        allow = {"Access-Control-Allow-Origin": "*"}
    else:
        return {}
    allow["Access-Control-Expose-Headers"] = ", ".join(exposed_headers(settings))
    allow["Vary"] = "Origin"
    return allow


def with_cors(response: Response, settings: HubSettings, scope: Any) -> Response:
    """``response`` with the CORS headers of the request's origin (``cors_headers``): what
    the native path answers itself (refusals included) bypasses CORSMiddleware."""
    for name, value in scope.get("headers", ()):
        if name == b"origin":
            response.headers.update(cors_headers(settings, value.decode("latin-1")))
            break
    return response


class Sessions:
    """Opens the subscriptions of one hub, whichever writer serves their streams."""

    def __init__(self, hub: Hub, frontend: Frontend) -> None:
        self.hub = hub
        self.settings = hub.settings
        self.frontend = frontend
        self.tasks: set[asyncio.Task[None]] = set()

    async def prepare(self, request: Request) -> Plan | Response:
        """Read the request through the front end, check it against the hub's limits and
        find where its replay starts; a Response refuses."""
        hub, frontend = self.hub, self.frontend
        try:
            terms = await frontend.subscription(request)
            check_selectors(terms.selectors, self.settings)
            if hub.stopping:
                return PlainTextResponse("the hub is shutting down\n", status_code=503)
            requested = await self._requested(terms.last_event_id)
        except HubRefusal as exc:
            return refuse("subscribe", hub.metrics, exc)
        last_event_id = terms.last_event_id
        replay = last_event_id == EARLIEST or requested is not None
        return Plan(
            subscriber_id=new_id(),
            selectors=terms.selectors,
            grants=terms.grants,
            replay=replay,
            replay_after=requested.position if requested is not None else None,
            requested=requested,
            last_event_id=last_event_id,
            origin=terms.origin,
            resume_headers=terms.resume_headers,
            held=terms.held,
        )

    async def _requested(self, last_event_id: str | None) -> Entry | None:
        """The stored update a ``Last-Event-ID`` names (from the ring when it is there)."""
        if not last_event_id or last_event_id == EARLIEST:
            return None
        ring = self.hub.ring
        seq = ring.seq_of(last_event_id)
        if seq is not None:
            return ring.get(seq)
        return await self.hub.transport.lookup(last_event_id)

    def register(self, stream: Stream, plan: Plan) -> Response | None:
        """Add ``stream`` to the hub (a 400 Response for a selector the index refuses)."""
        try:
            self.hub.register(stream)
        except (InvalidSelector, ValueError) as exc:
            return refuse("subscribe", self.hub.metrics, BadRequest(str(exc)))
        stream.arm_deadline()
        return None

    def stream_headers(self, stream: Stream, plan: Plan, cors: bool = False) -> dict[str, str]:
        """Response headers of a stream; ``cors`` adds what CORSMiddleware would (the
        native path bypasses the middleware).

        The resume point goes in the headers the front end named (an id the hub does not
        have, or ``earliest``, resumes from ``earliest``). An id is sent as its UTF-8 bytes,
        as the Go hub does: ids are protocol strings (IRIs may hold non-ASCII characters),
        the stream writers encode header values as UTF-8, and an id with a control
        character or surrounding spaces is never chosen (``sse.header_safe``).
        """
        headers = dict(STREAM_HEADERS)
        if plan.resume_headers:
            if plan.last_event_id == EARLIEST or (plan.last_event_id and plan.requested is None):
                resume = EARLIEST  # replay of everything, or of an id the hub does not have
            else:
                resume = self.hub.resume_id(stream, plan.requested)
            headers.update(dict.fromkeys(plan.resume_headers, resume))
        if cors and plan.origin:
            headers.update(cors_headers(self.settings, plan.origin))
        return headers

    def start(self, stream: Stream, plan: Plan) -> None:
        """Make the stream live at once, or after replaying what the plan asks for."""
        if not plan.replay:
            stream.go_live()
            return
        task = asyncio.create_task(self._replay(stream, plan.replay_after))
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)

    async def _replay(self, stream: Stream, after: Position | None) -> None:
        try:
            await replay(self.hub, stream, after)
        except TransportUnavailable as exc:
            stream.close("history unavailable", f"disconnected: {exc}; reconnect later")
        except Exception:
            log.exception("replay failed")
            stream.close("error", "disconnected: the replay failed")
