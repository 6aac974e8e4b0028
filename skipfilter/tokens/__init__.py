"""Mercure tokens, minted: the pure part (claims and signature, PyJWT + cryptography) that
the hub's ``skipfilter token`` command and the Python client's publishers share.

- :func:`sign_access_token` -- a Mercure 1.0 access token (RFC 9068, ``authorization_details``).
- :func:`sign_legacy_token` -- a Mercure 0.x token (the ``mercure`` claim).
- :func:`signing_key` -- the key object and algorithm a secret or a PEM private key signs with.
- :class:`MintError` -- a token that cannot be minted as asked.

Checking matchers against a hub's rules is the hub's business
(``hub/frontends/v1/access_tokens.py``); nothing here imports the hub or a web framework.
"""

from skipfilter.tokens.algorithms import ALGORITHMS, HMAC_ALGORITHMS, key_algorithms
from skipfilter.tokens.mint import (
    AT_JWT,
    MERCURE_DETAIL,
    MintError,
    sign_access_token,
    sign_legacy_token,
    signing_key,
)

__all__ = [
    "ALGORITHMS",
    "AT_JWT",
    "HMAC_ALGORITHMS",
    "MERCURE_DETAIL",
    "MintError",
    "key_algorithms",
    "sign_access_token",
    "sign_legacy_token",
    "signing_key",
]
