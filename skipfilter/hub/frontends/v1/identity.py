"""Who the hub is for one request: its resource identifier (the token ``aud``), its URL, its
RFC 9728 metadata URL, and the public URLs it answers on (421 otherwise).

Without configuration the identity is derived from the request's origin, as the Go hub does:
``https://hub.example.com`` + ``/.well-known/mercure``, so one hub reachable through several
names needs nothing set. ``resource_identifier`` pins one audience for every name (and, when it
ends with the hub path, the base of relative patterns too). ``public_urls`` restricts the
origins served: any other gets 421 before any identity is derived from it. ``local_origins``
(what ``skipfilter hub`` sets for a loopback listener told neither) are the hub's own names:
each gets its own identity, and any other ``Host`` the first one's, never its own. Origins
compare as lowercased scheme and host with the default port dropped, on both sides.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from urllib.parse import urlsplit, urlunsplit

from cachetools import LRUCache

from skipfilter.hub.frontends.v1.errors import RequestError
from skipfilter.hub.paths import HUB_PATH

#: RFC 9728 §3: the well-known segment inserted between the host and the resource's path.
METADATA_SEGMENT = "/.well-known/oauth-protected-resource"
DEFAULT_PORTS = {"http": 80, "https": 443}

#: A Host header: a DNS name or IPv4 address, or a bracketed IPv6 literal, then a port.
_HOST = re.compile(
    r"(?P<name>[A-Za-z0-9_](?:[A-Za-z0-9_.-]*[A-Za-z0-9_])?|\[[0-9A-Fa-f:.]+\])(?::(?P<port>\d{1,5}))?"
)


@dataclass(frozen=True, slots=True)
class HubIdentity:
    """The hub as one request sees it.

    ``resource``: the resource identifier tokens must name in ``aud``; ``hub_url``: the hub's
    URL, base of relative URL Patterns and topics; ``metadata_url``/``metadata_path``: where its
    protected resource metadata is (the path is what the HTTP layer routes).
    """

    resource: str
    hub_url: str
    metadata_url: str
    metadata_path: str


def origin_of(scheme: str, host: str) -> str:
    """``scheme://host`` normalized (lowercase, default port dropped).

    Raises RequestError 400 for a scheme other than http(s) or a malformed host (a forged
    ``Host`` must not end up in a resource identifier or a challenge).
    """
    scheme = scheme.lower()
    if scheme not in DEFAULT_PORTS:
        raise RequestError.bad_request(f"unsupported scheme {scheme[:20]!r}")
    found = _HOST.fullmatch(host)
    if found is None or int(found.group("port") or 0) > 65535:
        raise RequestError.bad_request(f"malformed Host {host[:100]!r}")
    name, port = found.group("name").lower(), found.group("port")
    if port and int(port) == DEFAULT_PORTS[scheme]:
        port = None
    return f"{scheme}://{name}" + (f":{int(port)}" if port else "")


def metadata_url(resource: str) -> str:
    """RFC 9728 §3.1: the metadata URL of a resource identifier.

    >>> metadata_url("https://hub.example.com/.well-known/mercure")
    'https://hub.example.com/.well-known/oauth-protected-resource/.well-known/mercure'
    >>> metadata_url("https://hub.example.com/")
    'https://hub.example.com/.well-known/oauth-protected-resource'
    """
    parts = urlsplit(resource)
    path = METADATA_SEGMENT + (parts.path if parts.path != "/" else "")
    return urlunsplit((parts.scheme, parts.netloc, path, parts.query, ""))


def check_resource_identifier(value: str) -> str:
    """``value`` if it can be a resource identifier: an absolute http(s) URL with a host and
    no fragment (RFC 9728 §1.2); ValueError naming the problem otherwise."""
    parts = urlsplit(value)
    if parts.scheme.lower() not in DEFAULT_PORTS or not parts.hostname:
        raise ValueError(f"resource identifier {value!r} must be an absolute http(s) URL")
    if parts.fragment or "#" in value:
        raise ValueError(f"resource identifier {value!r} must not have a fragment")
    return value


class IdentityPolicy:
    """Derives each request's ``HubIdentity``; see the module docstring."""

    def __init__(
        self,
        resource_identifier: str | None = None,
        public_urls: Iterable[str] = (),
        hub_path: str = HUB_PATH,
        local_origins: Iterable[str] = (),
    ) -> None:
        self.hub_path = hub_path
        self.pinned: HubIdentity | None = None
        self.local_origins = tuple(_public_origin(u) for u in local_origins)
        if resource_identifier is not None:
            resource = check_resource_identifier(resource_identifier)
            parts = urlsplit(resource)
            origin = origin_of(parts.scheme, parts.netloc)
            hub_url = resource if parts.path == hub_path else origin + hub_path
            url = metadata_url(resource)
            self.pinned = HubIdentity(resource, hub_url, url, urlsplit(url).path)
        self.public_origins = frozenset(_public_origin(u) for u in public_urls)
        self._known: LRUCache[tuple[str, str], HubIdentity] = LRUCache(256)

    def for_request(self, scheme: str, host: str) -> HubIdentity:
        """The identity for a request to ``scheme://host`` (``host`` as in the Host header).

        Raises RequestError 421 for an origin not among the public URLs, 400 for a bad host.
        Identities found are kept in a small LRU (every publish asks, with one or a few hosts).
        """
        key = (scheme, host)
        found = self._known.get(key)
        if found is None:
            found = self._known[key] = self._derive(scheme, host)
        return found

    def _derive(self, scheme: str, host: str) -> HubIdentity:
        origin = origin_of(scheme, host)
        if self.public_origins and origin not in self.public_origins:
            raise RequestError(
                421, f"this hub does not answer for {origin!r} (not one of its public URLs)"
            )
        if self.pinned is not None:
            return self.pinned
        if self.local_origins and origin not in self.local_origins:
            origin = self.local_origins[0]  # the hub's own name, never the request's Host
        resource = origin + self.hub_path
        url = metadata_url(resource)
        return HubIdentity(resource, resource, url, urlsplit(url).path)


def _public_origin(url: str) -> str:
    parts = urlsplit(url.strip())
    if not parts.scheme or not parts.netloc or parts.username is not None:
        raise ValueError(f"public URL {url!r} must be an absolute URL like https://hub.example.com")
    try:
        return origin_of(parts.scheme, parts.netloc)
    except RequestError as exc:
        raise ValueError(f"public URL {url!r}: {exc.description}") from None
