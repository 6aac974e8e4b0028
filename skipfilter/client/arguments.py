"""The checks on what a program passes the client: a wrong type is a TypeError naming the
argument, raised before anything is sent (``str(value)`` would put Python's repr on the wire:
``{'a': 1}`` instead of JSON, ``None`` as text)."""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["optional_text", "text", "text_list"]

_SHOWN = 60  # characters of a refused value a message quotes


def _got(value: object) -> str:
    return f"got {type(value).__name__}: {repr(value)[:_SHOWN]}"


def text(value: object, what: str, hint: str = "") -> str:
    """``value`` if it is a ``str``, else TypeError naming ``what``."""
    if isinstance(value, str):
        return value
    raise TypeError(f"{what} must be text (str), {_got(value)}{hint}")


def optional_text(value: object, what: str) -> str | None:
    """``value`` if it is a ``str`` or None, else TypeError naming ``what``."""
    if value is None or isinstance(value, str):
        return value
    raise TypeError(f"{what} must be a str or None, {_got(value)}")


def text_list(value: object, what: str, single: bool) -> list[str]:
    """``value`` as a list of ``str``: a list or tuple of them, or (``single``) one string
    alone. TypeError naming ``what`` or ``what[i]`` otherwise."""
    if isinstance(value, str):
        if single:
            return [value]
        raise TypeError(f"{what} must be a list of str, not a single string")
    if not isinstance(value, Sequence) or isinstance(value, bytes | bytearray):
        raise TypeError(f"{what} must be a list of str, {_got(value)}")
    for i, item in enumerate(value):
        if not isinstance(item, str):
            raise TypeError(f"{what}[{i}] must be a str, {_got(item)}")
    return list(value)
