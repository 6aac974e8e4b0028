"""Trusted token issuers, each with its own publisher and subscriber keys (draft-08 §6.3).

A token is checked only with the keys of the issuer its ``iss`` names, for the role of the
endpoint (publishers and subscribers never share keys unless configured so), never with key
material the token carries. A role's keys are an HMAC secret or a PEM public key with its one
algorithm (``skipfilter.hub.keys``), or a JWK Set URL whose keys a token picks by ``kid``
(``skipfilter.hub.auth.jwks``: asymmetric keys only).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

from skipfilter.hub.auth.jwks import JwksKeys
from skipfilter.hub.auth.verify import AuthError
from skipfilter.hub.frontends.v1.errors import BearerError, RequestError
from skipfilter.hub.keys import ASYMMETRIC_ALGORITHMS, load_key
from skipfilter.hub.settings import Role as Role  # the roles' type, named here too


class KeySource(Protocol):
    """The keys of one role of one issuer."""

    @property
    def generation(self) -> int:
        """Changes whenever the keys change (verified tokens are then checked again)."""
        ...

    async def key_for(self, kid: str | None, algorithm: str) -> Any:
        """The key to check a token with this ``kid`` and ``alg``.

        Raises BearerError (invalid_token) when no trusted key fits, RequestError(503) when
        the keys cannot be had right now.
        """
        ...


class StaticKey:
    """One configured key and the one algorithm it checks (loaded, so a bad key fails now)."""

    generation = 0

    def __init__(self, key: str, algorithm: str) -> None:
        self.key = load_key(key, algorithm)
        self.algorithm = algorithm

    async def key_for(self, kid: str | None, algorithm: str) -> Any:
        if algorithm != self.algorithm:
            raise BearerError.invalid_token(
                f"algorithm {algorithm!r} is not the issuer's {self.algorithm!r}"
            )
        return self.key


class JwksKeySource:
    """The keys of a JWK Set URL (fetched and refreshed by ``JwksKeys``), chosen by ``kid``."""

    def __init__(self, keys: JwksKeys) -> None:
        self.keys = keys

    @property
    def generation(self) -> int:
        return self.keys.generation

    async def key_for(self, kid: str | None, algorithm: str) -> Any:
        if algorithm not in ASYMMETRIC_ALGORITHMS:
            raise BearerError.invalid_token(
                f"algorithm {algorithm!r} is not accepted with a JWK Set "
                f"(one of {', '.join(sorted(ASYMMETRIC_ALGORITHMS))})"
            )
        try:
            return (await self.keys.key_for(kid, algorithm)).key
        except AuthError as exc:
            if exc.status == 503:
                raise RequestError(503, exc.reason) from exc
            raise BearerError.invalid_token(exc.reason.removeprefix("invalid token: ")) from exc


def key_source(
    key: str | None = None,
    algorithm: str = "HS256",
    jwks_url: str | None = None,
    **jwks_options: float,
) -> KeySource | None:
    """A role's keys from configuration: a JWK Set URL wins over a key (as in the Go hub);
    None when neither is given (the role is closed for this issuer)."""
    if jwks_url:
        return JwksKeySource(JwksKeys(jwks_url, **jwks_options))  # type: ignore[arg-type]
    if key is not None:
        return StaticKey(key, algorithm)
    return None


@dataclass(frozen=True, slots=True)
class Issuer:
    """A trusted issuer: the exact ``iss`` of its tokens and the keys of each role.

    ``authorization_server`` advertises it in the protected resource metadata (leave it
    False for self-issued tokens).
    """

    identifier: str
    publisher: KeySource | None = None
    subscriber: KeySource | None = None
    authorization_server: bool = False

    def __post_init__(self) -> None:
        if self.publisher is None and self.subscriber is None:
            raise ValueError(
                f"issuer {self.identifier!r} has neither publisher nor subscriber keys"
            )

    def keys(self, role: Role) -> KeySource | None:
        """The keys that check this issuer's tokens for ``role`` (None: not accepted)."""
        return self.publisher if role == "publisher" else self.subscriber
