"""What the hub refuses, and how each refusal is answered on the wire.

Every request the hub says no to raises a ``HubRefusal``: it carries its HTTP ``status``,
its ``description`` (the text body, naming what was wrong) and, for token failures, the
RFC 6750 ``error`` code and the ``WWW-Authenticate: Bearer`` challenge it is answered with
(``challenged``), naming the RFC 9728 ``resource_metadata`` where the front end set one. The
HTTP layer answers any refusal by reading these attributes (``core/refusals.refuse``), so
callers catch ``HubRefusal`` alone. The families, one subclass each, live with what raises
them: ``auth.verify.AuthError``, ``auth.jwks.JwksError``, ``transports.TransportUnavailable``,
``sse.InvalidField``, ``core.refusals.BadRequest/Forbidden/TooLarge``,
``frontends.v1.errors.RequestError/BearerError``.

>>> refusal = HubRefusal("no")
>>> (refusal.status, refusal.description, refusal.www_authenticate())
(400, 'no', None)
"""

from __future__ import annotations

import re

from skipfilter.errors import SkipFilterError

#: RFC 6750 §3.1's error codes.
INVALID_REQUEST = "invalid_request"
INVALID_TOKEN = "invalid_token"
INSUFFICIENT_SCOPE = "insufficient_scope"

#: RFC 6750 §3: error_description is limited to %x20-21 / %x23-5B / %x5D-7E (no '"' nor '\').
_NOT_DESCRIPTION = re.compile(r"[^\x20\x21\x23-\x5b\x5d-\x7e]")


def quoted(value: str) -> str:
    """``value`` as an RFC 9110 quoted-string (``"`` and ``\\`` escaped).

    >>> print(quoted('a"b'))
    "a\\"b"
    """
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


class HubRefusal(SkipFilterError):
    """A request the hub refuses: answered ``status`` with ``description`` as its text.

    ``error`` is the RFC 6750 code the refusal corresponds to (None: none); a ``challenged``
    one is answered with a Bearer challenge carrying that code and ``resource_metadata``.
    """

    #: The HTTP status it is answered with (a subclass's own, or set per instance).
    status: int = 400
    #: The RFC 6750 error code (``invalid_token``...), or None.
    error: str | None = None
    #: Whether the answer carries a ``WWW-Authenticate: Bearer`` challenge.
    challenged: bool = False
    #: The RFC 9728 protected resource metadata URL the challenge names (None: none).
    resource_metadata: str | None = None

    def __init__(self, description: str) -> None:
        super().__init__(description)
        self.description = description

    def www_authenticate(
        self, resource_metadata: str | None = None, describe: bool = False
    ) -> str | None:
        """The challenge, e.g. ``Bearer error="invalid_token", resource_metadata="..."``,
        or None for a refusal answered without one.

        ``describe`` adds ``error_description`` (characters RFC 6750 forbids become ``?``).
        """
        if not self.challenged:
            return None
        params = []
        if self.error is not None:
            params.append(f"error={quoted(self.error)}")
            if describe:
                text = _NOT_DESCRIPTION.sub("?", self.description)
                params.append(f"error_description={quoted(text)}")
        if resource_metadata:
            params.append(f"resource_metadata={quoted(resource_metadata)}")
        return "Bearer" + (" " + ", ".join(params) if params else "")

    @property
    def headers(self) -> dict[str, str]:
        """The response headers it is answered with: its challenge, if any."""
        challenge = self.www_authenticate(self.resource_metadata)
        return {"WWW-Authenticate": challenge} if challenge else {}
