"""Freed memory handed back to the operating system, after compiled URL Patterns go.

A compiled URL Pattern is many small allocations (its components' Rust ``regex``
programs). Freed, glibc keeps their pages in its arenas: a hub that compiled a hostile
subscription's patterns stayed that big after it left (8 copies of a six-component pattern:
10.4 MB held, 9.8 MB still resident once freed, 0.1 MB after ``malloc_trim``). So once
streams close, when patterns worth :data:`TRIM_AFTER` units or more were freed since the
last trim, the hub calls ``malloc_trim(0)`` a second later, in a thread (ctypes releases
the GIL for the call: the event loop goes on), at most once a second. Where the C library
is not glibc, nothing is done.
"""

from __future__ import annotations

import asyncio
import ctypes
import ctypes.util
import logging
from collections.abc import Callable
from typing import Final

from skipfilter.selectors.urlpattern.compile import freed_units

__all__ = ["TRIM_AFTER", "HeapTrimmer"]

log = logging.getLogger("skipfilter.hub")

#: Units of compiled patterns (about 300 bytes each) freed before a trim is worth it.
TRIM_AFTER: Final = 2_000
_DELAY: Final = 1.0  # seconds after a close: the streams of one burst of closes go together


def _malloc_trim() -> Callable[[int], int] | None:
    """glibc's ``malloc_trim``, or None elsewhere."""
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        trim: Callable[[int], int] = libc.malloc_trim
    except (OSError, AttributeError):
        return None
    return trim


_TRIM: Final = _malloc_trim()


class HeapTrimmer:
    """Trims the heap after compiled patterns were freed (see module). Call :meth:`closed`
    from the event loop when a stream closes; it only schedules."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop
        self._trimmed_at = freed_units()
        self._pending = False  # a check (or its trim) is scheduled or running
        self._again = False  # a stream closed since that check began
        self.trims = 0

    def closed(self) -> None:
        """A stream closed: check a second later whether patterns worth a trim were freed."""
        if _TRIM is None:
            return
        self._again = True
        if not self._pending:
            self._pending = True
            self._loop.call_later(_DELAY, self._check)

    def _check(self) -> None:
        self._again = False
        freed = freed_units()
        if freed - self._trimmed_at < TRIM_AFTER:
            self._pending = False
            return
        self._trimmed_at = freed
        self._loop.run_in_executor(None, _trim).add_done_callback(self._done)

    def _done(self, future: asyncio.Future[None]) -> None:
        self._pending = False
        self.trims += 1
        if future.exception() is not None:
            log.warning("malloc_trim failed: %s", future.exception())
        if self._again:  # closes during the trim: look again later
            self.closed()


def _trim() -> None:
    assert _TRIM is not None
    _TRIM(0)
