"""The one interface every subscriber-matching implementation offers.

TopicIndex satisfies it directly; the baselines and the tries (through adapters) do
too, so tests and benchmarks swap implementations with one line.

- :class:`Matcher` -- the protocol.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Protocol, runtime_checkable

from pyroaring import BitMap64

__all__ = ["Matcher"]


@runtime_checkable
class Matcher(Protocol):
    """Subscribers with topic selectors; which of them an update goes to."""

    @property
    def syntax(self) -> str:
        """The selector syntax (see :data:`skipfilter.selectors.SYNTAXES`)."""
        ...

    def subscribe(
        self, selectors: Iterable[str], allowed: Iterable[str] | None = None, payload: object = None
    ) -> int:
        """Add a subscriber; return its id (never reused)."""
        ...

    def unsubscribe(self, sid: int) -> bool:
        """Remove a subscriber; return whether it was subscribed."""
        ...

    def match(self, topics: Sequence[str], private: bool = False) -> BitMap64:
        """Ids of the subscribers an update on ``topics`` goes to (Mercure rules)."""
        ...

    def __len__(self) -> int:
        """Number of subscribers."""
        ...
