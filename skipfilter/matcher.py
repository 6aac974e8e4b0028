"""The one interface every subscriber-matching implementation offers.

TopicIndex satisfies it directly; the baselines and the tries (through adapters) do
too, so tests and benchmarks swap implementations with one line.

- :class:`Matcher` -- the protocol.
- :func:`check_selector_list`, :func:`registration` -- the subscribe checks every
  implementation applies, so they all refuse bad input alike (``match`` applies
  :func:`skipfilter.selectors.check_topics`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Protocol, TypeAlias, TypeVar, runtime_checkable

from pyroaring import BitMap64

if TYPE_CHECKING:
    from skipfilter.selectors import TypedSelector

__all__ = ["Matcher", "SelectorInput", "check_selector_list", "registration"]

T = TypeVar("T")

#: A selector as a subscribe call takes it: a string in the matcher's syntax, or a
#: :class:`~skipfilter.selectors.TypedSelector` (an exact topic, or the syntax named).
SelectorInput: TypeAlias = "str | TypedSelector"


def check_selector_list(selectors: Iterable[object], what: str) -> None:
    """Refuse a bare string, or anything not iterable, where a list of selectors (``what``)
    is expected."""
    if isinstance(selectors, str | bytes):
        raise TypeError(f"{what} must be a list of selectors, not a single string")
    try:
        iter(selectors)  # a generator is its own iterator: nothing is consumed
    except TypeError:
        raise TypeError(
            f"{what} must be a list of selectors, got {type(selectors).__name__}"
        ) from None


def registration(
    selectors: Iterable[SelectorInput],
    allowed: Iterable[SelectorInput] | None,
    prepare: Callable[[Iterable[SelectorInput], str], tuple[T, ...]],
) -> tuple[tuple[T, ...], tuple[T, ...]]:
    """Validate one subscribe call the way every Matcher does: (selectors, allowed).

    ``prepare(items, what)`` checks and converts one list; at least one selector is
    required, and ``allowed=None`` means no authorization at all.
    """
    subscribed = prepare(selectors, "selectors")
    if not subscribed:
        raise ValueError("a subscriber needs at least one selector")
    return subscribed, (prepare(allowed, "allowed") if allowed is not None else ())


@runtime_checkable
class Matcher(Protocol):
    """Subscribers with topic selectors; which of them an update goes to."""

    @property
    def syntax(self) -> str:
        """The selector syntax (see :data:`skipfilter.selectors.SYNTAXES`)."""
        ...

    def subscribe(
        self,
        selectors: Iterable[SelectorInput],
        allowed: Iterable[SelectorInput] | None = None,
        payload: object = None,
    ) -> int:
        """Add a subscriber; return its id (never reused)."""
        ...

    def unsubscribe(self, sid: int) -> bool:
        """Remove a subscriber; return whether it was subscribed."""
        ...

    def match(self, topics: Sequence[str], private: bool = False) -> BitMap64:
        """Ids of the subscribers an update on ``topics`` goes to (Mercure rules).

        Raises :class:`~skipfilter.errors.InvalidTopic` for a topic its syntax cannot
        publish to (MQTT ``a/+``, NATS ``a..b``).
        """
        ...

    def __len__(self) -> int:
        """Number of subscribers."""
        ...
