"""How the hub says no over HTTP: the request errors its handlers raise, and the 4xx/5xx
response each becomes (counted in the metrics under what was refused)."""

from __future__ import annotations

from starlette.responses import PlainTextResponse, Response

from skipfilter.hub.auth import AuthError
from skipfilter.hub.metrics import Metrics
from skipfilter.hub.transports import TransportUnavailable


class BadRequest(Exception):
    """400 with a message naming the bad part."""


class Forbidden(Exception):
    """403 with a message naming what is not allowed."""


def refuse(what: str, metrics: Metrics, exc: Exception) -> Response:
    """Turn an error into its 4xx/5xx response, counting it under ``what``."""
    headers: dict[str, str] = {}
    if isinstance(exc, AuthError):
        status, message = exc.status, exc.reason
        headers["WWW-Authenticate"] = exc.www_authenticate
    elif isinstance(exc, Forbidden):
        status, message = 403, str(exc)
    elif isinstance(exc, TransportUnavailable):
        status, message = 503, str(exc)
    else:
        status, message = 400, str(exc)
    metrics.rejected[(what, status)] += 1
    return PlainTextResponse(message + "\n", status_code=status, headers=headers)
