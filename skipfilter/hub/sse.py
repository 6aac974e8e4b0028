"""Server-sent events wire format, and the checks that keep publisher input from breaking it.

An ``id`` or ``type`` holding a line break would let a publisher forge extra SSE fields, so
they are rejected at publish time; ``data`` is split into one ``data:`` line per line instead.
"""

from __future__ import annotations

import re

from skipfilter.hub.refusal import HubRefusal

_LINE_BREAK = re.compile(r"\r\n|\r|\n")
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
#: The largest ``retry`` accepted: Mercure's hub parses it as an unsigned 64-bit integer.
MAX_RETRY = 2**64 - 1
#: The ``Last-Event-ID`` value meaning "everything the hub still has": never an update's id.
EARLIEST = "earliest"

#: A comment line: keeps proxies from timing out an idle stream, ignored by EventSource.
HEARTBEAT = b":\n"


class InvalidField(HubRefusal, ValueError):
    """A publish form field that cannot be sent as SSE; the message names the field (400)."""

    def __init__(self, name: str, message: str) -> None:
        super().__init__(f"invalid {name!r}: {message}")
        self.field = name


def check_id(value: str) -> str:
    """Return ``value`` if it can be an update id.

    Besides the spec's rules (no CR, LF or NUL, not starting with ``#``, not the reserved
    ``earliest``), an id must be usable as a ``Last-Event-ID`` header value: no control
    character, no space at either end (HTTP strips them, and clients would resume from an
    id the hub never issued).
    """
    _check_single_line("id", value)
    if value.startswith("#"):
        raise InvalidField("id", "must not start with '#' (reserved for hub-generated ids)")
    if not value:
        raise InvalidField("id", "must not be empty")
    if value == EARLIEST:
        raise InvalidField(
            "id", f"{EARLIEST!r} is reserved: as a Last-Event-ID it asks for the whole history"
        )
    control = _CONTROL.search(value)
    if control:
        raise InvalidField(
            "id", f"must not contain control character {control.group()!r} at {control.start()}"
        )
    if value != value.strip(" \t"):
        raise InvalidField("id", "must not start or end with whitespace")
    return value


def header_safe(value: str) -> bool:
    """Whether ``value`` can be sent as an HTTP header value unchanged."""
    return bool(value) and not _CONTROL.search(value) and value == value.strip(" \t")


def check_topic(value: str) -> str:
    """Return ``value`` if it can be an update topic: no control characters."""
    control = _CONTROL.search(value)
    if control:
        raise InvalidField(
            "topic",
            f"{value[:80]!r} contains control character {control.group()!r} at {control.start()}",
        )
    return value


def check_type(value: str) -> str:
    """Return ``value`` if it can be an SSE event type (no CR, LF or NUL)."""
    _check_single_line("type", value)
    return value


def check_retry(value: str) -> int:
    """Parse the reconnection delay in milliseconds: ASCII digits, at most 2**64 - 1."""
    if not value or not value.isascii() or not value.isdigit():
        raise InvalidField(
            "retry", f"must be a non-negative integer of ASCII digits, got {value[:40]!r}"
        )
    digits = value.lstrip("0") or "0"
    if len(digits) > len(str(MAX_RETRY)):
        raise InvalidField(
            "retry", f"must be at most {MAX_RETRY} (milliseconds), got {value[:40]!r}"
        )
    return check_retry_value(int(digits))


def check_retry_value(value: int) -> int:
    """Return ``value`` if it is a reconnection delay ``retry`` may carry (0 to 2**64 - 1)."""
    if not 0 <= value <= MAX_RETRY:
        raise InvalidField(
            "retry", f"must be between 0 and {MAX_RETRY} (milliseconds), got {value}"
        )
    return value


def _check_single_line(name: str, value: str) -> None:
    for char, label in (("\r", "CR"), ("\n", "LF"), ("\0", "NUL")):
        if char in value:
            raise InvalidField(name, f"must not contain {label}")


def format_event(
    data: str, id: str | None = None, type: str | None = None, retry: int | None = None
) -> bytes:
    """Encode one event: ``event``, ``retry``, ``id`` and one ``data:`` line per line of data.

    >>> format_event("a\\nb", id="1", type="t")
    b'event: t\\nid: 1\\ndata: a\\ndata: b\\n\\n'
    """
    parts: list[str] = []
    if type:
        parts.append(f"event: {type}\n")
    if retry is not None:
        parts.append(f"retry: {retry}\n")
    if id is not None:
        parts.append(f"id: {id}\n")
    if "\n" in data or "\r" in data:
        parts.extend(f"data: {line}\n" for line in _LINE_BREAK.split(data))
    else:  # one line (most payloads): no split, no generator
        parts.append(f"data: {data}\n")
    parts.append("\n")
    return "".join(parts).encode()


def comment(text: str) -> bytes:
    """A comment line (never shown to EventSource listeners); line breaks become spaces.

    No blank line follows it: a blank line dispatches an event, and a client that keeps
    the last event id across events (httpx-sse does) would see a phantom copy of the last
    update when a stream ends with a comment saying why.
    """
    return f": {_LINE_BREAK.sub(' ', text)}\n".encode()
