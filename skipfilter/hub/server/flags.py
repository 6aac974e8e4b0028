"""How the hub's and ``skipfilter token``'s flags read and show: Mercure's durations (``40s``,
``5m``, ``1h30m``, ``500ms``; plain seconds too) and help that shows each flag's default.

The Go hub's configuration takes Go/Caddy durations, so a Mercure user's values work here as
written; a bare number stays seconds, as these flags always took.
"""

from __future__ import annotations

import argparse
import re
from collections.abc import Callable

__all__ = ["DefaultsFormatter", "duration", "parse_duration", "show_duration"]

#: Seconds per unit, as Go's time.ParseDuration (and Caddy's ``d``) spell them.
_UNITS = {
    "ns": 1e-9,
    "us": 1e-6,
    "µs": 1e-6,
    "μs": 1e-6,
    "ms": 1e-3,
    "s": 1.0,
    "m": 60.0,
    "h": 3600.0,
    "d": 86400.0,
}
_PART = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|μs|ms|s|m|h|d)")
_NUMBER = re.compile(r"\d+(?:\.\d*)?|\.\d+")


def parse_duration(text: str) -> float:
    """Seconds in ``text``: a Go duration (``1h30m``, ``500ms``, ``-5s``) or a plain number of
    seconds. ValueError saying what is accepted otherwise."""
    value = text.strip()
    sign = -1.0 if value.startswith("-") else 1.0
    body = value.lstrip("+-") if value[:1] in "+-" else value
    if _NUMBER.fullmatch(body):
        return sign * float(body)
    parts = _PART.findall(body)
    if not body or "".join(n + u for n, u in parts) != body:
        raise ValueError(
            f"{text!r} is not a duration: write seconds (40, 0.5) or Go's units "
            "(40s, 5m, 1h30m, 500ms, 2d)"
        )
    return sign * sum(float(n) * _UNITS[u] for n, u in parts)


def show_duration(seconds: float) -> str:
    """``seconds`` as the shortest duration text that reads back to it (``40s``, ``10m``)."""
    for unit, size in (("d", 86400.0), ("h", 3600.0), ("m", 60.0)):
        if seconds >= size and seconds % size == 0:
            return f"{_plain(seconds / size)}{unit}"
    if 0 < seconds < 1:
        return f"{_plain(seconds * 1000)}ms"
    return f"{_plain(seconds)}s"


def _plain(number: float) -> str:
    """``number`` without an exponent (``1e+06`` is no duration) nor trailing zeros."""
    return f"{number:.9f}".rstrip("0").rstrip(".")


def duration(*, minimum: float = 0.0, positive: bool = False) -> Callable[[str], float]:
    """An argparse ``type``: a duration at least ``minimum`` (above 0 with ``positive``);
    argparse names the flag in front of the error."""

    def read(text: str) -> float:
        try:
            seconds = parse_duration(text)
        except ValueError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None
        if positive and seconds <= 0:
            raise argparse.ArgumentTypeError(f"{text!r}: must be more than 0")
        if seconds < minimum:
            raise argparse.ArgumentTypeError(
                f"{text!r}: must be at least {show_duration(minimum)}"
                + (" (0 turns it off)" if minimum == 0 else "")
            )
        return seconds

    read.__name__ = "duration"  # argparse says "invalid duration value" when it has to
    return read


class DefaultsFormatter(argparse.HelpFormatter):
    """Help that ends each flag's line with its default, unless the flag has none worth
    saying (None, False, empty) or its help already says it."""

    def _get_help_string(self, action: argparse.Action) -> str | None:
        text = action.help or ""
        default = action.default
        if (
            "%(default)" in text
            or "default" in text.lower()
            or default in (None, False, "", [], argparse.SUPPRESS)
            or not action.option_strings
        ):
            return text
        if getattr(action.type, "__name__", "") == "duration" and isinstance(default, float):
            return f"{text} (default {show_duration(default)})"
        return f"{text} (default %(default)s)"
