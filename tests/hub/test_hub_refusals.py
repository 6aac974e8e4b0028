"""One refusal hierarchy: every exception the hub answers a request with is a ``HubRefusal``
(a ``SkipFilterError``) carrying its status, text and challenge, and ``refuse`` answers each
family the way the 1.0 and 0.x hubs did before the families were one (bytes pinned)."""

from __future__ import annotations

import importlib
import pkgutil

import pytest

import skipfilter.hub
from skipfilter.errors import SkipFilterError
from skipfilter.hub.auth.jwks import JwksError
from skipfilter.hub.auth.verify import AuthError
from skipfilter.hub.core.metrics import Metrics
from skipfilter.hub.core.refusals import BadRequest, Forbidden, TooLarge, refuse
from skipfilter.hub.frontends.v1.errors import BearerError, RequestError
from skipfilter.hub.refusal import HubRefusal
from skipfilter.hub.sse import InvalidField
from skipfilter.hub.transports import TransportUnavailable

METADATA = "https://h/.well-known/oauth-protected-resource/.well-known/mercure"
FAMILIES = (
    AuthError,
    JwksError,
    TransportUnavailable,
    InvalidField,
    BadRequest,
    Forbidden,
    TooLarge,
    RequestError,
    BearerError,
)


def _every_refusal_class() -> set[type[HubRefusal]]:
    """The subclasses of HubRefusal in every hub module (each imported, so none is missed)."""
    for module in pkgutil.walk_packages(skipfilter.hub.__path__, "skipfilter.hub."):
        importlib.import_module(module.name)
    found: set[type[HubRefusal]] = set()
    pending = [HubRefusal]
    while pending:
        for sub in pending.pop().__subclasses__():
            if sub not in found:
                found.add(sub)
                pending.append(sub)
    return found


def test_every_refusal_is_a_skipfilter_error_with_an_http_error_status() -> None:
    classes = _every_refusal_class()
    assert set(FAMILIES) <= classes
    for cls in classes | {HubRefusal}:
        assert issubclass(cls, SkipFilterError), cls
        assert 400 <= cls.status <= 599, cls


def _meta(refusal: HubRefusal) -> HubRefusal:
    refusal.resource_metadata = METADATA
    return refusal


@pytest.mark.parametrize(
    ("refusal", "status", "challenge"),
    [
        (RequestError.bad_request("x"), 400, None),
        (_meta(RequestError.bad_request("x")), 400, None),
        (RequestError(413, "x"), 413, None),
        (RequestError(421, "x"), 421, None),
        (RequestError(503, "x"), 503, None),
        (BearerError.missing_token("x"), 401, "Bearer"),
        (_meta(BearerError.missing_token("x")), 401, f'Bearer resource_metadata="{METADATA}"'),
        (
            _meta(BearerError.insufficient_scope("x")),
            403,
            f'Bearer error="insufficient_scope", resource_metadata="{METADATA}"',
        ),
        (BearerError.invalid_request("x"), 400, 'Bearer error="invalid_request"'),
        # 0.x's challenges: insufficient_scope for a 403, invalid_token when the reason names
        # the token (a 503 without keys included), else bare; never the metadata
        (AuthError(401, "invalid token: expired"), 401, 'Bearer error="invalid_token"'),
        (AuthError(401, "cookie authentication requires an Origin"), 401, "Bearer"),
        (AuthError(403, "no 'mercure.publish' claim"), 403, 'Bearer error="insufficient_scope"'),
        (AuthError(503, "no keys to check the token"), 503, 'Bearer error="invalid_token"'),
        (BadRequest("x"), 400, None),
        (Forbidden("x"), 403, None),
        (TooLarge("x"), 413, None),
        (TransportUnavailable("x"), 503, None),
        (JwksError("x"), 503, None),
    ],
)
def test_each_refusal_is_answered_with_its_status_text_and_challenge(
    refusal: HubRefusal, status: int, challenge: str | None
) -> None:
    metrics = Metrics()
    response = refuse("publish", metrics, refusal)
    headers = [(k.decode(), v.decode()) for k, v in response.raw_headers]
    expected = [
        ("content-length", str(len(response.body))),
        ("content-type", "text/plain; charset=utf-8"),
    ]
    if challenge is not None:
        expected.insert(0, ("www-authenticate", challenge))
    assert (response.status_code, response.body, headers) == (
        status,
        refusal.description.encode() + b"\n",
        expected,
    )
    assert metrics.rejected == {("publish", status): 1}


def test_an_invalid_field_names_the_field_in_its_400() -> None:
    response = refuse("publish", Metrics(), InvalidField("id", "must not be empty"))
    assert (response.status_code, response.body) == (400, b"invalid 'id': must not be empty\n")
