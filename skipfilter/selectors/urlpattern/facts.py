"""Where an index may file a compiled URL pattern: :class:`UrlFacts`.

Topics are reduced to canonical strings first (:mod:`~skipfilter.selectors.urlpattern.canonical`);
these facts say which of those strings can match a pattern, without running it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal

__all__ = ["Filing", "UrlFacts", "host_key"]

#: How a pattern is filed, from the most selective to the least:
#:
#: - ``literal``: protocol, hostname, port and pathname are fixed text; ``key`` is the
#:   index key (:func:`~skipfilter.selectors.urlpattern.canonical.key_of`) a topic must have.
#: - ``origin``: protocol, hostname and port are fixed; ``key`` is a prefix of the index key
#:   of every topic it matches (the origin and the pathname's fixed start).
#: - ``host``: the hostname ends with fixed text; ``key`` is a prefix of the *host key*
#:   (the hostname reversed, ``\\n``, the pathname) of every topic it matches.
#: - ``any``: nothing fixed to file by (``*://*/*``); tested for every URL topic.
Filing = Literal["literal", "origin", "host", "any"]


@dataclass(frozen=True, slots=True)
class UrlFacts:
    """What an index may use instead of running a URL pattern.

    ``tested`` (``literal`` only): the pattern also constrains username, password, search
    or hash, so a topic with the right key must still pass ``test``. ``segments``: how
    many ``/`` every matching pathname has, when fixed. ``test`` takes a topic's indexed
    form (:func:`~skipfilter.selectors.urlpattern.canonical.indexed`), never a raw topic:
    for the simplest patterns filed by origin it is one regular expression over the key's
    pathname (:func:`~skipfilter.selectors.urlpattern.parts.pathname_regex`), which takes
    the origin for granted: only call it on topics whose key starts with ``key``, as the
    index does. Otherwise it is the package's test of the href.
    """

    filing: Filing
    key: str
    segments: int | None
    tested: bool
    test: Callable[[str], object] = field(repr=False, compare=False)


def host_key(hostname: str, pathname: str) -> str:
    """The string ``host`` patterns are filed by: the hostname reversed, then the pathname."""
    return f"{hostname[::-1]}\n{pathname}"
