"""How the hub says no over HTTP: the errors its core raises, whatever the protocol version,
and the 4xx/5xx response each becomes (counted in the metrics under what was refused).

A front end (``frontend.py``) maps its own errors (a token refused...) to a status, a
message and headers, and answers with ``respond`` too.
"""

from __future__ import annotations

from collections.abc import Mapping

from starlette.responses import PlainTextResponse, Response

from skipfilter.hub.core.metrics import Metrics
from skipfilter.hub.transports import TransportUnavailable


class BadRequest(Exception):
    """400 with a message naming the bad part."""


class Forbidden(Exception):
    """403 with a message naming what is not allowed."""


class TooLarge(Exception):
    """413: the request body is larger than the hub accepts."""


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


def refuse(what: str, metrics: Metrics, exc: Exception) -> Response:
    """Turn a core error into its response: 403, 413, 503, else 400 (a bad request)."""
    if isinstance(exc, Forbidden):
        status = 403
    elif isinstance(exc, TooLarge):
        status = 413
    elif isinstance(exc, TransportUnavailable):
        status = 503
    else:
        status = 400
    return respond(what, metrics, status, str(exc))
