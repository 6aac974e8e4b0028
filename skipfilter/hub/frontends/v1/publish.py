"""A 1.0 publish form, checked field by field before anything is stored (draft-08 §5).

Topics: at least one, each a protocol string, none ``*`` (the wildcard is not addressable) and
none in the hub's reserved namespace, tested on the topic *resolved against the hub's URL* so
``https://any.host/.well-known/mercure/...``, ``/.well-known/%6Dercure/x`` or ``a/../mercure/x``
cannot forge subscription events. ``id``: not ``#...`` (hub ids), not ``earliest``, usable as a
``Last-Event-ID`` by every client: ASCII only (``check_header_id``). ``type``: not ``mercure``
(hub events). ``retry``: ASCII digits. ``private``: its presence, whatever its value. Unknown
fields are ignored. Too many topics is a 413; every other refusal a 400 naming the field (no
Bearer challenge: the form is not the token).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from typing import Any

from skipfilter.hub.frontends.v1.errors import RequestError
from skipfilter.hub.frontends.v1.matchers import WILDCARD
from skipfilter.hub.frontends.v1.wire import parse_urlencoded, string_problem, utf8
from skipfilter.hub.paths import HUB_PATH
from skipfilter.hub.sse import InvalidField, check_id, check_retry
from skipfilter.hub.update import EARLIEST

#: Topics per update (the Go hub's limit).
MAX_TOPICS = 1000
#: UTF-8 bytes per topic (``HubSettings.max_topic_length``): matching a URL Pattern costs
#: time in proportion to the topic's length, and no exact matcher is longer.
MAX_TOPIC_LENGTH = 4096
#: The SSE event type only the hub may use (subscription events).
RESERVED_TYPE = "mercure"
#: Fields that may appear once.
SINGLE_FIELDS = ("data", "id", "type", "retry")
#: What the WHATWG URL parser removes: tab and newlines anywhere, C0 and space at either end.
_URL_TRIMS = "".join(map(chr, range(0x21)))
_UNRESERVED = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")


@dataclass(frozen=True, slots=True)
class PublishForm:
    """A checked publish: ``id`` None means the hub generates one."""

    topics: tuple[str, ...]
    data: str = ""
    private: bool = False
    id: str | None = None
    type: str | None = None
    retry: int | None = None


def decode_form(body: bytes) -> list[tuple[str, str]]:
    """An ``application/x-www-form-urlencoded`` body as text pairs; 400 if not UTF-8."""
    pairs = []
    for raw_name, raw_value in parse_urlencoded(body):
        name, value = utf8(raw_name), utf8(raw_value)
        if name is None or value is None:
            shown = raw_name.decode("utf-8", "replace")[:40]
            raise RequestError.bad_request(f"the form field {shown!r} is not valid UTF-8")
        pairs.append((name, value))
    return pairs


def parse_publish_form(
    pairs: Sequence[tuple[str, str]],
    hub_path: str = HUB_PATH,
    max_topics: int = MAX_TOPICS,
    max_topic_length: int = MAX_TOPIC_LENGTH,
) -> PublishForm:
    """Check a publish form given as (name, value) pairs in request order.

    Raises RequestError: 413 for more than ``max_topics`` topics, else 400 naming the field
    (a topic longer than ``max_topic_length`` UTF-8 bytes: naming it and the limit).
    Runtime complexity: O(size of the form).
    """
    topics: list[str] = []
    fields: dict[str, str] = {}
    private = False
    for name, value in pairs:  # one pass: the fields a publish reads, the rest ignored
        if name == "topic":
            topics.append(value)
        elif name in SINGLE_FIELDS:
            if name in fields:
                raise RequestError.bad_request(f"the field {name!r} is given more than once")
            fields[name] = value
        elif name == "private":
            private = True
    if not topics:
        raise RequestError.bad_request('missing "topic": an update needs at least one topic')
    if len(topics) > max_topics:
        raise RequestError(413, f"{len(topics)} topics, more than {max_topics} per update")
    for topic in topics:
        _check_topic(topic, hub_path, max_topic_length)
    try:
        return PublishForm(
            topics=tuple(topics),
            data=fields.get("data", ""),
            private=private,
            id=_check_id(fields["id"]) if fields.get("id") else None,
            type=_check_type(fields["type"]) if fields.get("type") else None,
            retry=check_retry(fields["retry"]) if "retry" in fields else None,
        )
    except InvalidField as exc:
        raise RequestError.bad_request(str(exc)) from exc


def _check_topic(topic: str, hub_path: str, max_length: int = MAX_TOPIC_LENGTH) -> None:
    problem = string_problem(topic)
    if problem is not None:
        raise RequestError.bad_request(f"topic {topic[:80]!r}: {problem}")
    too_long = topic_length_problem(topic, max_length)
    if too_long is not None:
        raise RequestError.bad_request(too_long)
    if topic == WILDCARD:
        raise RequestError.bad_request(
            "topic '*' is reserved: it is the wildcard matcher, so no one could subscribe to it"
        )
    if addresses_reserved_namespace(topic, hub_path):
        raise RequestError.bad_request(
            f"topic {topic[:80]!r} is in the hub's reserved namespace {hub_path!r} "
            "(resolved against the hub's URL): only the hub publishes there"
        )


def topic_length_problem(topic: str, max_length: int) -> str | None:
    """Why ``topic`` is too long to publish (more than ``max_length`` UTF-8 bytes, its start
    and the limit named), or None. Runtime: O(len(topic))."""
    if len(topic) * 4 <= max_length:
        return None  # no character takes more than four bytes
    size = len(topic.encode("utf-8", "surrogatepass"))
    if size <= max_length:
        return None
    return (
        f"topic {topic[:80]!r}... is {size:,} bytes (UTF-8), longer than the limit of "
        f"{max_length:,} bytes per topic (max_topic_length)"
    )


def _check_id(value: str) -> str:
    check_id(value)  # the SSE rules: no line break, not '#...', usable as Last-Event-ID
    check_header_id(value)
    return _check_field("id", value, EARLIEST, "it asks for the whole history")


def check_header_id(value: str) -> str:
    """``value`` if every client can send it back as a ``Last-Event-ID`` header unchanged:
    ASCII only (HTTP header values are ASCII; clients that encode headers as Latin-1 or
    ASCII could not send other characters, and the hub's own resume headers cannot carry
    them). Else InvalidField naming the id and the first other character."""
    if not value.isascii():
        at, char = next((i, c) for i, c in enumerate(value) if not c.isascii())
        raise InvalidField(
            "id",
            f"{value[:80]!r} has the non-ASCII character {char!r} at {at}: an id travels "
            "back in a Last-Event-ID header, which carries ASCII only (percent-encode it)",
        )
    return value


def _check_type(value: str) -> str:
    return _check_field("type", value, RESERVED_TYPE, "the type of the hub's own events")


def _check_field(name: str, value: str, reserved: str, why: str) -> str:
    """``value`` if it is a protocol string other than the ``reserved`` one."""
    problem = string_problem(value)
    if problem is not None:
        raise InvalidField(name, problem)
    if value == reserved:
        raise InvalidField(name, f"{reserved!r} is reserved ({why})")
    return value


def addresses_reserved_namespace(topic: str, hub_path: str = HUB_PATH) -> bool:
    """Whether ``topic``, resolved against the hub's URL with the WHATWG URL parser (dot
    segments removed), then with unreserved percent-encoded octets decoded, has the path
    ``hub_path`` or one below it, whatever its scheme and host. A topic that does not parse
    as a URL reference names no hub path (draft-08 §5, §13.3).

    >>> addresses_reserved_namespace("https://evil.example/.well-known/%6Dercure/x")
    True
    >>> addresses_reserved_namespace("/.well-known/mercurex")
    False

    Runtime complexity: O(len(topic)); a topic that cannot spell the hub path's last segment
    (it lacks that segment and any ``%``, and has a path of its own) is answered without
    parsing, since resolution can only keep, drop or add whole segments.
    """
    last = _plain_last_segment(hub_path)
    if (
        last
        and last not in topic
        and "%" not in topic
        and "\t" not in topic
        and "\n" not in topic
        and "\r" not in topic
        and topic.lstrip(_URL_TRIMS)[:1] not in ("", "?", "#")
    ):
        return False
    result: Any = _any_url().exec(topic, "https://hub.invalid" + hub_path)
    if result is None:
        return False
    path = _decode_unreserved(result["pathname"]["input"])
    return path == hub_path or path.startswith(hub_path + "/")


@cache
def _plain_last_segment(hub_path: str) -> str:
    """The hub path's last segment when it is all unreserved characters (else empty: no
    shortcut), computed once per path."""
    last = hub_path.rsplit("/", 1)[-1]
    return last if _UNRESERVED.issuperset(last.encode()) else ""


@cache
def _any_url() -> Any:
    from urlpattern import URLPattern

    return URLPattern({})


def _decode_unreserved(path: str) -> str:
    """RFC 3986 §6.2.2.2: ``%XX`` of an unreserved character becomes the character."""
    if "%" not in path:
        return path
    out, i = [], 0
    while i < len(path):
        octet = path[i + 1 : i + 3]
        if path[i] == "%" and len(octet) == 2 and all(c in "0123456789abcdefABCDEF" for c in octet):
            byte = int(octet, 16)
            if byte in _UNRESERVED:
                out.append(chr(byte))
                i += 3
                continue
        out.append(path[i])
        i += 1
    return "".join(out)
