"""Finding a resource's hub (Mercure draft-08 §3): its ``Link: <...>; rel="mercure"`` headers,
resolved against the resource's URL, with the ``rel="self"`` topic and the ``last-event-id``
a subscriber may resume from."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import httpx

from skipfilter.client.errors import DiscoveryFailed

MERCURE_REL = "mercure"


@dataclass(frozen=True, slots=True)
class Discovery:
    """What a resource says about its updates: ``hubs`` (the first is the one to use),
    its canonical ``topic`` (``rel="self"``, else the URL read), and the ``last_event_id``
    the hub link carries (draft-08 §3, for subscribing without missing an update)."""

    hubs: tuple[str, ...]
    topic: str
    last_event_id: str | None = None

    @property
    def hub(self) -> str:
        return self.hubs[0]


def links(header: str) -> Iterator[tuple[str, dict[str, str]]]:
    """RFC 8288 links of one ``Link`` value: ``(target, params)``, params' names
    lowercased, ``rel`` split into its space-separated values by the caller."""
    i, n = 0, len(header)
    while i < n:
        start = header.find("<", i)
        if start < 0:
            return
        end = header.find(">", start)
        if end < 0:
            return
        target, i = header[start + 1 : end], end + 1
        params: dict[str, str] = {}
        while i < n and header[i] != ",":
            while i < n and header[i] in " \t;":
                i += 1
            name_start = i
            while i < n and header[i] not in "=;,":
                i += 1
            name = header[name_start:i].strip().lower()
            value = ""
            if i < n and header[i] == "=":
                i += 1
                while i < n and header[i] in " \t":
                    i += 1
                if i < n and header[i] == '"':
                    i += 1
                    chars = []
                    while i < n and header[i] != '"':
                        if header[i] == "\\" and i + 1 < n:
                            i += 1
                        chars.append(header[i])
                        i += 1
                    i += 1
                    value = "".join(chars)
                else:
                    value_start = i
                    while i < n and header[i] not in ";,":
                        i += 1
                    value = header[value_start:i].strip()
            if name:
                params.setdefault(name, value)
        i += 1
        yield target, params


def read_links(response: httpx.Response) -> Discovery:
    """The Discovery a response's ``Link`` headers make, or DiscoveryFailed."""
    base = response.url
    hubs: list[str] = []
    topic, last_event_id = str(base), None
    self_found = False
    for header in response.headers.get_list("link"):
        for target, params in links(header):
            rels = params.get("rel", "").lower().split()
            url = str(base.join(target))
            if MERCURE_REL in rels:
                hubs.append(url)
                if last_event_id is None and "last-event-id" in params:
                    last_event_id = params["last-event-id"]
            if "self" in rels and not self_found:
                topic, self_found = url, True
    if not hubs:
        raise DiscoveryFailed(f'{base} names no hub (no Link header with rel="mercure")')
    return Discovery(tuple(dict.fromkeys(hubs)), topic, last_event_id)


def discover(url: str, *, client: httpx.Client | None = None, **kw: Any) -> Discovery:
    """GET ``url`` and read its hub links (extra keywords go to the request: headers...).
    Raises DiscoveryFailed when it cannot be read or names no hub."""
    own = client is None
    http = client or httpx.Client(timeout=10, follow_redirects=True)
    try:
        response = http.get(url, **kw)
    except httpx.HTTPError as exc:
        raise DiscoveryFailed(f"cannot read {url}: {exc}") from exc
    finally:
        if own:
            http.close()
    return _checked(response)


async def discover_async(
    url: str, *, client: httpx.AsyncClient | None = None, **kw: Any
) -> Discovery:
    """:func:`discover` for asyncio."""
    own = client is None
    http = client or httpx.AsyncClient(timeout=10, follow_redirects=True)
    try:
        response = await http.get(url, **kw)
    except httpx.HTTPError as exc:
        raise DiscoveryFailed(f"cannot read {url}: {exc}") from exc
    finally:
        if own:
            await http.aclose()
    return _checked(response)


def _checked(response: httpx.Response) -> Discovery:
    if response.status_code >= 400:
        raise DiscoveryFailed(f"{response.url} answered {response.status_code}")
    return read_links(response)
