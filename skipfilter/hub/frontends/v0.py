"""Mercure 0.x, the protocol the hub speaks today, as a front end (see ``frontend.py``).

The token is the ``Authorization: Bearer`` header, else the ``authorization`` query
parameter, else the cookie; its ``mercure`` claim grants publish and subscribe selectors
and a payload (``auth/verify.py``). A subscription is its ``topic`` parameters and the
``Last-Event-ID`` header (or ``lastEventID`` parameter); a publish is a form of ``topic``,
``data``, ``id``, ``type``, ``retry`` and ``private``. Refusals are text naming the problem,
with an RFC 6750 ``WWW-Authenticate`` challenge on token failures.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator
from typing import Any
from urllib.parse import parse_qsl

from starlette.datastructures import FormData, UploadFile
from starlette.formparsers import MultiPartException, MultiPartParser
from starlette.requests import Request
from starlette.responses import Response

from skipfilter.hub.auth.jwks import verifier_for
from skipfilter.hub.auth.verify import (
    AuthError,
    Claims,
    SelectorCover,
    TokenSource,
    TokenVerifier,
    check_origin,
    find_token,
)
from skipfilter.hub.core.frontend import SubscriptionTerms, read_body
from skipfilter.hub.core.grants import LegacyGrants
from skipfilter.hub.core.hub import IndexFactory, default_index_factory
from skipfilter.hub.core.refusals import BadRequest, Forbidden, TooLarge
from skipfilter.hub.frontends.v1.publish import check_header_id, topic_length_problem
from skipfilter.hub.ids import new_id
from skipfilter.hub.paths import RESERVED_NAMESPACE
from skipfilter.hub.settings import HubSettings
from skipfilter.hub.sse import check_retry, check_topic
from skipfilter.hub.update import Update, valid_update
from skipfilter.selectors import TypedSelector

#: Publish form fields besides ``topic`` (``private`` is read by its presence).
SINGLE_FIELDS = ("data", "id", "type", "retry", "private")
#: 0.x's cookie name, read when the configured cookie is absent.
LEGACY_COOKIE = "mercureAuthorization"
#: The response header naming a stream's resume point in 0.x.
LEGACY_RESUME_HEADERS = ("Last-Event-ID",)


def legacy(selectors: tuple[str, ...]) -> tuple[TypedSelector, ...]:
    """0.x selectors typed as such (the hub's index also holds other types)."""
    return tuple(TypedSelector(s, "mercure") for s in selectors)


def header_text(value: str) -> str:
    """A header as sent: UTF-8 bytes that Starlette decoded as latin-1 are read back."""
    try:
        return value.encode("latin-1").decode("utf-8")
    except (UnicodeEncodeError, UnicodeDecodeError):
        return value


async def request_claims(
    request: Request, verifier: TokenVerifier | None, cookie_names: tuple[str, ...]
) -> Claims | None:
    """The verified claims of the token the request carries (None: no token, or no key);
    the first of ``cookie_names`` the request has is the cookie."""
    cookies = request.cookies
    cookie = next((name for name in cookie_names if cookies.get(name)), cookie_names[0])
    found = find_token(request.headers, request.query_params, cookies, cookie)
    if found is None or verifier is None:
        return None
    return await verifier.claims(*found)


class V0Frontend:
    """Mercure 0.x requests read into the hub's terms (``frontend.Frontend``)."""

    version = "0"

    def __init__(self, settings: HubSettings, index_factory: IndexFactory | None = None) -> None:
        self.settings = settings
        factory = index_factory or default_index_factory(settings)
        self.publish_cover = SelectorCover(factory)
        self.subscribe_cover = SelectorCover(factory)
        self.publishers = verifier_for(settings, "publisher")
        self.subscribers = verifier_for(settings, "subscriber")
        #: The configured cookie, else 0.x's (the default name is 1.0's).
        self.cookie_names = tuple(dict.fromkeys((settings.cookie_name, LEGACY_COOKIE)))

    # -- GET /.well-known/mercure -------------------------------------------------------

    async def subscription(self, request: Request) -> SubscriptionTerms:
        """The token's claims (401 without one unless anonymous), the ``topic`` parameters
        and the resume point."""
        settings = self.settings
        claims = await request_claims(request, self.subscribers, self.cookie_names)
        if claims is None and not settings.anonymous:
            raise AuthError(401, "missing token: this hub does not allow anonymous subscribers")
        topics = request.query_params.getlist("topic")
        if not topics:
            raise BadRequest('missing "topic" parameter')
        raw = request.headers.get("last-event-id") or request.query_params.get("lastEventID")
        return SubscriptionTerms(
            selectors=tuple(TypedSelector(t, "mercure") for t in topics),
            grants=LegacyGrants.of(claims) if claims is not None else None,
            last_event_id=header_text(raw) if raw else None,
            origin=request.headers.get("origin"),
            resume_headers=LEGACY_RESUME_HEADERS,  # 0.x names the resume point on every stream
        )

    # -- POST /.well-known/mercure ------------------------------------------------------

    async def publication(self, request: Request) -> Update:
        """Authorize (token, cookie origin, ``mercure.publish``), then read every field."""
        settings = self.settings
        if self.publishers is None:
            raise AuthError(401, "publishing is disabled: no publisher key is configured")
        claims = await request_claims(request, self.publishers, self.cookie_names)
        if claims is None:
            raise AuthError(401, "missing token: publishing requires a JWT")
        if claims.source is TokenSource.COOKIE:
            check_origin(request.headers, settings.publish_origins)
        if claims.publish is None:
            raise AuthError(403, "the token has no 'mercure.publish' claim")
        form = await self._form(request)
        if form is None:
            raise TooLarge(f"request body larger than {settings.max_body} bytes")
        update = self._update(form)
        uncovered = self.publish_cover.covers_all(legacy(claims.publish), update.topics)
        if uncovered is not None:
            raise AuthError(403, f"the token may not publish to topic {uncovered!r}")
        return update

    async def _form(self, request: Request) -> FormData | None:
        """The publish form, or None when the body exceeds ``max_body`` (413).

        The body is read with a running size check whatever its encoding or framing, so a
        chunked upload of many parts cannot grow past the limit either.
        """
        kind = request.headers.get("content-type", "").split(";")[0].strip().lower()
        if kind not in ("multipart/form-data", "application/x-www-form-urlencoded", ""):
            raise BadRequest(f"unsupported content type {kind!r}: send a form")
        body = await read_body(request, self.settings.max_body)
        if body is None:
            return None
        if kind == "multipart/form-data":
            return await self._multipart(request, body)
        try:
            pairs = parse_qsl(
                body.decode("utf-8"),
                keep_blank_values=True,
                errors="strict",
                max_num_fields=self._max_fields,
            )
        except UnicodeDecodeError as exc:
            raise BadRequest(f"the form is not valid UTF-8 ({exc.reason})") from exc
        except ValueError as exc:
            if "Max number of fields" in str(exc):
                raise BadRequest(self._too_many_fields) from exc
            raise BadRequest(f"malformed form: {exc}") from exc
        items: list[tuple[str, str | UploadFile]] = list(pairs)
        return FormData(items)

    async def _multipart(self, request: Request, body: bytes) -> FormData:
        async def once() -> AsyncGenerator[bytes, None]:
            yield body

        parser = MultiPartParser(
            request.headers,
            once(),
            max_files=0,
            max_fields=self._max_fields,
            max_part_size=len(body) + 1,
        )
        try:
            return await parser.parse()
        except MultiPartException as exc:
            if "Too many fields" in exc.message:
                raise BadRequest(self._too_many_fields) from exc
            raise BadRequest(f"malformed multipart form: {exc.message}") from exc

    @property
    def _max_fields(self) -> int:
        """Form fields a publish may carry: every topic, and each other field once."""
        return self.settings.max_topics + len(SINGLE_FIELDS)

    @property
    def _too_many_fields(self) -> str:
        return (
            f"too many form fields: more than {self._max_fields} (at most "
            f"{self.settings.max_topics} topics, and {', '.join(SINGLE_FIELDS)} once each)"
        )

    def _update(self, form: Any) -> Update:
        topics = tuple(t for t in form.getlist("topic") if isinstance(t, str))
        if not topics:
            raise BadRequest('missing "topic": an update needs at least one topic')
        if len(topics) > self.settings.max_topics:
            raise BadRequest(f"too many topics: {len(topics)} > {self.settings.max_topics}")
        for topic in topics:
            check_topic(topic)
            too_long = topic_length_problem(topic, self.settings.max_topic_length)
            if too_long is not None:
                raise BadRequest(too_long)
            if RESERVED_NAMESPACE in topic:
                raise Forbidden(
                    f"topic {topic[:80]!r} is in the hub's reserved namespace "
                    f"{RESERVED_NAMESPACE!r}"
                )
        fields: dict[str, str] = {}
        for name in SINGLE_FIELDS[:-1]:
            values = form.getlist(name)
            if len(values) > 1:
                raise BadRequest(f"{name!r} given {len(values)} times")
            if values:
                if not isinstance(values[0], str):
                    raise BadRequest(f"{name!r} must be a form field, not a file")
                fields[name] = values[0]
        return valid_update(
            check_header_id(fields["id"]) if "id" in fields else new_id(),
            topics,
            fields.get("data", ""),
            "private" in form,
            fields.get("type") or None,
            check_retry(fields["retry"]) if "retry" in fields else None,
        )

    # -- GET /.well-known/mercure/subscriptions[/{topic}[/{subscriber}]] ----------------

    async def authorize_subscriptions(self, request: Request, path: str) -> None:
        """With subscriber keys, a token whose ``mercure.subscribe`` covers ``path``."""
        if self.subscribers is None:
            return
        claims = await request_claims(request, self.subscribers, self.cookie_names)
        if claims is None:
            raise AuthError(401, "missing token: the subscriptions API requires a JWT")
        if not self.subscribe_cover.covers(legacy(claims.subscribe or ()), path):
            raise AuthError(403, f"the token's 'mercure.subscribe' does not cover {path}")

    # -- RFC 9728 metadata: a 1.0 document ----------------------------------------------

    metadata_path: str | None = None

    async def metadata(self, request: Request) -> Response:
        """0.x has no protected resource metadata."""
        return Response("not found\n", status_code=404)
