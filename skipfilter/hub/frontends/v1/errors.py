"""Refused requests, and the RFC 6750 ``WWW-Authenticate: Bearer`` challenge of token failures.

Mercure 1.0 (§6.2) reports token problems in a Bearer challenge: 401 without an error code when
no token was presented, 401 ``invalid_token``, 403 ``insufficient_scope``, 400 ``invalid_request``
when the token's presentation is malformed; every challenge names the protected resource
metadata (RFC 9728 ``resource_metadata``). A request malformed independently of the token is a
plain 400 (or 413, 421) without a challenge. The description always says what was wrong; the
HTTP layer decides whether to show it (the challenge itself carries only the code, as the Go hub).
"""

from __future__ import annotations

import re

from skipfilter.errors import SkipFilterError

INVALID_REQUEST = "invalid_request"
INVALID_TOKEN = "invalid_token"
INSUFFICIENT_SCOPE = "insufficient_scope"

#: RFC 6750 §3: error_description is limited to %x20-21 / %x23-5B / %x5D-7E (no '"' nor '\').
_NOT_DESCRIPTION = re.compile(r"[^\x20\x21\x23-\x5b\x5d-\x7e]")


def quoted(value: str) -> str:
    """``value`` as an RFC 9110 quoted-string (``"`` and ``\\`` escaped)."""
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


class RequestError(SkipFilterError):
    """A refused request: ``status`` and a ``description`` naming what was wrong.

    ``error`` is the RFC 6750 code the refusal corresponds to (``invalid_request`` for a
    malformed request) or None; a plain ``RequestError`` carries no challenge.
    """

    def __init__(self, status: int, description: str, error: str | None = None) -> None:
        super().__init__(description)
        self.status = status
        self.description = description
        self.error = error

    @classmethod
    def bad_request(cls, description: str) -> RequestError:
        """400 for a request malformed independently of the token (no challenge)."""
        return cls(400, description, INVALID_REQUEST)

    def www_authenticate(
        self, resource_metadata: str | None = None, describe: bool = False
    ) -> str | None:
        """The ``WWW-Authenticate`` value to send: None, as this refusal has no challenge."""
        return None

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.status}, {self.description!r}, error={self.error!r})"


class BearerError(RequestError):
    """A refusal answered with an RFC 6750 Bearer challenge (see the module docstring)."""

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

    def www_authenticate(self, resource_metadata: str | None = None, describe: bool = False) -> str:
        """The exact challenge, e.g. ``Bearer error="invalid_token", resource_metadata="..."``.

        ``describe`` adds ``error_description`` (characters RFC 6750 forbids become ``?``).
        """
        params = []
        if self.error is not None:
            params.append(f"error={quoted(self.error)}")
            if describe:
                text = _NOT_DESCRIPTION.sub("?", self.description)
                params.append(f"error_description={quoted(text)}")
        if resource_metadata:
            params.append(f"resource_metadata={quoted(resource_metadata)}")
        return "Bearer" + (" " + ", ".join(params) if params else "")
