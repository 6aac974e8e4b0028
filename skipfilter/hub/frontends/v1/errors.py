"""Refused requests, and the RFC 6750 ``WWW-Authenticate: Bearer`` challenge of token failures.

Mercure 1.0 (§6.2) reports token problems in a Bearer challenge: 401 without an error code when
no token was presented, 401 ``invalid_token``, 403 ``insufficient_scope``, 400 ``invalid_request``
when the token's presentation is malformed; every challenge names the protected resource
metadata (RFC 9728 ``resource_metadata``). A request malformed independently of the token is a
plain 400 (or 413, 421) without a challenge. The description always says what was wrong; the
HTTP layer decides whether to show it (the challenge itself carries only the code, as the Go hub).
Both are ``HubRefusal`` (``hub/refusal.py``), which writes the challenge: answered alike.
"""

from __future__ import annotations

from skipfilter.hub.refusal import (
    INSUFFICIENT_SCOPE,
    INVALID_REQUEST,
    INVALID_TOKEN,
    HubRefusal,
    quoted,
)

__all__ = [
    "INSUFFICIENT_SCOPE",
    "INVALID_REQUEST",
    "INVALID_TOKEN",
    "BearerError",
    "RequestError",
    "quoted",
]


class RequestError(HubRefusal):
    """A refused request: ``status`` and a ``description`` naming what was wrong.

    ``error`` is the RFC 6750 code the refusal corresponds to (``invalid_request`` for a
    malformed request) or None; a plain ``RequestError`` carries no challenge.
    """

    def __init__(self, status: int, description: str, error: str | None = None) -> None:
        super().__init__(description)
        self.status = status
        self.error = error

    @classmethod
    def bad_request(cls, description: str) -> RequestError:
        """400 for a request malformed independently of the token (no challenge)."""
        return cls(400, description, INVALID_REQUEST)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.status}, {self.description!r}, error={self.error!r})"


class BearerError(RequestError):
    """A refusal answered with an RFC 6750 Bearer challenge (see the module docstring)."""

    challenged = True

    @classmethod
    def missing_token(
        cls, description: str = "this request requires an access token"
    ) -> BearerError:
        """401 with a bare challenge: no token was presented where one is required."""
        return cls(401, description, None)

    @classmethod
    def invalid_token(cls, description: str) -> BearerError:
        """401 ``invalid_token``: the token failed validation (signature, claims, details)."""
        return cls(401, f"invalid token: {description}", INVALID_TOKEN)

    @classmethod
    def insufficient_scope(cls, description: str) -> BearerError:
        """403 ``insufficient_scope``: a valid token that does not grant the operation."""
        return cls(403, description, INSUFFICIENT_SCOPE)

    @classmethod
    def invalid_request(cls, description: str) -> BearerError:
        """400 ``invalid_request``: the token's presentation is malformed."""
        return cls(400, description, INVALID_REQUEST)
