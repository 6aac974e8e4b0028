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

HMAC_ALGORITHMS = frozenset({"HS256", "HS384", "HS512"})
RSA_ALGORITHMS = frozenset({"RS256", "RS384", "RS512", "PS256", "PS384", "PS512"})
#: The curve each ECDSA algorithm is defined on (RFC 7518 §3.4): ES512 is P-521, not P-512.
EC_CURVES = {"ES256": "secp256r1", "ES384": "secp384r1", "ES512": "secp521r1"}
EDDSA = "EdDSA"
ASYMMETRIC_ALGORITHMS = RSA_ALGORITHMS | frozenset(EC_CURVES) | {EDDSA}
ALGORITHMS = HMAC_ALGORITHMS | ASYMMETRIC_ALGORITHMS

#: Fewest bytes of an HMAC secret (RFC 7518 §3.2: at least the hash output, 32 for HS256):
#: the one rule of the hub, which refuses a shorter key at start, and of ``skipfilter token``.
MIN_HMAC_BYTES = 32

_CURVE_NAMES = {"secp256r1": "P-256", "secp384r1": "P-384", "secp521r1": "P-521"}


def key_algorithms(key: Any) -> frozenset[str]:
    """The algorithms a public key can check (empty for keys of no supported kind)."""
    if isinstance(key, rsa.RSAPublicKey):
        return RSA_ALGORITHMS
    if isinstance(key, ec.EllipticCurvePublicKey):
        return frozenset(a for a, curve in EC_CURVES.items() if curve == key.curve.name)
    if isinstance(key, ed25519.Ed25519PublicKey | ed448.Ed448PublicKey):
        return frozenset({EDDSA})
    return frozenset()


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


def hmac_secret_problem(text: str) -> str | None:
    """Why ``text`` is no HMAC secret this project signs or checks with (None: it is one)."""
    size = len(text.encode())
    if size < MIN_HMAC_BYTES:
        return (
            f"an HMAC secret needs at least {MIN_HMAC_BYTES} bytes (RFC 7518 §3.2), this one "
            f"has {size}: make one with `openssl rand -base64 32`"
        )
    return None


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
