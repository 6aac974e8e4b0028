"""A 1.0 subscribe request read into matchers and a resume point (draft-08 §3, §7).

``match`` and ``match_exact`` are exact matchers, ``match_urlpattern`` URL Patterns; names are
case-sensitive, and any other name in the ``match`` namespace (``Match``, ``matches``,
``match_regex``: compared without case) is refused, so a typo fails loudly. Values are UTF-8
protocol strings, at most ``max_pattern_bytes`` each and ``max_matchers`` in all; a URL Pattern
must compile. A body (``QUERY``) adds its pairs to the query's. ``Last-Event-ID`` wins over
``last_event_id``, whose query value wins over the body's. Every refusal is a 400
``invalid_request`` naming the parameter, without a Bearer challenge (it is not about the token).

``compatibility=True`` also takes 0.x's ``topic=`` selectors (as ``LEGACY`` matchers, the 0.x
``mercure`` syntax) and its ``lastEventID`` parameter; in 1.0 mode ``topic`` is refused with a
400 that names its replacement, as in the Go hub.
"""

from __future__ import annotations

from dataclasses import dataclass

from skipfilter.hub.frontends.v1.errors import RequestError
from skipfilter.hub.frontends.v1.matchers import (
    EXACT,
    LEGACY,
    MAX_MATCHERS,
    MAX_PATTERN_BYTES,
    URLPATTERN,
    PatternCheck,
    TopicMatcher,
    matcher_problem,
)
from skipfilter.hub.frontends.v1.wire import parse_urlencoded, utf8

#: Subscribe parameters naming a matcher type, and the type each names.
MATCH_PARAMETERS = {"match": EXACT, "match_exact": EXACT, "match_urlpattern": URLPATTERN}
LAST_EVENT_ID = "last_event_id"
#: 0.x names, read in compatibility mode only.
LEGACY_TOPIC = "topic"
LEGACY_LAST_EVENT_ID = "lastEventID"


@dataclass(frozen=True, slots=True)
class SubscribeRequest:
    """What a subscriber asked for.

    ``matchers``: ``(value, match_type)`` in request order, duplicates dropped (0.x ``topic=``
    selectors have the type ``LEGACY``, in compatibility mode); ``last_event_id``: where
    to resume (None: live only); ``resume_requested``: a ``Last-Event-ID`` header or a
    ``last_event_id`` parameter was present, even empty, so the response must carry
    ``Mercure-Last-Event-ID`` (draft-08 §7).
    """

    matchers: tuple[TopicMatcher, ...]
    last_event_id: str | None
    resume_requested: bool


def parse_subscribe_query(
    query: bytes | str,
    base_url: str,
    check: PatternCheck,
    *,
    body: bytes = b"",
    last_event_id_header: str | None = None,
    compatibility: bool = False,
    max_matchers: int = MAX_MATCHERS,
    max_pattern_bytes: int = MAX_PATTERN_BYTES,
) -> SubscribeRequest:
    """Read a subscribe request: the raw query string (and a ``QUERY`` body), the
    ``Last-Event-ID`` header. ``base_url`` is the hub's URL, against which relative URL
    Patterns are checked. Raises RequestError 400 ``invalid_request`` naming the problem.

    Runtime complexity: O(size of the query and body) plus one ``check`` per URL Pattern.
    """
    pairs = parse_urlencoded(query) + parse_urlencoded(body)
    matchers: list[TopicMatcher] = []
    resume: dict[str, str] = {}
    for raw_name, raw_value in pairs:
        name = raw_name.decode("utf-8", "replace")
        match_type = MATCH_PARAMETERS.get(name)
        if match_type is None and raw_name[:5].lower() == b"match":
            raise RequestError.bad_request(
                f"unknown subscribe parameter {name[:60]!r}: the 'match' prefix is reserved to "
                f"{', '.join(MATCH_PARAMETERS)} (case-sensitive)"
            )
        if match_type is not None or (compatibility and name == LEGACY_TOPIC):
            if len(matchers) >= max_matchers:
                raise RequestError.bad_request(f"more than {max_matchers} topic matchers")
            value = _text(name, raw_value)
            if match_type is None:
                matchers.append((_legacy_topic(value, max_pattern_bytes), LEGACY))
                continue
            problem = matcher_problem(value, match_type, base_url, check, max_pattern_bytes)
            if problem is not None:
                raise RequestError.bad_request(f"{name}={value[:80]!r}: {problem}")
            matchers.append((value, match_type))
        elif name == LEGACY_TOPIC:
            raise RequestError.bad_request(
                "the 0.x 'topic' parameter is not accepted: use 'match' (exact) or "
                "'match_urlpattern' (a URL Pattern such as https://example.com/books/:id)"
            )
        elif name not in resume and (
            name == LAST_EVENT_ID or (compatibility and name == LEGACY_LAST_EVENT_ID)
        ):
            resume[name] = _text(name, raw_value)
    if not matchers:
        raise RequestError.bad_request(
            "no topic matcher: add 'match' (exact) or 'match_urlpattern' parameters"
        )
    header = last_event_id_header or None
    last_event_id = header or resume.get(LAST_EVENT_ID) or resume.get(LEGACY_LAST_EVENT_ID)
    return SubscribeRequest(
        tuple(dict.fromkeys(matchers)),
        last_event_id or None,
        last_event_id_header is not None or bool(resume),
    )


def _text(name: str, raw: bytes) -> str:
    value = utf8(raw)
    if value is None:
        raise RequestError.bad_request(f"the value of {name[:60]!r} is not valid UTF-8")
    return value


def _legacy_topic(value: str, max_bytes: int) -> str:
    """A 0.x selector, held to the same length and character rules as 1.0 matchers."""
    problem = matcher_problem(value, EXACT, "", lambda *_: None, max_bytes)
    if problem is not None:
        raise RequestError.bad_request(f"topic={value[:80]!r}: {problem}")
    return value
