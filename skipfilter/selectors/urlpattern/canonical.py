"""A topic's canonical URL parts, as the URL Pattern standard sees them.

A URL Pattern tests a topic by parsing it as a URL (against a base URL, for a relative
topic) and comparing the parsed components. So an index that files patterns in hash maps
must reduce every topic to those same components first: ``https://EXAMPLE.com:443``
and ``https://example.com/`` are one URL. :class:`Resolver` does that for one base URL,
into one string, the topic's *indexed form* (:func:`indexed`):

- its ``key``: protocol, hostname, port and pathname joined by ``\n`` (which no canonical
  component holds). Every pattern of ``urlpattern`` leaves username, password, search
  and hash out of its index key, so this is what literal patterns are filed by;
- then ``\0`` and an ``href``: a URL string, absolute, that parses to exactly the topic's
  components, which the ``urlpattern`` package's tests take.

The ``urlpattern`` package (the matcher of record) parses: a match-all pattern's
``exec`` returns the components. Topics already in canonical form (lower-case ``http``
or ``https`` host of plain labels, no default port, a path without dot segments or
characters the parser would encode) skip it: one regular expression, checked against
the package by property tests.
"""

from __future__ import annotations

import re
import string
from typing import Final

from urlpattern import URLPattern

__all__ = ["COMPONENTS", "SEPARATOR", "Resolver", "href_of", "indexed", "key_of", "split"]

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

#: Between a topic's key and its href in its indexed form: no canonical component holds NUL.
SEPARATOR: Final = "\x00"

# http(s) URLs the parser leaves as they are, up to the path's end: lower-case labels of
# letters, digits and '-' (none punycode, the last starting with a letter: no IPv4
# number), a port without leading zeros, path characters outside every percent-encode
# set; then anything but spaces, control characters and lone surrogates (no UTF-8).
_LABEL = r"(?!xn--)[a-z0-9-]+"
_HOST = rf"(?:{_LABEL}\.)*(?!xn--)[a-z][a-z0-9-]*"
_PATH_CHARS = r"[A-Za-z0-9\-._~!$&'()*+,;=:@%/]"
_TAIL = r"(?:[?#][^\x00-\x20\x7f\ud800-\udfff]*)?"
_PLAIN_ABSOLUTE: Final = re.compile(
    rf"(https?)://({_HOST})(?::([1-9][0-9]{{0,4}}))?(/{_PATH_CHARS}*)?{_TAIL}"
)
_PLAIN_PATH: Final = re.compile(rf"(/(?!/){_PATH_CHARS}*){_TAIL}")
# A non-special scheme and an opaque path (``urn:isbn:1``) the parser keeps as written: no
# '/' first (that would be a hierarchical path), nothing it encodes, strips or splits off.
_PLAIN_OPAQUE: Final = re.compile(
    r"([A-Za-z][A-Za-z0-9+.\-]*):([A-Za-z0-9\-._~!$&'()*+,;=:@][A-Za-z0-9\-._~!$&'()*+,;=:@/]*)"
)
# After a plain head, a tail of these characters is plain: no dot segment, nothing encoded.
_PLAIN_TAIL: Final = string.ascii_letters + string.digits + "-_~"
_HEADS_LIMIT: Final = 4096  # plain heads remembered per Resolver (hosts x directories)
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


def indexed(key: str, href: str) -> str:
    """A topic's indexed form: its key, then its href."""
    return f"{key}{SEPARATOR}{href}"


def split(topic: str) -> tuple[str, str]:
    """An indexed form's (key, href)."""
    key, _, href = topic.partition(SEPARATOR)
    return key, href


def _plain_path(path: str | None) -> bool:
    """Whether the parser keeps ``path`` (plain characters) as it is: no dot segment."""
    return path is None or (("." not in path and "%" not in path) or not _DOT_SEGMENT.search(path))


class Resolver:
    """Topics to their indexed form (:func:`indexed`) against one base URL (or none).

    Thread-safe: its one state is a bounded cache of plain path heads, whose dict
    operations are atomic. Runtime: a dict probe and a ``str.strip`` for a topic whose
    head (up to its last ``/``) was seen plain before, one regular expression for another
    topic in canonical form, else one parse by the ``urlpattern`` package (microseconds).
    """

    __slots__ = ("_base", "_heads", "_path_base")

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
        # A topic's head (up to its last '/') known to be plain -> (key, href) prefixes:
        # the same head followed by plain characters is plain too.
        self._heads: dict[str, tuple[str, str]] = {}

    @property
    def base_url(self) -> str | None:
        """The base URL relative topics are resolved against."""
        return self._base

    def canonical(self, topic: str) -> str | None:
        """The indexed form (:func:`indexed`) of ``topic`` resolved against the base;
        None if it is no URL."""
        found = self.resolve(topic)
        return None if found is None else found[1]

    def resolve(self, topic: str) -> tuple[str, str] | None:
        """``(key, indexed form)`` of ``topic`` resolved against the base (the key is the
        indexed form's start, given apart so an index need not cut it out); None if it is
        no URL."""
        directory, slash, tail = topic.rpartition("/")
        head = self._heads.get(directory) if slash else None
        if head is not None and not tail.strip(_PLAIN_TAIL):
            key = f"{head[0]}{tail}"
            return key, f"{key}{SEPARATOR}{head[1]}{topic}"
        cut = len(directory) + 1
        plain = _PLAIN_ABSOLUTE.fullmatch(topic)
        if plain is not None:
            scheme, host, port, path = plain.groups()
            if (port is None or (port != _DEFAULT_PORTS[scheme] and int(port) < 65536)) and (
                _plain_path(path)
            ):
                origin = f"{scheme}\n{host}\n{port or ''}\n"
                if path is not None and plain.end(4) == len(topic):  # no query, no fragment
                    self._remember(directory, origin + topic[plain.start(4) : cut], "")
                key = f"{origin}{path or '/'}"
                return key, f"{key}{SEPARATOR}{topic}"
        elif self._path_base is not None and topic[:1] == "/":
            relative = _PLAIN_PATH.fullmatch(topic)
            if relative is not None and _plain_path(relative[1]):
                origin, href = self._path_base
                if relative.end(1) == len(topic):
                    self._remember(directory, origin + topic[:cut], href)
                key = f"{origin}{relative[1]}"
                return key, f"{key}{SEPARATOR}{href}{topic}"
        else:
            opaque = _PLAIN_OPAQUE.fullmatch(topic)
            if opaque is not None and (scheme := opaque[1].lower()) not in _SPECIAL:
                # a scheme of its own: the base plays no part (only special schemes may be
                # relative to it), and the path is the rest as written
                key = key_of(scheme, "", "", opaque[2])
                return key, indexed(key, f"{scheme}:{opaque[2]}")
        parts = _parts(topic, self._base)
        if parts is None:
            return None
        key = key_of(parts[0], parts[3], parts[4], parts[5])
        return key, indexed(key, href_of(parts))

    def _remember(self, head: str, key: str, href: str) -> None:
        """Record a plain head (without its last ``/``), with the prefixes of its topics'
        key and href."""
        heads = self._heads
        if len(heads) >= _HEADS_LIMIT:
            heads.clear()
        heads[head] = (key, href)


def _parts(topic: str, base: str | None) -> list[str] | None:
    """The eight canonical components of ``topic`` (against ``base``), by the package."""
    try:
        result = _EVERYTHING.exec(topic, base)
    except TypeError:  # a lone surrogate: no UTF-8, so no URL
        return None
    if result is None:
        return None
    return [result[name]["input"] for name in COMPONENTS]
