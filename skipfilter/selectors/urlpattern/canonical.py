"""A topic's canonical URL parts, as the URL Pattern standard sees them.

A URL Pattern tests a topic by parsing it as a URL (against a base URL, for a relative
topic) and comparing the parsed components. So an index that files patterns in hash maps
must reduce every topic to those same components first: ``https://EXAMPLE.com:443``
and ``https://example.com/`` are one URL. :class:`Resolver` does that for one base URL:

- ``key``: protocol, hostname, port and pathname joined by ``\\n`` (which no canonical
  component holds). Every pattern of ``urlpattern`` leaves username, password, search
  and hash out of its index key, so this is what literal patterns are filed by.
- ``href``: a URL string that parses to exactly the topic's components, absolute, which
  the patterns' own tests take.

The ``urlpattern`` package (the matcher of record) parses: a match-all pattern's
``exec`` returns the components. Topics already in canonical form (lower-case ``http``
or ``https`` host of plain labels, no default port, a path without dot segments or
characters the parser would encode) skip it: one regular expression, checked against
the package by property tests.
"""

from __future__ import annotations

import re
from typing import Final

from urlpattern import URLPattern

__all__ = ["COMPONENTS", "Resolver", "href_of", "key_of"]

#: The components of a URL, in the URL Pattern standard's order.
COMPONENTS: Final = (
    "protocol",
    "username",
    "password",
    "hostname",
    "port",
    "pathname",
    "search",
    "hash",
)

_EVERYTHING: Final = URLPattern({})  # every component a wildcard: exec() returns the parts
_DEFAULT_PORTS: Final = {"http": "80", "https": "443", "ws": "80", "wss": "443", "ftp": "21"}
_SPECIAL: Final = frozenset({*_DEFAULT_PORTS, "file"})

# http(s) URLs the parser leaves as they are, up to the path's end: lower-case labels of
# letters, digits and '-', a port without leading zeros, path characters outside every
# percent-encode set; then anything without spaces or control characters.
_LABEL = r"[a-z0-9-]+"
_PATH_CHARS = r"[A-Za-z0-9\-._~!$&'()*+,;=:@%/]"
_TAIL = r"(?:[?#][^\x00-\x20\x7f\ud800-\udfff]*)?"  # no lone surrogate: not UTF-8
_PLAIN_ABSOLUTE: Final = re.compile(
    rf"(https?)://({_LABEL}(?:\.{_LABEL})*)(?::([1-9][0-9]{{0,4}}))?(/{_PATH_CHARS}*)?{_TAIL}"
)
_PLAIN_PATH: Final = re.compile(rf"(/(?!/){_PATH_CHARS}*){_TAIL}")
# A dot segment: '.', '..' or their percent-encoded spellings, which the parser removes.
_DOT_SEGMENT: Final = re.compile(r"(?:^|/)(?:\.|%2[eE]){1,2}(?:/|$)")


def key_of(protocol: str, hostname: str, port: str, pathname: str) -> str:
    """The index key of a URL's parts: what literal patterns are filed by."""
    return f"{protocol}\n{hostname}\n{port}\n{pathname}"


def href_of(parts: list[str]) -> str:
    """A URL string that parses back to ``parts`` (the eight components, in order).

    Follows the URL standard's serializer: ``//`` only with a host (or a special scheme),
    and ``/.`` before a hostless path that starts with ``//``.
    """
    protocol, username, password, hostname, port, pathname, search, fragment = parts
    out = [protocol, ":"]
    if hostname or port or username or password or protocol in _SPECIAL:
        out.append("//")
        if username or password:
            out += [username, ":", password, "@"] if password else [username, "@"]
        out.append(hostname)
        if port:
            out += [":", port]
    elif pathname.startswith("//"):
        out.append("/.")
    out.append(pathname)
    if search:
        out += ["?", search]
    if fragment:
        out += ["#", fragment]
    return "".join(out)


def _host_is_plain(host: str) -> bool:
    """Whether the parser leaves this host as it is: no IPv4 number, no punycode to check."""
    last = host.rpartition(".")[2]
    return last[0].isalpha() and not any(label.startswith("xn--") for label in host.split("."))


def _plain(match: re.Match[str]) -> bool:
    """Whether a topic the regular expression accepted is really in canonical form."""
    scheme, host, port, path = match.groups()
    if not _host_is_plain(host):
        return False
    if port is not None and (int(port) > 65535 or port == _DEFAULT_PORTS[scheme]):
        return False
    return path is None or _DOT_SEGMENT.search(path) is None


class Resolver:
    """Topics to their canonical (key, href) against one base URL (or none).

    Thread-safe (no state changes after construction). Runtime: one regular expression
    for a topic in canonical form, else one parse by the ``urlpattern`` package (a few
    microseconds).
    """

    __slots__ = ("_base", "_path_base")

    def __init__(self, base_url: str | None) -> None:
        """Resolve relative topics against ``base_url``; ValueError if it is no absolute URL."""
        self._base = base_url
        # (key, href) of what a topic that is an absolute path keeps from an http(s) base.
        self._path_base: tuple[str, str] | None = None
        if base_url is not None:
            parts = _parts(base_url, None)
            if parts is None:
                raise ValueError(f"base_url must be an absolute URL, got {base_url!r}")
            if parts[0] in ("http", "https"):
                self._path_base = (
                    key_of(parts[0], parts[3], parts[4], ""),
                    href_of([*parts[:5], "", "", ""]),
                )

    @property
    def base_url(self) -> str | None:
        """The base URL relative topics are resolved against."""
        return self._base

    def canonical(self, topic: str) -> tuple[str, str] | None:
        """``(key, href)`` of ``topic`` resolved against the base; None if it is no URL."""
        plain = _PLAIN_ABSOLUTE.fullmatch(topic)
        if plain is not None and _plain(plain):
            scheme, host, port, path = plain.groups()
            return key_of(scheme, host, port or "", path or "/"), topic
        if self._path_base is not None and topic[:1] == "/":
            relative = _PLAIN_PATH.fullmatch(topic)
            if relative is not None and _DOT_SEGMENT.search(relative[1]) is None:
                key, href = self._path_base
                return key + relative[1], href + topic
        parts = _parts(topic, self._base)
        if parts is None:
            return None
        return key_of(parts[0], parts[3], parts[4], parts[5]), href_of(parts)


def _parts(topic: str, base: str | None) -> list[str] | None:
    """The eight canonical components of ``topic`` (against ``base``), by the package."""
    try:
        result = _EVERYTHING.exec(topic, base)
    except TypeError:  # a lone surrogate: no UTF-8, so no URL
        return None
    if result is None:
        return None
    return [result[name]["input"] for name in COMPONENTS]
