"""Real keys for the auth tests: generated pairs for every algorithm."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import jwt
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, ed25519, rsa
from jwt.algorithms import ECAlgorithm, OKPAlgorithm, RSAAlgorithm

_CURVES = {"ES256": ec.SECP256R1(), "ES384": ec.SECP384R1(), "ES512": ec.SECP521R1()}


@dataclass(frozen=True)
class KeyPair:
    """A private key to sign with and its public half (object and PEM text)."""

    alg: str
    private: Any
    public: Any

    @property
    def public_pem(self) -> str:
        return self.public.public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
        ).decode()

    @property
    def private_pem(self) -> str:
        return self.private.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        ).decode()

    def jwk(self, kid: str | None, **extra: Any) -> dict[str, Any]:
        """The public key as a JWK (with ``kid`` and any extra members)."""
        if self.alg.startswith(("RS", "PS")):
            data = RSAAlgorithm.to_jwk(self.public, as_dict=True)
        elif self.alg.startswith("ES"):
            data = ECAlgorithm.to_jwk(self.public, as_dict=True)
        else:
            data = OKPAlgorithm.to_jwk(self.public, as_dict=True)
        if kid is not None:
            data["kid"] = kid
        return {**data, **extra}

    def sign(
        self,
        alg: str | None = None,
        kid: str | None = None,
        exp: float = 3600,
        claims: dict[str, Any] | None = None,
        **mercure: Any,
    ) -> str:
        """A token signed by this private key (``claims`` replaces the mercure claim)."""
        body = claims if claims is not None else {"mercure": mercure}
        body = {**body, "exp": int(time.time() + exp)}
        headers = {"kid": kid} if kid is not None else None
        return jwt.encode(body, self.private, algorithm=alg or self.alg, headers=headers)


def key_pair(alg: str) -> KeyPair:
    """A fresh key pair for ``alg`` (RSA 2048, the curve of ES*, Ed25519 for EdDSA)."""
    private: Any
    if alg.startswith(("RS", "PS")):
        private = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    elif alg in _CURVES:
        private = ec.generate_private_key(_CURVES[alg])
    elif alg == "EdDSA":
        private = ed25519.Ed25519PrivateKey.generate()
    else:
        raise ValueError(alg)
    return KeyPair(alg, private, private.public_key())
