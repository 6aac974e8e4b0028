"""Tokens a client presents: given, or minted from a key and renewed before they expire.

A :class:`TokenMinter` is a callable returning a token valid for at least ``margin`` more
seconds, minting a new one when the last is that close to its ``exp``: a publisher or a
reconnecting subscriber calls it before each request, so a long-lived process never presents
an expired token (the hub would answer 401, and end a subscriber's stream at ``exp``).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence

from skipfilter.tokens import sign_access_token, sign_legacy_token

#: What a client may be given as its token: a fixed string, or a callable asked each time.
TokenSource = str | Callable[[], str] | None


class TokenMinter:
    """Mints tokens from ``key`` (an HMAC secret of 32+ bytes, or a PEM private key).

    Mercure 1.0: an RFC 9068 access token from ``issuer`` for ``audience`` (the hub's URL,
    or its configured resource identifier) granting ``publish``/``subscribe`` on exact topics
    and ``publish_urlpattern``/``subscribe_urlpattern`` URL Patterns. ``legacy``: a 0.x token
    (the ``mercure`` claim; no issuer nor audience). Each lives ``ttl`` seconds and is renewed
    once less than ``margin`` (default: a tenth of ``ttl``, at most 60 s) remains.
    Thread-safe; a call costs a clock read until a renewal (one signature).
    """

    def __init__(
        self,
        key: str,
        *,
        issuer: str | None = None,
        audience: str | None = None,
        publish: Sequence[str] = (),
        subscribe: Sequence[str] = (),
        publish_urlpattern: Sequence[str] = (),
        subscribe_urlpattern: Sequence[str] = (),
        payload: object = None,
        algorithm: str | None = None,
        ttl: float = 3600,
        margin: float | None = None,
        legacy: bool = False,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.ttl = ttl
        self.margin = min(ttl / 10, 60.0) if margin is None else margin
        self._clock = clock
        self._lock = threading.Lock()
        self._token = ""
        self._expires = 0.0
        self._mint: Callable[[float], str]
        if legacy:
            if publish_urlpattern or subscribe_urlpattern:
                raise ValueError("Mercure 0.x has no URL Patterns: grant selectors instead")
            self._mint = lambda now: sign_legacy_token(
                key,
                publish=publish,
                subscribe=subscribe,
                payload=payload,
                algorithm=algorithm,
                ttl=ttl,
                now=now,
            )
        else:
            if not issuer or not audience:
                raise ValueError("a Mercure 1.0 token needs an issuer and an audience")
            if payload is not None and not isinstance(payload, dict):
                raise ValueError("a Mercure 1.0 payload is a JSON object (a dict)")
            grants = {
                action: [(m, "exact") for m in exact] + [(m, "urlpattern") for m in patterns]
                for action, exact, patterns in (
                    ("publish", publish, publish_urlpattern),
                    ("subscribe", subscribe, subscribe_urlpattern),
                )
            }
            self._mint = lambda now: sign_access_token(
                issuer,
                audience,
                key,
                publish=grants["publish"],
                subscribe=grants["subscribe"],
                payload=payload,
                algorithm=algorithm,
                ttl=ttl,
                now=now,
            )
        self()  # a key or grant that cannot mint fails here, not at the first publish

    def __call__(self) -> str:
        """A token valid for at least ``margin`` more seconds."""
        with self._lock:
            now = self._clock()
            if now >= self._expires - self.margin:
                self._token = self._mint(now)
                self._expires = int(now) + max(1, int(self.ttl))
            return self._token


def current(token: TokenSource) -> str | None:
    """The token to present now."""
    return token() if callable(token) else token
