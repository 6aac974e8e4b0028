"""A subscription session: what a subscribe request becomes, and how its stream opens.

``Sessions.prepare`` turns a request into a ``Plan`` (who subscribes, to which selectors,
with which grants, and where the replay resumes) or a refusal; ``register``,
``stream_headers`` and ``start`` open the stream (into the index, its response headers,
the replay, then live). The HTTP module (``app``) and both stream writers (``asgi_stream``,
``native``) use it; it knows none of them.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass

from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response

from skipfilter.errors import InvalidSelector
from skipfilter.hub.auth import AuthError, Claims, TokenVerifier, find_token
from skipfilter.hub.hub import Hub, new_id
from skipfilter.hub.refusals import BadRequest, refuse
from skipfilter.hub.replay import replay
from skipfilter.hub.settings import HubSettings
from skipfilter.hub.stream import Stream
from skipfilter.hub.transports import Position, TransportUnavailable
from skipfilter.hub.update import EARLIEST, Entry

log = logging.getLogger("skipfilter.hub")

STREAM_HEADERS = {
    "Content-Type": "text/event-stream",
    "Cache-Control": "private, no-cache, no-store, must-revalidate, max-age=0",
    "Pragma": "no-cache",
    "Expires": "0",
    "X-Accel-Buffering": "no",
}


@dataclass(frozen=True, slots=True)
class Plan:
    """An authorized subscription about to open: who, what, and where its replay starts.

    With ``replay``, stored updates after position ``replay_after`` (None: all of them)
    are sent first; ``requested`` is the entry the client's ``Last-Event-ID`` named.
    """

    subscriber_id: str
    topics: tuple[str, ...]
    claims: Claims | None
    replay: bool
    replay_after: Position | None
    requested: Entry | None
    last_event_id: str | None
    origin: str | None


def check_selectors(selectors: list[str], settings: HubSettings) -> None:
    """Refuse selectors beyond the hub's limits (400 naming the selector and the limit)."""
    if len(selectors) > settings.max_selectors:
        raise BadRequest(f"too many topic selectors: {len(selectors)} > {settings.max_selectors}")
    for selector in selectors:
        if len(selector) > settings.max_selector_length:
            raise BadRequest(
                f"topic selector longer than {settings.max_selector_length} characters: "
                f"{selector[:60]!r}..."
            )
        variables = selector.count("{") + selector.count(",") if "{" in selector else 0
        if variables > settings.max_template_variables:
            raise BadRequest(
                f"topic selector {selector[:80]!r} has more than "
                f"{settings.max_template_variables} template variables"
            )


def header_text(value: str) -> str:
    """A header as sent: UTF-8 bytes that Starlette decoded as latin-1 are read back."""
    try:
        return value.encode("latin-1").decode("utf-8")
    except (UnicodeEncodeError, UnicodeDecodeError):
        return value


async def request_claims(
    request: Request, verifier: TokenVerifier | None, cookie_name: str
) -> Claims | None:
    """The verified claims of the token the request carries (None: no token, or no key)."""
    found = find_token(request.headers, request.query_params, request.cookies, cookie_name)
    if found is None or verifier is None:
        return None
    return await verifier.claims(*found)


class Sessions:
    """Opens the subscriptions of one hub, whichever writer serves their streams."""

    def __init__(self, hub: Hub, subscribers: TokenVerifier | None) -> None:
        self.hub = hub
        self.settings = hub.settings
        self.subscribers = subscribers
        self.tasks: set[asyncio.Task[None]] = set()

    async def prepare(self, request: Request) -> Plan | Response:
        """Authorize a subscription and find where its replay starts; a Response refuses."""
        hub, settings = self.hub, self.settings
        try:
            claims = await request_claims(request, self.subscribers, settings.cookie_name)
            if claims is None and not settings.anonymous:
                raise AuthError(401, "missing token: this hub does not allow anonymous subscribers")
            topics = request.query_params.getlist("topic")
            if not topics:
                raise BadRequest('missing "topic" parameter')
            check_selectors(topics, settings)
            if hub.stopping:
                return PlainTextResponse("the hub is shutting down\n", status_code=503)
            raw = request.headers.get("last-event-id") or request.query_params.get("lastEventID")
            last_event_id = header_text(raw) if raw else None
            requested = await self._requested(last_event_id)
        except (AuthError, BadRequest, TransportUnavailable) as exc:
            return refuse("subscribe", hub.metrics, exc)
        replay = last_event_id == EARLIEST or requested is not None
        return Plan(
            new_id(),
            tuple(topics),
            claims,
            replay,
            requested.position if requested is not None else None,
            requested,
            last_event_id,
            request.headers.get("origin"),
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
        except InvalidSelector as exc:
            return refuse("subscribe", self.hub.metrics, exc)
        stream.arm_deadline()
        return None

    def stream_headers(self, stream: Stream, plan: Plan, cors: bool = False) -> dict[str, str]:
        """Response headers of a stream; ``cors`` adds what CORSMiddleware would (the
        native path bypasses the middleware)."""
        if plan.last_event_id == EARLIEST or (plan.last_event_id and plan.requested is None):
            resume = EARLIEST  # replay of everything, or of an id the hub does not have
        else:
            resume = self.hub.resume_id(stream, plan.requested)
        headers = dict(STREAM_HEADERS, **{"Last-Event-ID": resume})
        origins = self.settings.cors_origins
        if cors and plan.origin and (plan.origin in origins or "*" in origins):
            headers["Access-Control-Allow-Origin"] = plan.origin
            headers["Access-Control-Allow-Credentials"] = "true"
            headers["Access-Control-Expose-Headers"] = "Last-Event-ID"
            headers["Vary"] = "Origin"
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
