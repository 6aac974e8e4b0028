"""TEMPORARY brute-force stand-in for skipfilter.index.TopicIndex until it lands."""

from __future__ import annotations

import re
import threading
from collections.abc import Iterable, Sequence
from typing import Any

from pyroaring import BitMap64


def matches(selector: str, topic: str) -> bool:
    if selector in ("*", topic):
        return True
    if "{" not in selector:
        return False
    parts = re.split(r"(\{[^}]*\})", selector)
    regex = "".join("[^/]+" if p.startswith("{") else re.escape(p) for p in parts)
    return re.fullmatch(regex, topic) is not None


class FakeIndex:
    def __init__(self) -> None:
        self._subs: dict[int, tuple[tuple[str, ...], tuple[str, ...] | None, Any]] = {}
        self._next = 0
        self._lock = threading.Lock()

    def subscribe(
        self, selectors: Iterable[str], allowed: Iterable[str] | None = None, payload: object = None
    ) -> int:
        with self._lock:
            self._next += 1
            self._subs[self._next] = (
                tuple(selectors),
                None if allowed is None else tuple(allowed),
                payload,
            )
            return self._next

    def unsubscribe(self, sid: int) -> bool:
        with self._lock:
            return self._subs.pop(sid, None) is not None

    def match(self, topics: Sequence[str], private: bool = False) -> BitMap64:
        out = BitMap64()
        with self._lock:
            for sid, (sels, allowed, _) in self._subs.items():
                if not any(matches(s, t) for s in sels for t in topics):
                    continue
                if private and not (
                    allowed and any(matches(a, t) for a in allowed for t in topics)
                ):
                    continue
                out.add(sid)
        return out

    def __len__(self) -> int:
        return len(self._subs)
