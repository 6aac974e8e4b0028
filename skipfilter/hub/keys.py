"""Signing algorithms the hub accepts and the public keys that fit each of them.

A key is loaded once, when the hub is configured, so a wrong key fails at start-up with the
reason instead of turning every token into a confusing 401. Which algorithms a key can check
is decided by its type (an RSA key: RS*/PS*; an EC key: the one ES* of its curve; an Ed25519 or
Ed448 key: EdDSA), never by the token, so no token can pick a weaker check.
"""

from __future__ import annotations

from typing import Any

from cryptography.hazmat.primitives.asymmetric import ec, ed448, ed25519, rsa
from cryptography.hazmat.primitives.serialization import load_pem_private_key, load_pem_public_key
from jwt.algorithms import HMACAlgorithm
from jwt.exceptions import InvalidKeyError

from skipfilter.tokens.algorithms import (  # re-exported: the hub's modules read them here
    ALGORITHMS,
    ASYMMETRIC_ALGORITHMS,
    EC_CURVES,
    EDDSA,
    HMAC_ALGORITHMS,
    MIN_HMAC_BYTES,
    RSA_ALGORITHMS,
    hmac_secret_problem,
    key_algorithms,
)

__all__ = [
    "ALGORITHMS",
    "ASYMMETRIC_ALGORITHMS",
    "EC_CURVES",
    "EDDSA",
    "HMAC_ALGORITHMS",
    "MIN_HMAC_BYTES",
    "RSA_ALGORITHMS",
    "describe_key",
    "hmac_secret_problem",
    "key_algorithms",
    "load_key",
]

_CURVE_NAMES = {"secp256r1": "P-256", "secp384r1": "P-384", "secp521r1": "P-521"}


def describe_key(key: Any) -> str:
    """A short name for error messages: "RSA key", "EC P-256 key", "Ed25519 key"..."""
    if isinstance(key, rsa.RSAPublicKey):
        return f"RSA-{key.key_size} key"
    if isinstance(key, ec.EllipticCurvePublicKey):
        return f"EC {_CURVE_NAMES.get(key.curve.name, key.curve.name)} key"
    if isinstance(key, ed25519.Ed25519PublicKey):
        return "Ed25519 key"
    if isinstance(key, ed448.Ed448PublicKey):
        return "Ed448 key"
    return f"{type(key).__name__} key"


def load_key(text: str, algorithm: str) -> Any:
    """The verification key for ``algorithm``: an HMAC secret, or a PEM public key object.

    Raises ValueError naming the problem: a secret shorter than ``MIN_HMAC_BYTES``, an
    unknown algorithm, a PEM key given to HS*
    (anyone holding the public key could then sign tokens), a private key where the public
    half belongs, or a key whose type or curve does not fit the algorithm.
    """
    if algorithm in HMAC_ALGORITHMS:
        problem = hmac_secret_problem(text)
        if problem is not None:
            raise ValueError(problem)
        try:
            return HMACAlgorithm(HMACAlgorithm.SHA256).prepare_key(text)
        except InvalidKeyError as exc:
            raise ValueError(f"not usable as an {algorithm} secret: {exc}") from exc
    if algorithm not in ASYMMETRIC_ALGORITHMS:
        raise ValueError(f"algorithm {algorithm!r} is not one of {sorted(ALGORITHMS)}")
    data = text.strip().encode()
    try:
        key: Any = load_pem_public_key(data)
    except ValueError:
        try:
            load_pem_private_key(data, password=None)
        except (ValueError, TypeError):
            raise ValueError(f"not a PEM public key (needed for {algorithm})") from None
        raise ValueError("a private key: give the hub only the public key") from None
    if algorithm not in key_algorithms(key):
        fits = ", ".join(sorted(key_algorithms(key))) or "no supported algorithm"
        raise ValueError(f"an {describe_key(key)} cannot check {algorithm} (it fits {fits})")
    return key
