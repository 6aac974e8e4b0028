"""Helpers for the client tests: hubs in both protocol modes, and a subscription read in a
background thread (what a worker process does with ``for update in subscribe(...)``)."""

from __future__ import annotations

import queue
import threading
from pathlib import Path
from typing import Any

from skipfilter.client import Subscription, Update, subscribe
from skipfilter.hub import HubSettings
from tests.hub.hubtest import HUB, Server
from tests.hub.v1test import v1_settings

#: The hub modes a client meets: Mercure 1.0, and 1.0 beside 0.x (compatibility mode).
MODES = ("1.0", "compat")


def hub_settings(tmp_path: Path, mode: str, **changes: Any) -> HubSettings:
    """A 1.0 hub, or the same in compatibility mode (0.x tokens without ``iss`` accepted)."""
    if mode == "compat":
        changes.setdefault("protocol_version_compatibility", 8)
    return v1_settings(tmp_path, **changes)


def hub_url(server: Server) -> str:
    return server.url + HUB


class Reader:
    """Iterates ``subscribe(...)`` in a thread; updates (or the error raised) in a queue."""

    def __init__(self, url: str, *match: str, **kw: Any) -> None:
        kw.setdefault("reconnect_delay", 0.05)
        self.subscription: Subscription = subscribe(url, list(match), **kw)
        self.items: queue.Queue[Update | BaseException] = queue.Queue()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        try:
            for update in self.subscription:
                self.items.put(update)
        except BaseException as exc:  # handed to the test
            self.items.put(exc)

    def next(self, timeout: float = 10) -> Update:
        item = self.items.get(timeout=timeout)
        if isinstance(item, BaseException):
            raise item
        return item

    def take(self, count: int, timeout: float = 10) -> list[Update]:
        return [self.next(timeout) for _ in range(count)]

    def error(self, timeout: float = 10) -> BaseException:
        item = self.items.get(timeout=timeout)
        assert isinstance(item, BaseException), f"expected an error, got {item!r}"
        return item

    def empty(self) -> bool:
        return self.items.empty()

    def close(self) -> None:
        self.subscription.close()
        self.thread.join(5)
