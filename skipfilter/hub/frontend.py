"""The protocol seam: what one version of Mercure turns a request into, in the hub's terms.

A ``Frontend`` reads a subscribe request, a publish request and the subscriptions API's
authorization the way its protocol version says (where the token is, what its claim
grants, which parameters carry the topics and the resume point), and says no in that
version's words. Below it the core (``session``, ``hub``, fan-out, streams) sees only
``SubscriptionTerms``, ``Update`` and ``Claims``: it knows no protocol version. The app
picks the front end from ``HubSettings.protocol_version``; Mercure 0.x (``v0.py``) is the
only one wired today.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from starlette.requests import Request
from starlette.responses import Response

from skipfilter.hub.auth import Claims
from skipfilter.hub.metrics import Metrics
from skipfilter.hub.update import Update


@dataclass(frozen=True, slots=True)
class SubscriptionTerms:
    """A subscribe request in the hub's terms: what to match, what the subscriber may see,
    where it resumes (``last_event_id``: None for no replay, ``EARLIEST`` for all)."""

    selectors: tuple[str, ...]
    grants: Claims | None
    last_event_id: str | None
    origin: str | None


class Frontend(Protocol):
    """One protocol version's reading of requests; raises one of ``errors`` to refuse."""

    #: The version this front end speaks (the value of ``HubSettings.protocol_version``).
    version: str
    #: The exceptions its methods raise to refuse a request (``refuse`` answers them).
    errors: tuple[type[Exception], ...]

    async def subscription(self, request: Request) -> SubscriptionTerms:
        """The terms of a subscribe request, authorized (its selectors still unchecked
        against the hub's limits: the core does that)."""
        ...

    def resume_headers(self, resume_id: str) -> dict[str, str]:
        """The stream response's headers telling the client where it resumes from."""
        ...

    async def publication(self, request: Request) -> Update:
        """The update a publish request asks for, authorized and validated."""
        ...

    async def authorize_subscriptions(self, request: Request, path: str) -> None:
        """Refuse a request to the subscriptions API at ``path`` its token does not cover."""
        ...

    def refuse(self, what: str, metrics: Metrics, exc: Exception) -> Response:
        """The response refusing ``exc`` (one of ``errors`` or the core's), counted under
        ``what``, in this version's words."""
        ...
