"""What a subscriber may see, in the core's terms, whatever protocol version granted it.

A stream holds typed selectors (``TypedSelector``: exact, a URL Pattern, or a 0.x Mercure
selector) and a ``Grants`` object: the selectors it may read private updates on, when its
token expires, and the payload each of its subscriptions carries. Mercure 0.x's ``mercure``
claim (``LegacyGrants``) and 1.0's ``authorization_details`` (the 1.0 front end's adapter)
both become one; the core never asks which.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Protocol

from skipfilter.hub.auth.verify import Claims
from skipfilter.selectors import EXACT, TypedSelector, compile_selector

#: The reserved matcher value that matches every topic, whatever its type.
WILDCARD = "*"
#: Whether one topic matches a selector.
TopicTest = Callable[[str], bool]


class Grants(Protocol):
    """What a verified token lets a subscriber see (see the module docstring)."""

    @property
    def subscribe(self) -> tuple[TypedSelector, ...] | None:
        """Selectors of the topics it may read private updates on (None: no private ones)."""
        ...

    @property
    def expires_at(self) -> float | None:
        """When the token expires (UNIX seconds; None: never): its streams end by then."""
        ...

    def payload_for(self, selector: TypedSelector) -> Any:
        """The payload the subscription ``selector`` carries (None: none)."""
        ...


@dataclass(frozen=True, slots=True)
class LegacyGrants:
    """A Mercure 0.x token's ``mercure`` claim as ``Grants``: one payload for every
    subscription, its ``subscribe`` selectors in the 0.x syntax."""

    claims: Claims
    subscribe: tuple[TypedSelector, ...] | None

    @classmethod
    def of(cls, claims: Claims) -> LegacyGrants:
        selectors = claims.subscribe
        typed = tuple(TypedSelector(s, "mercure") for s in selectors) if selectors else None
        return cls(claims, typed)

    @property
    def expires_at(self) -> float | None:
        return self.claims.expires_at

    def payload_for(self, selector: TypedSelector) -> Any:
        return self.claims.payload


def topic_test(selector: TypedSelector, base_url: str | None) -> TopicTest:
    """A test of single topics for ``selector`` (``*`` matches every topic, whatever its
    type; exact compares bytes; URL Patterns resolve against ``base_url``). Raises
    InvalidSelector for a selector that does not compile.

    Compiled tests are shared: subscribers holding one pattern (a broadcast) compile it once,
    not once per stream (a URL Pattern costs hundreds of microseconds). URL Patterns are
    shared while a stream, grant or index entry holds them, and freed after
    (``compile_urlpattern``'s weak cache); the rest through an LRU."""
    if selector.text == WILDCARD and selector.syntax in (EXACT, "mercure", "urlpattern"):
        return _everything
    if selector.syntax == EXACT:
        return selector.text.__eq__
    if selector.syntax == "urlpattern":
        return compile_selector(selector.text, "urlpattern", base_url=base_url).matches
    return _compiled(selector.text, selector.syntax)


@lru_cache(maxsize=4096)
def _compiled(text: str, syntax: str) -> TopicTest:
    return compile_selector(text, syntax).matches


def _everything(topic: str) -> bool:
    return True
