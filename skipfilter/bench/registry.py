"""The registry of implementations, so tests and benchmarks swap them with one line."""

from __future__ import annotations

from collections.abc import Callable

from skipfilter.baselines import TRIE_SYNTAXES, CachedScan, CtrieMatcher, LinearScan, LockedTrie
from skipfilter.baselines.paho import PahoMatcher
from skipfilter.index import TopicIndex
from skipfilter.matcher import Matcher
from skipfilter.selectors import SYNTAXES

__all__ = ["IMPLEMENTATIONS", "SUPPORTED_SYNTAXES", "make_matcher"]


#: Implementation name -> factory taking the selector syntax.
IMPLEMENTATIONS: dict[str, Callable[[str], Matcher]] = {
    "topicindex": TopicIndex,
    "linearscan": LinearScan,
    "cachedscan": CachedScan,
    "lockedtrie": LockedTrie,
    "ctrie": CtrieMatcher,
    "paho": PahoMatcher,
}

#: Implementation name -> the selector syntaxes it supports.
SUPPORTED_SYNTAXES: dict[str, tuple[str, ...]] = {
    "topicindex": SYNTAXES,
    "linearscan": SYNTAXES,
    "cachedscan": SYNTAXES,
    "lockedtrie": TRIE_SYNTAXES,
    "ctrie": ("amqp", "mqtt"),
    "paho": ("mqtt",),
}

_CACHED = {"topicindex": TopicIndex, "cachedscan": CachedScan, "lockedtrie": LockedTrie}


def make_matcher(name: str, syntax: str, *, cache_size: int | None = None) -> Matcher:
    """A fresh ``name`` implementation for ``syntax``; ``cache_size`` for the cached ones.

    Raises ValueError naming the supported choices for an unknown name or syntax.

    >>> m = make_matcher("lockedtrie", "amqp", cache_size=16)
    >>> sid = m.subscribe(["stock.#"])
    >>> list(m.match(["stock.ibm"]))
    [0]
    """
    if name not in IMPLEMENTATIONS:
        choices = ", ".join(IMPLEMENTATIONS)
        raise ValueError(f"unknown implementation {name!r}; expected one of {choices}")
    if syntax not in SUPPORTED_SYNTAXES[name]:
        supported = ", ".join(SUPPORTED_SYNTAXES[name])
        raise ValueError(f"{name} does not support {syntax!r} selectors; it supports {supported}")
    if cache_size is not None and name in _CACHED:
        return _CACHED[name](syntax, cache_size)  # type: ignore[no-any-return]
    return IMPLEMENTATIONS[name](syntax)
