"""Every :class:`~skipfilter.matcher.Matcher` implementation, in one table everything reads.

Tests, the asv suites and ``skipfilter bench`` take the list of implementations, their
display names, the syntaxes each supports, which ones take a ``cache_size``, which are
scans and what each needs installed from here, so a new implementation is added in one
place. Classes are imported only when one is made: an implementation whose extra is
missing (paho-mqtt) is reported as such, and costs nothing until then.

- :class:`Implementation` -- one row.
- :data:`IMPLEMENTATIONS` -- the rows, by name.
- :func:`make_matcher` -- a fresh matcher by name and syntax.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import cast

from skipfilter.extras import installed, missing, require
from skipfilter.matcher import Matcher
from skipfilter.selectors import SYNTAXES, WORD_SYNTAXES

__all__ = ["IMPLEMENTATIONS", "Implementation", "make_matcher"]


@dataclass(frozen=True, slots=True)
class Implementation:
    """One Matcher implementation: where it lives, what it supports, what it needs."""

    name: str  # registry key: "lockedtrie"
    display: str  # name in reports: "LockedTrie"
    target: str  # "module:attribute" of its class or factory
    syntaxes: tuple[str, ...]
    cached: bool = False  # its constructor takes ``cache_size``
    scan: bool = False  # tests every subscriber per new topic: O(N) a lookup
    requires: str | None = None  # a module outside the core dependencies it imports
    extra: str | None = None  # the extra that installs ``requires``

    def available(self) -> bool:
        """Whether what it needs is installed."""
        return self.requires is None or installed(self.requires)

    def missing(self) -> str | None:
        """Why it cannot run here (naming the extra to install), or None."""
        if self.available():
            return None
        return missing(f"needs {self.requires}", self.extra or "dev")

    def factory(self) -> Callable[..., Matcher]:
        """Its class, imported now; MissingExtra naming the extra when it is not installed."""
        if self.requires is not None:
            require(self.requires, self.extra or "dev", self.display)
        module, _, attribute = self.target.partition(":")
        return cast("Callable[..., Matcher]", getattr(importlib.import_module(module), attribute))

    def make(self, syntax: str, cache_size: int | None = None) -> Matcher:
        """A fresh, empty matcher for ``syntax``; ``cache_size`` if it keeps a cache.

        Raises ValueError naming the supported syntaxes for another syntax.
        """
        if syntax not in self.syntaxes:
            supported = ", ".join(self.syntaxes)
            raise ValueError(
                f"{self.name} does not support {syntax!r} selectors; it supports {supported}"
            )
        factory = self.factory()
        if cache_size is not None and self.cached:
            return factory(syntax, cache_size)
        return factory(syntax)


#: Every implementation, by name; the reference (TopicIndex) first, the scans next.
IMPLEMENTATIONS: dict[str, Implementation] = {
    impl.name: impl
    for impl in (
        Implementation(
            "topicindex", "TopicIndex", "skipfilter.index:TopicIndex", SYNTAXES, cached=True
        ),
        Implementation(
            "linearscan", "LinearScan", "skipfilter.baselines:LinearScan", SYNTAXES, scan=True
        ),
        Implementation(
            "cachedscan",
            "CachedScan",
            "skipfilter.baselines:CachedScan",
            SYNTAXES,
            cached=True,
            scan=True,
        ),
        Implementation(
            "lockedtrie",
            "LockedTrie",
            "skipfilter.baselines:LockedTrie",
            tuple(WORD_SYNTAXES),
            cached=True,
        ),
        Implementation("ctrie", "Ctrie", "skipfilter.baselines:CtrieMatcher", ("amqp", "mqtt")),
        Implementation(
            "paho",
            "Paho",
            "skipfilter.baselines.paho:PahoMatcher",
            ("mqtt",),
            requires="paho.mqtt",
            extra="bench",
        ),
    )
}


def make_matcher(name: str, syntax: str, *, cache_size: int | None = None) -> Matcher:
    """A fresh ``name`` implementation for ``syntax``; ``cache_size`` for the cached ones.

    Raises ValueError naming the choices for an unknown name or syntax, and
    :class:`~skipfilter.errors.MissingExtra` when its extra is not installed.

    >>> m = make_matcher("lockedtrie", "amqp", cache_size=16)
    >>> sid = m.subscribe(["stock.#"])
    >>> list(m.match(["stock.ibm"]))
    [0]
    """
    impl = IMPLEMENTATIONS.get(name)
    if impl is None:
        choices = ", ".join(IMPLEMENTATIONS)
        raise ValueError(f"unknown implementation {name!r}; expected one of {choices}")
    return impl.make(syntax, cache_size)
