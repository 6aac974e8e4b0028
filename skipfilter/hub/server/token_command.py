"""``skipfilter token``: mint a Mercure 1.0 access token for development, like the Go hub's
``mercure-token`` command, so trying the hub needs no JWT library (the flags, the ``--dev``
defaults and the ``--legacy`` 0.x token; ``frontends.v1.access_tokens`` mints).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

import jwt

from skipfilter.hub.frontends.v1.access_tokens import (
    DEV_AUDIENCE,
    DEV_ISSUER,
    DEV_KEY_ENV,
    MintError,
    mint_access_token,
    mint_legacy_token,
)
from skipfilter.hub.frontends.v1.grants import PUBLISH, SUBSCRIBE
from skipfilter.hub.frontends.v1.matchers import EXACT, URLPATTERN
from skipfilter.hub.server.flags import DefaultsFormatter, duration
from skipfilter.hub.settings import DEV_KEY

__all__ = ["add_arguments", "read_key", "read_payload", "run"]


def read_key(value: str) -> str:
    """``--key``: the key itself, ``@FILE`` or ``@-`` (stdin), one trailing newline dropped."""
    if not value.startswith("@"):
        return value
    text = sys.stdin.read() if value == "@-" else Path(value[1:]).read_text()
    return text.removesuffix("\n").removesuffix("\r")


def read_payload(text: str | None) -> dict[str, Any] | None:
    """``--payload``: a JSON object, or MintError naming the flag and what is wrong."""
    if not text:
        return None
    try:
        payload = json.loads(text)
    except json.JSONDecodeError as exc:
        raise MintError(f"--payload is not JSON ({exc}): give an object, '{{\"a\": 1}}'") from None
    if not isinstance(payload, dict):
        raise MintError(f"--payload must be a JSON object, got {type(payload).__name__}")
    return payload


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Declare ``skipfilter token``'s flags."""
    parser.formatter_class = DefaultsFormatter
    parser.description = (
        "Mint a Mercure 1.0 access token (RFC 9068, typ at+jwt, authorization_details) for "
        "development, signed with an HMAC secret or a PEM private key; printed on stdout."
    )
    add = parser.add_argument
    add("--iss", "--issuer", dest="issuer", help="the issuer (the hub must trust it)")
    add("--aud", "--audience", dest="audience", help="the hub's resource identifier (its URL)")
    add("--key", help="HMAC secret or PEM private key; @FILE reads a file, @- stdin")
    add("--alg", help="signing algorithm (default HS256 for a secret, the key's own for PEM)")
    add("--kid", help="key id header, for issuers with several keys")
    add("--sub", help="subject (default: a random urn:uuid)")
    add("--client-id", help="client_id claim (default: the issuer)")
    add(
        "--ttl",
        type=duration(positive=True),
        default=3600.0,
        metavar="DURATION",
        help="time until expiry: 3600, 1h, 90m, 30s (more than 0)",
    )
    for action in (PUBLISH, SUBSCRIBE):
        add(
            f"--{action}",
            action="append",
            default=[],
            metavar="TOPIC",
            help=f"exact topic (or '*') to grant {action} on; repeatable",
        )
        add(
            f"--{action}-urlpattern",
            action="append",
            default=[],
            metavar="PATTERN",
            help=f"URL Pattern to grant {action} on (https://example.com/books/:id); repeatable",
        )
    add(
        "--payload",
        metavar="JSON",
        help="JSON object given to the subscriptions the subscribe grant covers",
    )
    add(
        "--dev",
        action="store_true",
        help=f"defaults for a local hub: --iss {DEV_ISSUER} --aud {DEV_AUDIENCE}, the key from "
        f"${DEV_KEY_ENV} (else the public development key a --demo hub uses), and "
        "--publish '*' --subscribe '*' when no grant is given",
    )
    add(
        "--legacy",
        action="store_true",
        help="a Mercure 0.x token instead (the 'mercure' claim with --publish/--subscribe "
        "topics or URI templates), for a hub run with --protocol-version-compatibility 8",
    )
    add("--pretty", action="store_true", help="also print the header and claims to stderr")


def run(args: argparse.Namespace) -> int:
    """Print the token on stdout (exit 0), or the reason it cannot be minted (exit 2)."""
    import os

    issuer, audience, key = args.issuer, args.audience, args.key
    grants = {
        action: [(v, EXACT) for v in getattr(args, action)]
        + [(v, URLPATTERN) for v in getattr(args, f"{action}_urlpattern")]
        for action in (PUBLISH, SUBSCRIBE)
    }
    if args.dev:
        issuer, audience = issuer or DEV_ISSUER, audience or DEV_AUDIENCE
        key = key or os.environ.get(DEV_KEY_ENV) or DEV_KEY
        if not grants[PUBLISH] and not grants[SUBSCRIBE]:
            grants = {PUBLISH: [("*", EXACT)], SUBSCRIBE: [("*", EXACT)]}
    try:
        if args.legacy:
            return _print(_legacy(args, key), args.pretty)
        if not issuer or not audience or not key:
            raise MintError(
                "--iss, --aud and --key are required (or --dev, with $" + DEV_KEY_ENV + ")"
            )
        payload = read_payload(args.payload)
        token = mint_access_token(
            issuer,
            audience,
            read_key(key),
            publish=grants[PUBLISH],
            subscribe=grants[SUBSCRIBE],
            payload=payload,
            algorithm=args.alg,
            kid=args.kid,
            subject=args.sub,
            client_id=args.client_id,
            ttl=args.ttl,
        )
    except (MintError, OSError, json.JSONDecodeError) as exc:
        print(f"skipfilter token: {exc}", file=sys.stderr)
        return 2
    return _print(token, args.pretty)


def _legacy(args: argparse.Namespace, key: str | None) -> str:
    """``--legacy``: the 0.x token of the flags (URL Patterns and 1.0 claims refused)."""
    import os

    if args.dev:
        key = key or os.environ.get(DEV_KEY_ENV) or DEV_KEY
    names = ["issuer", "audience", "kid", "sub", f"{PUBLISH}_urlpattern", f"{SUBSCRIBE}_urlpattern"]
    unused = [f"--{name.replace('_', '-')}" for name in names if getattr(args, name)]
    if unused:
        raise MintError(f"{', '.join(unused)}: Mercure 0.x tokens have no such claim")
    if not key:
        raise MintError("--key is required (or --dev, with $" + DEV_KEY_ENV + ")")
    publish, subscribe = list(args.publish), list(args.subscribe)
    if args.dev and not publish and not subscribe:
        publish, subscribe = ["*"], ["*"]
    payload = read_payload(args.payload)
    return mint_legacy_token(
        read_key(key),
        publish=publish,
        subscribe=subscribe,
        payload=payload,
        algorithm=args.alg,
        ttl=args.ttl,
    )


def _print(token: str, pretty: bool) -> int:
    print(token)
    if pretty:
        header = jwt.get_unverified_header(token)
        claims = jwt.decode(token, options={"verify_signature": False})
        print(json.dumps({"header": header, "claims": claims}, indent=2), file=sys.stderr)
    return 0
