"""What a request head may be before the hub reads anything else: its size and field count
(431 past either), RFC 9112 §3.2's Host rules (400), and the answers the HTTP layer writes
itself when it refuses a request (431, 400, 408) before any route sees it.

``fast_paths.py`` applies these to every request on every path (native streams and publishes,
and the ASGI app), so one connection's head costs at most the limit, whatever it sends.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from uvicorn.protocols.http.httptools_impl import STATUS_LINE

_TEXT = b"content-type: text/plain; charset=utf-8\r\n"
#: RFC 3986's ``uri-host [ ":" port ]``: an IP literal, or a reg-name (IPv4 included) of
#: unreserved, percent-encoded and sub-delim characters; any digits for the port.
_HOST = re.compile(
    rb"(?:\[[0-9A-Fa-f:.]+\]|\[v[0-9A-Fa-f]+\.[A-Za-z0-9._~!$&'()*+,;=:-]+\]"
    rb"|(?:[A-Za-z0-9._~!$&'()*+,;=-]|%[0-9A-Fa-f]{2})*)(?::[0-9]*)?"
)


def host_problem(headers: Iterable[tuple[bytes, bytes]], http_version: str) -> str | None:
    """What breaks RFC 9112 §3.2 in a request's ``Host`` fields (None: nothing): more than
    one, none on HTTP/1.1, or a value that is not ``host[:port]``."""
    hosts = [value for name, value in headers if name == b"host"]
    if len(hosts) > 1:
        return f"{len(hosts)} Host header fields: a request carries exactly one (RFC 9112 §3.2)"
    if not hosts:
        if http_version == "1.0":
            return None
        return "no Host header field: an HTTP/1.1 request carries one (RFC 9112 §3.2)"
    if _HOST.fullmatch(hosts[0]) is None:
        shown = hosts[0][:100].decode("latin-1")
        return f"invalid Host header field {shown!r}: not host[:port] (RFC 9112 §3.2)"
    return None


def answer(status: int, message: str, default_headers: Iterable[tuple[bytes, bytes]] = ()) -> bytes:
    """A whole ``status`` response saying ``message`` (text), closing the connection: what
    uvicorn writes for a request it cannot parse, with the hub's reason."""
    return plain_response(status, (message + "\n").encode(), default_headers, close=True)


def plain_response(
    status: int, body: bytes, default_headers: Iterable[tuple[bytes, bytes]], close: bool
) -> bytes:
    """The bytes of a whole ``text/plain`` response: what the HTTP layer writes itself (a
    refusal here, a native publish's id in ``fast_publish.py``)."""
    content = [STATUS_LINE[status]]
    for name, value in default_headers:
        content.extend((name, b": ", value, b"\r\n"))
    content.append(b"content-length: %d\r\n" % len(body))
    content.append(_TEXT)
    if close:
        content.append(b"connection: close\r\n")
    content.append(b"\r\n")
    content.append(body)
    return b"".join(content)


def too_large(limit: int) -> str:
    """The 431's words for a head past ``limit`` bytes."""
    return (
        f"request head too large: more than {limit} bytes of request line and header fields "
        "(--max-head-bytes)"
    )


def too_many_fields(limit: int) -> str:
    """The 431's words for a head of more than ``limit`` fields."""
    return f"too many header fields: more than {limit} (--max-header-fields)"


def body_late(timeout: float) -> str:
    """The 408's words for a body not received within ``timeout`` seconds."""
    return (
        f"request body not received within {timeout:g} s of its head (--body-timeout); "
        "nothing was done with this request"
    )
