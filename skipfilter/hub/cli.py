"""``skipfilter hub``: run the Mercure hub with uvicorn.

Flags mirror the Go hub's configuration; keys and algorithms also come from its environment
variables (MERCURE_PUBLISHER_JWT_KEY, MERCURE_SUBSCRIBER_JWT_KEY, ..._ALG), flags win.
"""

from __future__ import annotations

import argparse
import os
import secrets
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from skipfilter.hub.settings import HubSettings


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Declare the hub's flags on ``parser`` (shared by ``skipfilter hub`` and ``-m``)."""
    add = parser.add_argument
    add("--addr", default="127.0.0.1:3000", help="HOST:PORT to listen on (default %(default)s)")
    add("--anonymous", action="store_true", help="allow subscribers without a token")
    add(
        "--history",
        default="skipfilter-hub.sqlite3",
        metavar="PATH",
        help="SQLite file for durable history; ':memory:' for none (default %(default)s)",
    )
    add("--history-size", type=int, default=100_000, help="updates kept for replay")
    add(
        "--ring-size",
        type=int,
        default=4096,
        help="updates kept in memory; slower subscribers are disconnected",
    )
    add("--cors-origins", default="", help="space/comma separated origins allowed by CORS")
    add(
        "--publish-origins",
        default="",
        help="origins allowed to publish with the cookie ('*' for any)",
    )
    add("--subscriptions", action="store_true", help="subscription events and API")
    add("--heartbeat", type=float, default=40.0, help="seconds between heartbeats (0: off)")
    add("--write-timeout", type=float, default=60.0, help="seconds a write may block")
    add(
        "--demo",
        action="store_true",
        help="demo page at /, anonymous subscribers, a generated publisher key",
    )
    add("--publisher-jwt-key", help="HMAC secret or PEM public key; '@FILE' reads a file")
    add("--publisher-jwt-alg", help="HS256 (default) or RS256, ...")
    add("--subscriber-jwt-key", help="HMAC secret or PEM public key; '@FILE' reads a file")
    add("--subscriber-jwt-alg", help="HS256 (default) or RS256, ...")
    add(
        "--publisher-jwks-url",
        metavar="URL",
        help="JWK Set URL of the publishers' keys, chosen by the token's kid; wins over "
        "--publisher-jwt-key (env MERCURE_PUBLISHER_JWKS_URL)",
    )
    add(
        "--subscriber-jwks-url",
        metavar="URL",
        help="same for subscribers (env MERCURE_SUBSCRIBER_JWKS_URL)",
    )
    add(
        "--jwks-refresh",
        type=float,
        default=3600.0,
        metavar="SECONDS",
        help="seconds between JWK Set refetches (default %(default)s)",
    )
    add(
        "--jwks-min-refresh",
        type=float,
        default=30.0,
        metavar="SECONDS",
        help="least seconds between refetches caused by unknown kids (default %(default)s)",
    )
    add(
        "--cookie-name",
        metavar="NAME",
        help="cookie holding the JWT (default mercureAuthorization)",
    )
    add("--max-selectors", type=int, default=64, help="topic selectors per subscription")
    add("--max-selector-length", type=int, default=2048, help="characters per topic selector")
    add(
        "--max-template-variables",
        type=int,
        default=12,
        help="variables per URI-template selector (compile cost grows with them)",
    )
    add("--log-level", default="info", help="uvicorn log level")


def _key(value: str | None) -> str | None:
    if value and value.startswith("@"):
        return Path(value[1:]).read_text()
    return value


def _origins(value: str) -> tuple[str, ...]:
    return tuple(o for o in value.replace(",", " ").split() if o)


def settings_from_args(args: argparse.Namespace, env: dict[str, str] | None = None) -> HubSettings:
    """Merge flags over the MERCURE_* environment; in demo mode fill in what is missing."""
    env = dict(os.environ if env is None else env)
    publisher_key = _key(args.publisher_jwt_key)
    if args.demo and not (publisher_key or env.get("MERCURE_PUBLISHER_JWT_KEY")):
        publisher_key = secrets.token_urlsafe(32)
    return HubSettings.from_env(
        env,
        publisher_key=publisher_key,
        publisher_alg=args.publisher_jwt_alg,
        subscriber_key=_key(args.subscriber_jwt_key),
        subscriber_alg=args.subscriber_jwt_alg,
        anonymous=args.anonymous or args.demo,
        history_path=args.history,
        history_size=args.history_size,
        ring_size=args.ring_size,
        cors_origins=_origins(args.cors_origins),
        publish_origins=_origins(args.publish_origins),
        subscriptions=args.subscriptions,
        heartbeat=args.heartbeat,
        write_timeout=args.write_timeout,
        demo=args.demo,
        max_selectors=args.max_selectors,
        max_selector_length=args.max_selector_length,
        max_template_variables=args.max_template_variables,
        publisher_jwks_url=args.publisher_jwks_url,
        subscriber_jwks_url=args.subscriber_jwks_url,
        jwks_refresh=args.jwks_refresh,
        jwks_min_refresh=args.jwks_min_refresh,
        cookie_name=args.cookie_name,
    )


def run(args: argparse.Namespace) -> int:
    """Start the hub and serve until interrupted."""
    import uvicorn

    from skipfilter.hub.app import create_app
    from skipfilter.hub.demo import demo_token

    host, _, port = args.addr.rpartition(":")
    host = host.strip("[]") or "0.0.0.0"
    try:
        settings = settings_from_args(args)
    except ValueError as exc:
        print(f"skipfilter hub: {exc}", file=sys.stderr)
        return 2
    shown = "localhost" if host in ("127.0.0.1", "0.0.0.0", "::") else host
    url = f"http://{shown}:{port}/"
    print(f"skipfilter hub: subscribe at {url}.well-known/mercure", flush=True)
    if settings.demo:
        print(f"skipfilter hub: demo page at {url}", flush=True)
        token = demo_token(settings)
        if token:
            print(f"skipfilter hub: demo publisher JWT: {token}", flush=True)
    app = create_app(settings)

    class Server(uvicorn.Server):
        """uvicorn waits for open responses before shutting down: end the streams first."""

        async def shutdown(self, sockets: Any = None) -> None:
            hub = getattr(app.state, "hub", None)
            if hub is not None:
                hub.stop_streams()
            await super().shutdown(sockets)

    config = uvicorn.Config(
        app, host=host, port=int(port), log_level=args.log_level, timeout_graceful_shutdown=5
    )
    Server(config).run()
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``python -m skipfilter.hub.cli``."""
    parser = argparse.ArgumentParser(prog="skipfilter hub", description=__doc__)
    add_arguments(parser)
    return run(parser.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
