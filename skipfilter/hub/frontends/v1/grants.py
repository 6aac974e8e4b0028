"""What a token allows: its ``authorization_details`` claim (RFC 9396), read.

``AuthorizationDetails`` are the 1.0 wire's grants; the core sees them through the front
end's adapter (``TokenGrants``, a ``core.grants.Grants``) and nothing here knows the core.

A Mercure detail is ``{"type": "https://mercure.rocks/authorization-detail", "actions": [...],
"topics": [{"match": ..., "match_type"?: ...}, ...], "payload"?: {...}}`` (draft-08 §6.4, §6.7).
Entries of other types are ignored; one invalid Mercure entry rejects the whole token
(``BearerError`` 401 ``invalid_token``), never a partial reading. Unknown action strings grant
nothing; ``{"match": "*"}`` is the wildcard whatever its ``match_type``. A member whose value is
``null`` counts as absent, as in the Go hub.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

from skipfilter.hub.frontends.v1.errors import BearerError
from skipfilter.hub.frontends.v1.matchers import (
    EXACT,
    LEGACY,
    MAX_MATCHERS,
    MAX_PATTERN_BYTES,
    PatternCheck,
    TopicMatcher,
    matcher_problem,
)
from skipfilter.hub.frontends.v1.wire import string_problem
from skipfilter.tokens.mint import MERCURE_DETAIL as MERCURE_DETAIL  # one spelling, shared

if TYPE_CHECKING:
    from skipfilter.hub.auth.verify import Claims

PUBLISH: Final = "publish"
SUBSCRIBE: Final = "subscribe"
ACTIONS: Final = (PUBLISH, SUBSCRIBE)
#: Selectors per list in a 0.x ``mercure`` claim (the Go hub's compatibility-mode limit).
MAX_LEGACY_SELECTORS: Final = 1000


@dataclass(frozen=True, slots=True)
class Detail:
    """One Mercure authorization detail: the actions it grants on its topics, and the
    ``payload`` given to subscriptions it matches (None: no payload)."""

    actions: frozenset[str]
    topics: tuple[TopicMatcher, ...]
    payload: Any = None


@dataclass(frozen=True, slots=True)
class AuthorizationDetails:
    """The Mercure details of a token, in token order (the order decides payloads).

    ``fallback_payload`` is what a subscription gets when no detail gives it one: only a 0.x
    token's ``mercure.payload`` (compatibility mode) sets it.
    """

    details: tuple[Detail, ...] = ()
    fallback_payload: Any = None

    def matchers(self, action: str) -> tuple[TopicMatcher, ...]:
        """Every topic matcher granting ``action`` (first occurrence order, no duplicates).

        The private-update rule: a subscriber may read a private update when one of these
        ``subscribe`` matchers matches one of its topics. Runtime complexity: O(topics).
        """
        return tuple(
            dict.fromkeys(m for d in self.details if action in d.actions for m in d.topics)
        )

    def subscription_payload(
        self, subscription: TopicMatcher, matches: Callable[[TopicMatcher, str], bool]
    ) -> Any:
        """The payload of the first ``subscribe`` detail one of whose topics matches the
        subscription's own matcher string, taken as a topic (draft-08 §6.8), else
        ``fallback_payload``.

        ``matches(matcher, topic)`` is the hub's matching (the index's, for URL Patterns).
        Runtime complexity: O(topics) calls of ``matches``.
        """
        value = subscription[0]
        for detail in self.details:
            if SUBSCRIBE in detail.actions and any(matches(m, value) for m in detail.topics):
                return detail.payload if detail.payload is not None else self.fallback_payload
        return self.fallback_payload

    def __bool__(self) -> bool:
        return bool(self.details)


def parse_authorization_details(
    value: object,
    base_url: str,
    check: PatternCheck,
    max_matchers: int = MAX_MATCHERS,
    max_pattern_bytes: int = MAX_PATTERN_BYTES,
) -> AuthorizationDetails:
    """Read an ``authorization_details`` claim (None: absent) into ``AuthorizationDetails``.

    Raises BearerError 401 ``invalid_token`` naming the first problem: not an array, an entry
    that is not an object or has no string ``type``, a Mercure entry without a non-empty
    ``actions`` array of strings or a non-empty ``topics`` array of matcher objects, a matcher
    the hub cannot evaluate (unknown ``match_type``, empty, too long, forbidden characters, an
    invalid URL Pattern), a non-object ``payload``, or more than ``max_matchers`` Mercure
    entries or topics in all. Patterns are checked only once the counts are known to be within
    the limits. Runtime complexity: O(size of the claim) plus one ``check`` per pattern.
    """
    if value is None:
        return AuthorizationDetails()
    if not isinstance(value, list):
        raise _invalid(f"must be an array, not {_kind(value)}")
    entries = []
    topics = 0
    for i, entry in enumerate(value):
        where = f"entry {i}"
        if not isinstance(entry, dict):
            raise _invalid(f"{where} is {_kind(entry)}, not an object")
        kind = entry.get("type")
        if not isinstance(kind, str):
            raise _invalid(f'{where} has no string "type" (RFC 9396)')
        if kind != MERCURE_DETAIL:
            continue
        entries.append((where, entry))
        if len(entries) > max_matchers:
            raise _invalid(f"more than {max_matchers} Mercure entries")
        topics += len(entry["topics"]) if isinstance(entry.get("topics"), list) else 0
        if topics > max_matchers:
            raise _invalid(f"more than {max_matchers} topics in all Mercure entries")
    return AuthorizationDetails(
        tuple(_detail(where, entry, base_url, check, max_pattern_bytes) for where, entry in entries)
    )


def _detail(
    where: str, entry: Mapping[str, Any], base_url: str, check: PatternCheck, max_bytes: int
) -> Detail:
    actions = entry.get("actions")
    if not isinstance(actions, list) or not actions:
        raise _invalid(f'{where}: "actions" must be a non-empty array')
    for action in actions:
        if not isinstance(action, str):
            raise _invalid(f'{where}: "actions" holds {_kind(action)}, not a string')
    topics = entry.get("topics")
    if not isinstance(topics, list) or not topics:
        raise _invalid(f'{where}: "topics" must be a non-empty array of matcher objects')
    payload = entry.get("payload")
    if payload is not None and not isinstance(payload, dict):
        raise _invalid(f'{where}: "payload" must be a JSON object, not {_kind(payload)}')
    return Detail(
        frozenset(a for a in actions if a in ACTIONS),
        tuple(_topics(where, topics, base_url, check, max_bytes)),
        payload,
    )


def _topics(
    where: str, topics: list[Any], base_url: str, check: PatternCheck, max_bytes: int
) -> Iterator[TopicMatcher]:
    for j, topic in enumerate(topics):
        at = f"{where}, topic {j}"
        if not isinstance(topic, dict):
            raise _invalid(f'{at} is {_kind(topic)}, not an object {{"match": ...}}')
        match, match_type = topic.get("match"), topic.get("match_type")
        if not isinstance(match, str) or not match:
            raise _invalid(f'{at}: "match" must be a non-empty string')
        if match_type is None:
            match_type = EXACT
        elif not isinstance(match_type, str):
            raise _invalid(f'{at}: "match_type" must be a string, not {_kind(match_type)}')
        problem = matcher_problem(match, match_type, base_url, check, max_bytes)
        if problem is not None:
            raise _invalid(f"{at}: {problem}")
        yield match, match_type


def legacy_details(claims: Claims) -> AuthorizationDetails:
    """The 0.x ``mercure`` claim as ``AuthorizationDetails`` of ``LEGACY`` matchers
    (compatibility mode).

    One ``publish`` and one ``subscribe`` detail; ``mercure.payload`` is the fallback payload,
    so every subscription gets it, as in 0.x (and the Go hub's compatibility mode).
    """
    details = []
    for action, selectors in ((PUBLISH, claims.publish), (SUBSCRIBE, claims.subscribe)):
        if selectors and len(selectors) > MAX_LEGACY_SELECTORS:
            raise BearerError.invalid_token(
                f"'mercure.{action}' has more than {MAX_LEGACY_SELECTORS} selectors"
            )
        for selector in selectors or ():
            problem = _legacy_problem(selector)
            if problem is not None:
                raise BearerError.invalid_token(f"'mercure.{action}' selector {problem}")
        if selectors:
            topics = tuple(dict.fromkeys((s, LEGACY) for s in selectors))
            details.append(Detail(frozenset({action}), topics))
    return AuthorizationDetails(tuple(details), claims.payload)


def _legacy_problem(selector: str) -> str | None:
    size = len(selector.encode("utf-8", "surrogatepass"))
    if size > MAX_PATTERN_BYTES:
        return f"of {size} bytes, more than {MAX_PATTERN_BYTES}"
    problem = string_problem(selector)
    return None if problem is None else f"{selector[:60]!r}: {problem}"


def _invalid(problem: str) -> BearerError:
    return BearerError.invalid_token(f"authorization_details: {problem}")


def _kind(value: object) -> str:
    """JSON's name for the type of ``value``, for messages."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    return "an object" if isinstance(value, dict) else type(value).__name__
