"""JWT signing algorithms and the keys that fit each: decided by the key's type, never by a
token (an RSA key: RS*/PS*; an EC key: the one ES* of its curve; Ed25519/Ed448: EdDSA)."""

from __future__ import annotations

from typing import Any

from cryptography.hazmat.primitives.asymmetric import ec, ed448, ed25519, rsa

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


def hmac_secret_problem(text: str) -> str | None:
    """Why ``text`` is no HMAC secret this project signs or checks with (None: it is one)."""
    size = len(text.encode())
    if size < MIN_HMAC_BYTES:
        return (
            f"an HMAC secret needs at least {MIN_HMAC_BYTES} bytes (RFC 7518 §3.2), this one "
            f"has {size}: make one with `openssl rand -base64 32`"
        )
    return None


def key_algorithms(key: Any) -> frozenset[str]:
    """The algorithms a public key can check (empty for keys of no supported kind)."""
    if isinstance(key, rsa.RSAPublicKey):
        return RSA_ALGORITHMS
    if isinstance(key, ec.EllipticCurvePublicKey):
        return frozenset(a for a, curve in EC_CURVES.items() if curve == key.curve.name)
    if isinstance(key, ed25519.Ed25519PublicKey | ed448.Ed448PublicKey):
        return frozenset({EDDSA})
    return frozenset()
