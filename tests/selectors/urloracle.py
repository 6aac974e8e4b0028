"""The brute-force oracle of the urlpattern syntax: the ``urlpattern`` package, straight.

Shared by the selector, index and Spark tests: ``*`` matches everything (Mercure's
reserved matcher), anything else is ``URLPattern(text, base).test(topic, base)``.
"""

from __future__ import annotations

import functools
from typing import Any

from urlpattern import URLPattern

LIMIT = 4096


@functools.lru_cache(maxsize=4096)
def compiled(text: str, base: str | None = None) -> URLPattern | None:
    """The package's pattern, or None when it refuses ``text`` (or ``text`` is too long)."""
    if len(text.encode("utf-8", "surrogatepass")) > LIMIT:
        return None
    try:
        return URLPattern(text, base) if base is not None else URLPattern(text)
    except (ValueError, TypeError):
        return None


def urlpattern_valid(text: str, base: str | None = None) -> bool:
    """Whether ``text`` is a pattern the syntax accepts."""
    return text == "*" or compiled(text, base) is not None


_SAME: Any = object()


def urlpattern_oracle(
    text: str, topic: str, base: str | None = None, topic_base: Any = _SAME
) -> bool:
    """Whether pattern ``text`` (resolved against ``base``) matches ``topic`` (resolved
    against ``topic_base``: by default ``base`` too; None: no base)."""
    if text == "*":
        return True
    pattern = compiled(text, base)
    assert pattern is not None, text
    try:
        return pattern.test(topic, base if topic_base is _SAME else topic_base)
    except TypeError:  # a lone surrogate: no UTF-8, so no URL
        return False


def components(topic: str, base: str | None = None) -> list[str] | None:
    """The eight canonical components of ``topic`` as the package parses it, or None."""
    try:
        result = EVERYTHING.exec(topic, base)
    except TypeError:
        return None
    if result is None:
        return None
    names = ("protocol", "username", "password", "hostname", "port", "pathname", "search", "hash")
    return [result[name]["input"] for name in names]  # type: ignore[literal-required]


EVERYTHING = URLPattern({})
