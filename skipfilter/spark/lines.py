"""One line of a JSON-lines input, as raw bytes: decoded, parsed, or named as that row's error.

Spark's text reader splits lines without decoding them, so the readers hand each line
over as bytes (the text column cast to binary is the file's bytes, unchanged). A line
that is not UTF-8 is then one bad row -- its file, its id when the rest of the line
still parses, the offending byte and offset -- instead of a decode error that kills
the whole job.

Contents: :func:`parse_line`, :func:`as_text`.
"""

from __future__ import annotations

import json
from typing import Any

__all__ = ["as_text", "parse_line"]


def parse_line(raw: str | bytes | None) -> tuple[Any, str | None, str] | None:
    """None for a blank line, else ``(row, problem, record)``: the parsed object (None when
    the line does not parse), what is wrong with the line itself (or None) and its text.

    >>> parse_line(b'{"id": "m1", "topics": ["/\\xff"]}')[1]
    'not UTF-8: byte 0xff at offset 26 (invalid start byte)'
    >>> parse_line(b"  ") is None
    True
    """
    if raw is None:
        return None
    if isinstance(raw, bytes):
        if not raw.strip():
            return None
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as error:
            problem = (
                f"not UTF-8: byte 0x{raw[error.start]:02x} at offset {error.start} ({error.reason})"
            )
            return _lenient(raw), problem, raw.decode("utf-8", "backslashreplace")
    else:
        text = raw
    if not text or text.isspace():
        return None
    try:
        row = json.loads(text)
    except ValueError as error:
        return None, f"invalid JSON: {error}", text
    if not isinstance(row, dict):
        return None, "row is not a JSON object", text
    return row, None, text


def _lenient(raw: bytes) -> Any:
    """The line parsed with bad bytes replaced, so its report can name the row's id."""
    try:
        row = json.loads(raw.decode("utf-8", "replace"))
    except ValueError:
        return None
    return row if isinstance(row, dict) else None


def as_text(value: object) -> str | None:
    """A carried JSON field as a string column: a string as it is, anything else (numbers,
    booleans, objects) as its JSON text, null as null."""
    if value is None or isinstance(value, str):
        return value
    return json.dumps(value, sort_keys=True)
