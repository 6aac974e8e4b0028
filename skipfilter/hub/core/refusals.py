"""How the hub says no over HTTP: the refusals its core raises, whatever the protocol
version, and the 4xx/5xx response any ``HubRefusal`` becomes (counted in the metrics under
what was refused).

A refusal carries its own status, text and challenge (``hub/refusal.py``): ``refuse`` reads
them, so every front end's refusals are answered the same way, with no translation.
"""

from __future__ import annotations

from collections.abc import Mapping

from starlette.responses import PlainTextResponse, Response

from skipfilter.hub.core.metrics import Metrics
from skipfilter.hub.refusal import HubRefusal


class BadRequest(HubRefusal):
    """400 with a message naming the bad part."""


class Forbidden(HubRefusal):
    """403 with a message naming what is not allowed (no challenge: not about the token)."""

    status = 403


class TooLarge(HubRefusal):
    """413: the request body is larger than the hub accepts."""

    status = 413


def respond(
    what: str,
    metrics: Metrics,
    status: int,
    message: str,
    headers: Mapping[str, str] | None = None,
) -> Response:
    """The refusal as sent: ``message`` as text, counted under ``what`` and ``status``."""
    metrics.rejected[(what, status)] += 1
    return PlainTextResponse(message + "\n", status_code=status, headers=dict(headers or {}))


def refuse(what: str, metrics: Metrics, refusal: HubRefusal) -> Response:
    """``refusal`` as sent: its status, its description as text, its challenge if any."""
    return respond(what, metrics, refusal.status, refusal.description, refusal.headers)
