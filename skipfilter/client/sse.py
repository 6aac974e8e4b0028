"""An incremental ``text/event-stream`` parser that follows the HTML standard's rules
(§9.2.6 "Interpreting an event stream"): bytes in, events out, whatever the chunking.

UTF-8 with one leading BOM dropped; lines end in CRLF, LF or CR (a CR at the end of one chunk
and an LF at the start of the next are one line end); ``:`` starts a comment; a field without
a colon has an empty value; one space after the colon is dropped; ``data`` lines join with LF;
an ``id`` containing NUL is ignored; ``retry`` counts only when it is all ASCII digits; an
empty line dispatches (nothing when no data was given, but the id still counts), and an event
the stream ends in the middle of is dropped.

Limits the standard does not set, so that no stream can cost unbounded memory: a line (the
unfinished one included) of more than ``max_line`` characters, or an event whose ``data``
lines add up to more than ``max_event``, raises :class:`~skipfilter.client.errors.OverLimit`;
a ``retry`` of more than 9 significant digits reads as ``RETRY_CAP`` ms (no huge integer).
"""

from __future__ import annotations

import codecs
import re
from typing import NamedTuple

from skipfilter.client.errors import OverLimit

_LINE_END = re.compile(r"\r\n|\r|\n")
#: Default limits, in characters (decoded): one line, and one event's data.
MAX_LINE = 1 << 22
MAX_EVENT = 1 << 24
#: What a ``retry`` of more than 9 significant digits reads as (ms: about 11.6 days).
RETRY_CAP = 10**9


class Event(NamedTuple):
    """One dispatched event: its ``type`` (``message`` by default), ``data``, and ``id``, the
    stream's last event id when it was dispatched (``""`` before any). A named tuple: made
    once per update, it must cost little."""

    data: str
    type: str = "message"
    id: str = ""


class EventStreamParser:
    """Feed it bytes as they arrive; it returns the events they complete.

    ``last_event_id`` is what a reconnecting client sends back (a new connection's parser
    starts from the old one's); ``retry`` the reconnection
    delay in milliseconds the stream asked for (None: not asked). Runtime complexity: O(n)
    in the bytes fed, however the lines are cut into chunks (only a chunk's own text is
    searched for line ends); memory: one unfinished line (at most ``max_line`` characters)
    and one unfinished event (``max_event``). Past either, :class:`OverLimit` is raised and
    the parser is spent. Not thread-safe.
    """

    def __init__(
        self, last_event_id: str = "", *, max_line: int = MAX_LINE, max_event: int = MAX_EVENT
    ) -> None:
        self._decoder = codecs.getincrementaldecoder("utf-8-sig")("replace")
        self._pending: list[str] = []  # the unfinished line, in pieces (joined once it ends)
        self._pending_size = 0
        self._after_cr = False  # the last chunk ended in CR: an LF next is part of that end
        self._data: list[str] = []
        self._data_size = 0
        self._type = ""
        self._id_buffer = last_event_id  # a reconnection carries it on
        self.last_event_id = last_event_id
        self.retry: int | None = None
        self.max_line = max_line
        self.max_event = max_event

    def feed(self, chunk: bytes) -> list[Event]:
        """The events ``chunk`` completes, in order; OverLimit past a limit."""
        text = self._decoder.decode(chunk)
        if self._after_cr and text:
            self._after_cr = False
            if text[0] == "\n":
                text = text[1:]
        if not text:
            return []
        if "\r" in text:
            lines = _LINE_END.split(text)
            self._after_cr = text.endswith("\r")
        else:
            lines = text.split("\n")
        tail = lines.pop()
        if lines:
            if self._pending:  # the line the last chunks began ends here
                self._pending.append(lines[0])
                lines[0] = "".join(self._pending)
                self._pending.clear()
                self._pending_size = 0
                if len(lines[0]) > self.max_line:
                    self._too_long()
            if len(text) > self.max_line and any(len(line) > self.max_line for line in lines):
                self._too_long()
        if tail:
            self._pending.append(tail)
            self._pending_size += len(tail)
            if self._pending_size > self.max_line:
                self._too_long()
        if not lines:
            return []
        events: list[Event] = []
        data = self._data
        for line in lines:  # the hot loop: one pass, no call per line
            if not line:
                self.last_event_id = self._id_buffer
                if data:
                    events.append(Event("\n".join(data), self._type or "message", self._id_buffer))
                    data.clear()
                    self._data_size = 0
                self._type = ""
                continue
            colon = line.find(":")
            if colon == 0:
                continue  # a comment
            if colon < 0:
                name, value = line, ""
            else:
                name = line[:colon]
                value = (
                    line[colon + 2 :] if line[colon + 1 : colon + 2] == " " else line[colon + 1 :]
                )
            if name == "data":
                data.append(value)
                self._data_size += len(value) + 1
                if self._data_size > self.max_event:
                    raise OverLimit(
                        "event",
                        self.max_event,
                        f"an event's data is longer than {self.max_event} characters",
                    )
            elif name == "id":
                if "\0" not in value:
                    self._id_buffer = value
            elif name == "event":
                self._type = value
            elif name == "retry" and value.isascii() and value.isdigit():
                digits = value.lstrip("0")
                self.retry = int(digits or "0") if len(digits) <= 9 else RETRY_CAP
        return events

    def _too_long(self) -> None:
        raise OverLimit(
            "line", self.max_line, f"a stream line is longer than {self.max_line} characters"
        )
