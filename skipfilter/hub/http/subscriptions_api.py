"""The subscriptions API (draft-08 §8.2, and 0.x's in compatibility mode), in bounded pages.

``GET /.well-known/mercure/subscriptions[/{match_type}/{match}[/{subscriber}]]`` answers the
active subscriptions (of every node sharing Redis, or every local worker) as plain JSON, the
cursor to subscribe from in ``Link: <hub>; rel="mercure"; last-event-id="..."``, an ``ETag`` of that
cursor (``If-None-Match`` gets a 304), 404 for a subscription that is not open, 400 for an
unknown match type. The token needs a ``subscribe`` grant on the request's escaped path (the
front end's ``authorize_subscriptions``). In compatibility mode a path whose first segment is
not a match type is 0.x's ``/subscriptions/{topic}[/{subscriber}]`` (as the Go hub decides):
it lists 0.x subscriptions only, in 0.x's JSON-LD answer.

A hub may hold tens of thousands of subscriptions: a request reads at most
``subscriptions_page`` of them, and the collection says where the rest is (``next``, the same
path with ``?after=CURSOR``, also a ``rel="next"`` link). With a matcher filter a page may hold
fewer entries than that, never more work. Parsing and encoding run in a worker thread.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response

from skipfilter.hub.core.frontend import Frontend
from skipfilter.hub.core.hub import Hub
from skipfilter.hub.core.refusals import refuse, respond
from skipfilter.hub.frontends.v1.discovery import JSON, subscriptions_link
from skipfilter.hub.frontends.v1.errors import RequestError
from skipfilter.hub.frontends.v1.matchers import LEGACY, TopicMatcher
from skipfilter.hub.frontends.v1.subscription_events import (
    LEGACY_CONTEXT,
    Subscription,
    SubscriptionBook,
    read_record,
)
from skipfilter.hub.frontends.v1.subscriptions import (
    SubscriptionPath,
    collection_document,
    etag,
    not_modified,
    parse_subscription_path,
    subscription_topic,
)
from skipfilter.hub.paths import HUB_PATH
from skipfilter.hub.refusal import HubRefusal
from skipfilter.hub.sse import header_safe
from skipfilter.hub.update import EARLIEST

#: What 0.x answered with (JSON-LD), on its legacy paths in compatibility mode.
LEGACY_MEDIA_TYPE = "application/ld+json"
WHAT = "subscriptions"


class InvalidCursor(ValueError):
    """An ``after`` the hub did not hand out."""


@dataclass(frozen=True, slots=True)
class Page:
    """Open subscriptions and the cursor of the rest (None: no more)."""

    subscriptions: list[Subscription]
    after: str | None


async def answer(hub: Hub, frontend: Frontend, request: Request) -> Response:
    """The API's answer to ``request`` (routed under the subscriptions path)."""
    settings = hub.settings
    metrics = hub.metrics
    if not settings.subscriptions:
        return PlainTextResponse(
            "the subscriptions API is disabled (start the hub with --subscriptions)\n",
            status_code=404,
        )
    raw = request.scope.get("raw_path") or request.url.path.encode()
    path = raw.decode("latin-1").split("?", 1)[0]
    compatibility = settings.protocol_version_compatibility is not None
    try:  # the URL's shape first: a malformed one is a 400 whatever the token
        target = parse_subscription_path(path, compatibility=compatibility)
    except RequestError as exc:
        return refuse(WHAT, metrics, exc)
    try:
        await frontend.authorize_subscriptions(request, path)
    except HubRefusal as exc:
        return refuse(WHAT, metrics, exc)
    cursor = hub.last_id  # read before the subscriptions: a change after it is an event after it
    tag = etag(cursor)
    if not_modified(request.headers.get("if-none-match"), tag):
        return Response(status_code=304, headers={"ETag": tag})
    headers = {
        "ETag": tag,
        "Link": subscriptions_link(HUB_PATH, _header_cursor(hub)),
        "Cache-Control": "must-revalidate",  # volatile: revalidate (§8.2's examples)
    }
    legacy = target.matcher is not None and target.matcher[1] == LEGACY
    try:
        if target.subscriber is not None:
            assert target.matcher is not None
            found = await find(hub, target.matcher, target.subscriber)
            if found is None:
                return respond(WHAT, metrics, 404, f"no open subscription at {path[:200]}")
            document = _single(found, legacy, cursor)
        else:
            page = await read_page(
                hub, target, request.query_params.get("after"), settings.subscriptions_page
            )
            document = await asyncio.to_thread(
                _collection, path, page, legacy, cursor if compatibility else None
            )
            if page.after is not None:
                headers["Link"] += f', <{document["next"]}>; rel="next"'
    except InvalidCursor as exc:
        return respond(WHAT, metrics, 400, str(exc))
    except Exception as exc:  # the shared transport is down: say so
        return respond(WHAT, metrics, 503, f"cannot read the subscriptions now: {exc}")
    headers["Content-Type"] = LEGACY_MEDIA_TYPE if legacy else JSON
    return Response(await encode(document), headers=headers)


def _header_cursor(hub: Hub) -> str:
    """The newest delivered id a header can carry as is (an id may hold any character, a
    header only ASCII): an older one, or ``earliest``, only makes the client replay more."""
    if hub.last_id.isascii() and header_safe(hub.last_id):
        return hub.last_id
    for entry in hub.ring.backwards(hub.ring.head, hub.settings.resume_scan):
        if entry.id.isascii() and header_safe(entry.id):
            return entry.id
    return EARLIEST


def _single(found: Subscription, legacy: bool, cursor: str) -> dict[str, Any]:
    if legacy:
        return {**found.legacy_document(), "lastEventID": cursor}
    return found.document()


def _collection(path: str, page: Page, legacy: bool, last_event_id: str | None) -> dict[str, Any]:
    """The collection document; ``last_event_id`` (compatibility mode) also in the body, where
    0.x clients read it."""
    document: dict[str, Any]
    if legacy:
        document = {"@context": LEGACY_CONTEXT, "id": path, "type": "Subscriptions"}
        document["subscriptions"] = [s.legacy_document(context=False) for s in page.subscriptions]
    else:
        document = collection_document(path, (s.document() for s in page.subscriptions))
    if last_event_id is not None:
        document["lastEventID"] = last_event_id
    if page.after is not None:
        document["next"] = f"{path}?after={quote(page.after, safe='')}"
    return document


async def read_page(hub: Hub, target: SubscriptionPath, after: str | None, limit: int) -> Page:
    """Open subscriptions (of every node or local worker sharing presence), only those of
    ``target.matcher`` when it names one, from cursor ``after``. Reads at most ``limit``."""
    matcher = target.matcher
    presence = hub.presence
    if presence is not None:
        raws, rest = await presence.page(_presence_cursor(after), limit)
        found = await asyncio.to_thread(_parse, raws, matcher)
        return Page(found, f"r{rest[1]}:{rest[0]}" if rest is not None else None)
    subscriptions: list[Subscription] = []
    for seen, ((serial, index), subscription) in enumerate(_book(hub).held(_local_cursor(after))):
        if seen == limit:
            return Page(subscriptions, f"l{serial}:{index}")
        if matcher is None or subscription.matcher == matcher:
            subscriptions.append(subscription)
    return Page(subscriptions, None)


async def find(hub: Hub, matcher: TopicMatcher, subscriber: str) -> Subscription | None:
    """The open subscription of ``subscriber`` to ``matcher``, on whichever node."""
    subscription_id = subscription_topic(matcher, subscriber)
    if hub.presence is not None:
        raw = await hub.presence.find(subscription_id)
        found = _parse([raw] if raw is not None else [], matcher)
        return found[0] if found else None
    return _book(hub).find(subscription_id, subscriber)


def _book(hub: Hub) -> SubscriptionBook:
    """The hub's book of subscriptions (the app gives it one when the API is on)."""
    assert isinstance(hub.book, SubscriptionBook), "subscription events are off"
    return hub.book


def _parse(raws: Iterable[str], matcher: TopicMatcher | None) -> list[Subscription]:
    """Recorded subscriptions, filtered; a record no hub wrote is skipped."""
    found = []
    for raw in raws:
        try:
            doc = json.loads(raw)
            subscription = read_record(doc) if isinstance(doc, dict) else None
        except ValueError:
            continue
        if subscription is not None and (matcher is None or subscription.matcher == matcher):
            found.append(subscription)
    return found


def _presence_cursor(after: str | None) -> tuple[str, int] | None:
    if after is None:
        return None
    scan, _, node = after[1:].partition(":")
    if not after.startswith("r") or not node:
        raise InvalidCursor(f"invalid 'after' cursor {after[:80]!r}")
    return node, _cursor_number(scan, after)


def _local_cursor(after: str | None) -> tuple[int, int]:
    if after is None:
        return 0, 0
    serial, _, index = after[1:].partition(":")
    if not after.startswith("l"):
        raise InvalidCursor(f"invalid 'after' cursor {after[:80]!r}")
    return _cursor_number(serial, after), _cursor_number(index, after)


#: Digits of a number in a cursor the hub hands out (a 64-bit counter has at most 20).
_CURSOR_DIGITS = 20


def _cursor_number(text: str, after: str) -> int:
    """A number of a cursor: ASCII digits, as the hub writes them (``"²".isdigit()`` is
    true, and 5,000 nines are past what ``int`` reads); InvalidCursor (400) otherwise."""
    if not (0 < len(text) <= _CURSOR_DIGITS and text.isascii() and text.isdigit()):
        raise InvalidCursor(f"invalid 'after' cursor {after[:80]!r}")
    return int(text)


async def encode(document: dict[str, Any]) -> bytes:
    """``document`` as indented JSON, encoded in a worker thread."""
    return await asyncio.to_thread(lambda: json.dumps(document, indent=2).encode())
