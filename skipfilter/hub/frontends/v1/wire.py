"""What the Mercure 1.0 wire allows: protocol strings, and forms decoded the WHATWG way.

Topics, matcher values and the ``id``/``type`` fields are UTF-8 without C0 (U+0000-001F), DEL,
C1 (U+0080-009F) or Unicode format characters (category ``Cf``: bidi and zero-width controls),
which are invisible and enable spoofing (draft-08 §2, §3, §5). Forms are decoded to bytes first,
so invalid UTF-8 is seen (``urllib``'s default would hide it behind U+FFFD).
"""

from __future__ import annotations

import re
import unicodedata
from urllib.parse import unquote_to_bytes

_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\ud800-\udfff]")

#: A form as name/value pairs of raw (percent-decoded) bytes, in request order.
RawPairs = list[tuple[bytes, bytes]]


def string_problem(value: str) -> str | None:
    """Why ``value`` is not a valid protocol string (None when it is).

    Runtime complexity: O(len(value)).

    >>> string_problem("https://example.com/books/1") is None
    True
    >>> string_problem("a\\u200bb")
    'format character U+200B at 1'
    """
    control = _CONTROL.search(value)
    if control:
        code = ord(control.group())
        kind = "lone surrogate" if code >= 0xD800 else "control character"
        return f"{kind} U+{code:04X} at {control.start()}"
    if not value.isascii():  # every format character is above U+00AC
        for i, char in enumerate(value):
            if char >= "\xad" and unicodedata.category(char) == "Cf":
                return f"format character U+{ord(char):04X} at {i}"
    return None


def parse_urlencoded(data: bytes | str) -> RawPairs:
    """``application/x-www-form-urlencoded`` parsing (WHATWG URL §5.1), to raw byte pairs.

    Split on ``&``; the first ``=`` separates name and value (none: an empty value); ``+`` is a
    space; ``%XX`` is a byte (a ``%`` without two hex digits stays). Empty sequences are skipped.
    Runtime complexity: O(len(data)).

    >>> parse_urlencoded(b"match=a+b&match_urlpattern=%2Fx%3Aid&flag")
    [(b'match', b'a b'), (b'match_urlpattern', b'/x:id'), (b'flag', b'')]
    """
    raw = data.encode("utf-8", "surrogatepass") if isinstance(data, str) else data
    pairs: RawPairs = []
    for sequence in raw.split(b"&"):
        if not sequence:
            continue
        name, _, value = sequence.partition(b"=")
        pairs.append((_decode(name), _decode(value)))
    return pairs


def _decode(part: bytes) -> bytes:
    if b"%" not in part:  # nothing to unquote (most names, many values)
        return part.replace(b"+", b" ")
    return unquote_to_bytes(part.replace(b"+", b" "))


def utf8(value: bytes) -> str | None:
    """``value`` decoded as UTF-8, or None when it is not valid UTF-8."""
    try:
        return value.decode("utf-8")
    except UnicodeDecodeError:
        return None
