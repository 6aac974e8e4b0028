"""An incremental ``text/event-stream`` parser that follows the HTML standard's rules
(§9.2.6 "Interpreting an event stream"): bytes in, events out, whatever the chunking.

UTF-8 with one leading BOM dropped; lines end in CRLF, LF or CR (a CR at the end of one chunk
and an LF at the start of the next are one line end); ``:`` starts a comment; a field without
a colon has an empty value; one space after the colon is dropped; ``data`` lines join with LF;
an ``id`` containing NUL is ignored; ``retry`` counts only when it is all ASCII digits; an
empty line dispatches (nothing when no data was given, but the id still counts), and an event
the stream ends in the middle of is dropped.
"""

from __future__ import annotations

import codecs
import re
from typing import NamedTuple

_LINE_END = re.compile(r"\r\n|\r|\n")


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
    in the bytes fed; memory: one unfinished line and one unfinished event. Not thread-safe.
    """

    def __init__(self, last_event_id: str = "") -> None:
        self._decoder = codecs.getincrementaldecoder("utf-8-sig")("replace")
        self._pending = ""  # the unfinished line
        self._after_cr = False  # the last chunk ended in CR: an LF next is part of that end
        self._data: list[str] = []
        self._type = ""
        self._id_buffer = last_event_id  # a reconnection carries it on
        self.last_event_id = last_event_id
        self.retry: int | None = None

    def feed(self, chunk: bytes) -> list[Event]:
        """The events ``chunk`` completes, in order."""
        text = self._decoder.decode(chunk)
        if not text:
            return []
        if self._after_cr:
            self._after_cr = False
            if text[0] == "\n":
                text = text[1:]
        text = self._pending + text
        if "\r" in text:
            lines = _LINE_END.split(text)
            self._after_cr = text.endswith("\r")
        else:
            lines = text.split("\n")
        self._pending = lines.pop()
        events: list[Event] = []
        data = self._data
        for line in lines:  # the hot loop: one pass, no call per line
            if not line:
                self.last_event_id = self._id_buffer
                if data:
                    events.append(Event("\n".join(data), self._type or "message", self._id_buffer))
                    data.clear()
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
            elif name == "id":
                if "\0" not in value:
                    self._id_buffer = value
            elif name == "event":
                self._type = value
            elif name == "retry" and value.isascii() and value.isdigit():
                self.retry = int(value)
        return events
