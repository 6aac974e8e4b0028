"""Which origins may publish with the cookie: exact origins, ``*``, ``null`` and ``https://*.x``.

Origins are compared as (scheme, host, port), so ``https://app.example`` and
``https://app.example:443`` are one origin while ``http://`` or another port is another. A
wildcard stands for one or more whole leftmost DNS labels: ``https://*.example.com`` allows
``https://a.example.com`` and ``https://a.b.example.com``, but not ``https://example.com``,
``https://evil-example.com``, ``https://example.com.evil.net`` nor another scheme or port.
The Go hub accepts the same ``*`` and ``scheme://*.domain`` forms (it matches a prefix and a
suffix of the text; this module matches labels, which is stricter).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from urllib.parse import urlsplit

DEFAULT_PORTS = {"http": 80, "https": 443, "ws": 80, "wss": 443}
_LABEL = re.compile(r"[a-z0-9_](?:[a-z0-9_-]*[a-z0-9_])?")

#: (scheme, host, port) with the scheme's default port filled in.
Origin = tuple[str, str, int | None]


def parse_origin(text: str) -> Origin | None:
    """The origin of an ``Origin`` header or a URL (a Referer); None for ``null`` or junk."""
    try:
        parts = urlsplit(text.strip())
        port = parts.port
    except ValueError:
        return None
    scheme, host = parts.scheme.lower(), parts.hostname
    if not scheme or not host:
        return None
    return scheme, host.lower(), port if port is not None else DEFAULT_PORTS.get(scheme)


@dataclass(frozen=True, slots=True)
class _Pattern:
    """One allowed origin; with ``wildcard`` its host is the suffix after ``*.``."""

    scheme: str
    host: str
    port: int | None
    wildcard: bool

    def matches(self, origin: Origin) -> bool:
        scheme, host, port = origin
        if scheme != self.scheme or port != self.port:
            return False
        if not self.wildcard:
            return host == self.host
        if not host.endswith("." + self.host):
            return False
        labels = host[: -len(self.host) - 1].split(".")
        return all(_LABEL.fullmatch(label) for label in labels)


def _pattern(text: str) -> _Pattern:
    """Parse one configured origin; ValueError names what is wrong with it."""
    wildcard = "://*." in text
    parsed = parse_origin(text.replace("://*.", "://", 1) if wildcard else text)
    parts = urlsplit(text)
    if (
        parsed is None
        or "*" in text.replace("://*.", "://", 1)
        or "@" in parts.netloc
        or parts.path not in ("",)
        or parts.query
        or parts.fragment
    ):
        raise ValueError(
            f"publish origin {text!r} must be '*', 'null' or scheme://host[:port], "
            "where the host may start with '*.' (e.g. https://*.example.com)"
        )
    return _Pattern(*parsed, wildcard=wildcard)


class OriginPolicy:
    """The publish origins of a hub; ``allows`` answers for one request's origin."""

    def __init__(self, origins: Iterable[str]) -> None:
        texts = [o.strip() for o in origins if o.strip()]
        self.any = "*" in texts
        self.null = "null" in texts
        self._patterns = tuple(_pattern(o) for o in texts if o not in ("*", "null"))

    def allows(self, origin: str) -> bool:
        """True when ``origin`` (an Origin header or a Referer URL) may publish."""
        if self.any:
            return True
        if origin.strip() == "null":
            return self.null
        parsed = parse_origin(origin)
        return parsed is not None and any(p.matches(parsed) for p in self._patterns)
