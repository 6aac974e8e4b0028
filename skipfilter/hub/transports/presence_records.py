"""Records a presence cannot use (another program's, a corrupt one): both presences (Redis's
nodes, the local workers') skip them and say so once per record, never failing a listing."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from skipfilter.hub.update import Update

log = logging.getLogger("skipfilter.hub")


class SkippedRecords:
    """Warns once per (owner, field) about a skipped record; ``owner`` names what holds
    records ("node", "worker") in the warning."""

    def __init__(self, owner: str) -> None:
        self._owner = owner
        self._warned: set[tuple[str, str]] = set()

    def warn(self, who: str, field: str, why: str) -> None:
        if (who, field) not in self._warned:
            self._warned.add((who, field))
            log.warning("presence: skipped a record of %s %r: %s", self._owner, who[:80], why)

    def events(
        self,
        who: str,
        make_update: Callable[[dict[str, Any]], Update],
        docs: list[dict[str, Any]],
    ) -> list[Update]:
        """The subscription events of ``docs`` (those the hub refuses are skipped)."""
        updates = []
        for doc in docs:
            try:
                updates.append(make_update(doc))
            except ValueError as exc:
                self.warn(who, str(doc.get("id"))[:200], str(exc))
        return updates
