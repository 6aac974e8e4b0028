"""What a hub's refusal or absence means to a client: one exception per answer a program
handles differently (fix the token, fix the request, retry later, look elsewhere).

A refusal carries the RFC 6750 ``error`` code of the hub's ``WWW-Authenticate: Bearer``
challenge (``invalid_token``, ``insufficient_scope``, ``invalid_request``, or None) and a
description: the challenge's ``error_description``, else the hub's text body.
"""

from __future__ import annotations

from skipfilter.errors import SkipFilterError


class MercureError(SkipFilterError):
    """Anything a Mercure hub client raises on purpose."""


class Refused(MercureError):
    """The hub answered with an error status; ``status``, ``error`` and ``description``."""

    def __init__(self, status: int, error: str | None, description: str) -> None:
        code = f" {error}" if error else ""
        super().__init__(f"hub answered {status}{code}: {description}")
        self.status = status
        self.error = error
        self.description = description


class InvalidRequest(Refused):
    """400: the request (a topic, a field, the token's presentation) is malformed."""


class Unauthorized(Refused):
    """401: no token where one is needed, or a token the hub does not accept."""


class Forbidden(Refused):
    """403: a valid token that does not grant this topic or action."""


class TooLarge(Refused):
    """413: too many topics, or a body over the hub's limit."""


class Unavailable(MercureError):
    """The hub could not answer (a 5xx, or the connection dropped after the request was
    sent). ``may_be_stored`` is True for a publish that may have been stored anyway: the
    client never sends it again by itself, as a second copy would be a second update."""

    def __init__(self, message: str, may_be_stored: bool, status: int | None = None) -> None:
        super().__init__(message)
        self.may_be_stored = may_be_stored
        self.status = status


class Unreachable(Unavailable):
    """No connection could be made (refused, timed out connecting): nothing was sent."""

    def __init__(self, message: str) -> None:
        super().__init__(message, may_be_stored=False)


class BadAnswer(MercureError):
    """The server's answer breaks the protocol or one of the client's limits: it is not a
    hub's (a proxy's page, a hostile or broken server), so it is raised, never retried."""


class NotEventStream(BadAnswer):
    """A 200 to a subscription whose ``Content-Type`` is not ``text/event-stream`` (as
    EventSource, the client fails the connection rather than read a page as events);
    ``content_type`` is what was sent."""

    def __init__(self, message: str, content_type: str) -> None:
        super().__init__(message)
        self.content_type = content_type


class OverLimit(BadAnswer):
    """An answer over one of the client's size limits: ``what`` (``line``, ``event``,
    ``answer``) and ``limit``, the size it passed (characters for a stream, bytes for a
    publish answer). Nothing past the limit was kept in memory."""

    def __init__(self, what: str, limit: int, message: str) -> None:
        super().__init__(message)
        self.what = what
        self.limit = limit


class DiscoveryFailed(MercureError):
    """A resource names no hub (no ``Link: <...>; rel="mercure"``), or could not be read."""


#: The refusal each status is raised as (others: Refused).
BY_STATUS: dict[int, type[Refused]] = {
    400: InvalidRequest,
    401: Unauthorized,
    403: Forbidden,
    413: TooLarge,
}
