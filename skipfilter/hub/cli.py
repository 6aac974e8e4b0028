"""``skipfilter hub``: run the Mercure hub with uvicorn.

Flags mirror the Go hub's configuration; keys and algorithms also come from its environment
variables (MERCURE_PUBLISHER_JWT_KEY, MERCURE_SUBSCRIBER_JWT_KEY, ..._ALG), flags win.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from pathlib import Path

from skipfilter.hub.paths import HUB_PATH
from skipfilter.hub.settings import (
    DEMO_COOKIE,
    DEV_KEY,
    SHUTDOWN_TIMEOUT,
    HubSettings,
    read_issuers_file,
)


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
        "--events-history-size",
        type=int,
        default=10_000,
        help="subscription events kept for replay, apart from the updates (default %(default)s)",
    )
    add(
        "--transport",
        metavar="URL",
        help="redis://HOST:PORT/DB shares updates with other hub nodes through a Redis Stream; "
        "redis+sentinel://H1:P1,H2:P2,H3:P3/SERVICE/DB through a Sentinel set, acknowledged "
        "once a replica holds them (default: the SQLite --history; env MERCURE_TRANSPORT_URL)",
    )
    add(
        "--node-ttl",
        type=float,
        default=15.0,
        help="with --transport redis: seconds before a silent node's subscriptions end",
    )
    add(
        "--workers",
        type=int,
        default=1,
        help="hub processes sharing --addr (one listening socket); more than one needs "
        "--transport; SIGHUP replaces them one at a time",
    )
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
    add(
        "--ring-bytes",
        type=int,
        default=64 << 20,
        help="bytes the in-memory ring may hold (default %(default)s)",
    )
    add("--heartbeat", type=float, default=40.0, help="seconds between heartbeats (0: off)")
    add(
        "--dispatch-timeout",
        type=float,
        default=5.0,
        help="seconds a subscriber's socket may stay full before it is dropped (0: never)",
    )
    add(
        "--write-timeout",
        type=float,
        default=600.0,
        help="seconds a stream may stay open; clients then reconnect and resume (0: forever)",
    )
    add(
        "--shutdown-timeout",
        type=float,
        default=SHUTDOWN_TIMEOUT,
        metavar="SECONDS",
        help="on SIGTERM, seconds to drain (end streams, finish accepted publishes) before "
        "exiting (default %(default)s); with --workers, SIGHUP replaces workers one at a time",
    )
    add(
        "--header-timeout",
        type=float,
        default=10.0,
        help="seconds a connection may take to send a request's line and headers (0: forever)",
    )
    add(
        "--body-timeout",
        type=float,
        default=10.0,
        help="seconds a request's body may take to arrive, else 408 (0: forever)",
    )
    add(
        "--max-head-bytes",
        type=int,
        default=1 << 20,
        help="largest request line and header fields together, in bytes, else 431 (1 MiB)",
    )
    add(
        "--max-header-fields",
        type=int,
        default=100,
        help="most header fields in one request, else 431 (100)",
    )
    add("--metrics-addr", metavar="HOST:PORT", help="serve /metrics here (not on --addr)")
    add(
        "--tls-cert",
        metavar="PEM",
        help="serve HTTPS on --addr with this certificate chain (with --tls-key), so "
        "browsers keep the __Secure- cookie; /metrics stays plain HTTP",
    )
    add("--tls-key", metavar="PEM", help="the private key of --tls-cert")
    add(
        "--streams",
        choices=("native", "asgi"),
        default="native",
        help="write streams straight to sockets (native, needs httptools) or through ASGI",
    )
    add(
        "--demo",
        action="store_true",
        help="demo page at / (Mercure 1.0: subscribe, publish, watch); anonymous "
        "subscribers, a generated key for both roles unless given, the issuer "
        "https://localhost unless --issuer, cookie mercure_access_token unless --cookie-name",
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
        help="cookie holding the access token (default __Secure-mercure_access_token; "
        "browsers keep __Secure- cookies only over https; compatibility mode also reads "
        "0.x's mercureAuthorization)",
    )
    add(
        "--issuer",
        action="append",
        default=[],
        metavar="URL",
        help="a trusted token issuer, the exact 'iss' of its tokens; with one, the "
        "--publisher-*/--subscriber-* keys are its keys (env MERCURE_TRUSTED_ISSUERS, "
        "space-separated)",
    )
    add(
        "--issuers-file",
        metavar="PATH",
        help='JSON file of issuers with keys of their own: {"issuers": [{"issuer": URL, '
        '"publisher_key": ..., "publisher_alg": ..., "publisher_jwks_url": ..., '
        '"subscriber_key": ..., "subscriber_alg": ..., "subscriber_jwks_url": ...}]} '
        "(a key '@FILE' is read from FILE, relative to the JSON file)",
    )
    add(
        "--resource-identifier",
        metavar="URL",
        help="the hub's resource identifier, which tokens must hold in 'aud' (default: "
        "derived per request, scheme://host/.well-known/mercure); one ending in "
        "/.well-known/mercure is also the base of relative URL Patterns",
    )
    add(
        "--public-urls",
        default="",
        metavar="URL[,URL...]",
        help="the origins the hub answers on (e.g. https://hub.example.com); requests for "
        "any other get 421 (default: any)",
    )
    add(
        "--protocol-version-compatibility",
        type=int,
        metavar="8",
        help="8: serve Mercure 0.x clients (topic=, the mercure claim, tokens in the query "
        "or the mercureAuthorization cookie) beside 1.0 ones, relaxing token checks for "
        "every token as the Go hub does (default: Mercure 1.0 only; env "
        "MERCURE_PROTOCOL_VERSION_COMPATIBILITY)",
    )
    add("--max-selectors", type=int, default=100, help="topic selectors per subscription")
    add("--max-selector-length", type=int, default=4096, help="characters per topic selector")
    add(
        "--max-topic-length",
        type=int,
        default=4096,
        help="UTF-8 bytes per published topic (400 past it; URL Pattern matching time grows "
        "with it)",
    )
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


def _demo_keys(
    args: argparse.Namespace, env: dict[str, str], publisher: str | None, subscriber: str | None
) -> tuple[str | None, str | None]:
    """``--demo``: the public development key (``skipfilter token --dev``'s, loopback only)
    unless a publisher key is configured, and the publisher's secret for subscribers too
    unless theirs is (as the Go hub's quickstart shares one), so the demo page can mint the
    subscriber token it puts in the cookie."""
    publisher = publisher or env.get("MERCURE_PUBLISHER_JWT_KEY") or env.get("MERCURE_JWT_KEY")
    publisher = publisher or DEV_KEY
    configured = (
        subscriber
        or args.subscriber_jwks_url
        or env.get("MERCURE_SUBSCRIBER_JWT_KEY")
        or env.get("MERCURE_JWT_KEY")
        or env.get("MERCURE_SUBSCRIBER_JWKS_URL")
    )
    alg = (
        args.publisher_jwt_alg or env.get("MERCURE_PUBLISHER_JWT_ALG") or env.get("MERCURE_JWT_ALG")
    )
    if not configured and (alg or "HS256").startswith("HS"):
        subscriber = publisher
    return publisher, subscriber


def settings_from_args(args: argparse.Namespace, env: dict[str, str] | None = None) -> HubSettings:
    """Merge flags over the MERCURE_* environment; in demo mode fill in what is missing."""
    env = dict(os.environ if env is None else env)
    publisher_key = _key(args.publisher_jwt_key)
    subscriber_key = _key(args.subscriber_jwt_key)
    cookie_name = args.cookie_name
    if args.demo:
        publisher_key, subscriber_key = _demo_keys(args, env, publisher_key, subscriber_key)
        # over HTTPS the draft's __Secure- cookie works from any address: keep the default
        cookie_name = cookie_name or (None if getattr(args, "tls_cert", None) else DEMO_COOKIE)
    return HubSettings.from_env(
        env,
        publisher_key=publisher_key,
        publisher_alg=args.publisher_jwt_alg,
        subscriber_key=subscriber_key,
        subscriber_alg=args.subscriber_jwt_alg,
        anonymous=args.anonymous or args.demo,
        history_path=args.history,
        history_size=args.history_size,
        events_history_size=args.events_history_size,
        transport_url=args.transport,
        node_ttl=args.node_ttl,
        ring_size=args.ring_size,
        ring_bytes=args.ring_bytes,
        dispatch_timeout=args.dispatch_timeout,
        metrics_addr=args.metrics_addr,
        cors_origins=_origins(args.cors_origins),
        publish_origins=_origins(args.publish_origins),
        subscriptions=args.subscriptions,
        heartbeat=args.heartbeat,
        write_timeout=args.write_timeout,
        header_timeout=args.header_timeout,
        body_timeout=args.body_timeout,
        max_head_bytes=args.max_head_bytes,
        max_header_fields=args.max_header_fields,
        demo=args.demo,
        max_selectors=args.max_selectors,
        max_selector_length=args.max_selector_length,
        max_topic_length=args.max_topic_length,
        max_template_variables=args.max_template_variables,
        publisher_jwks_url=args.publisher_jwks_url,
        subscriber_jwks_url=args.subscriber_jwks_url,
        jwks_refresh=args.jwks_refresh,
        jwks_min_refresh=args.jwks_min_refresh,
        cookie_name=cookie_name,
        trusted_issuers=tuple(args.issuer) or None,
        issuers=read_issuers_file(args.issuers_file) if args.issuers_file else None,
        resource_identifier=args.resource_identifier,
        public_urls=_origins(args.public_urls) or None,
        protocol_version_compatibility=args.protocol_version_compatibility,
    )


def run(args: argparse.Namespace) -> int:
    """Start the hub (or ``--workers`` of them) and serve until interrupted."""
    from skipfilter.hub.demo import demo_issuer, demo_tokens
    from skipfilter.hub.preflight import preflight
    from skipfilter.hub.serve import (
        RESERVED_FILES,
        raise_open_files_limit,
        split_address,
        tls_of,
    )

    try:
        settings = settings_from_args(args)
        split_address(args.addr)
        tls = tls_of(args)
        if args.workers < 1:
            raise ValueError(f"--workers must be at least 1, got {args.workers}")
        if args.shutdown_timeout <= 0:
            raise ValueError(f"--shutdown-timeout must be positive, got {args.shutdown_timeout}")
        if args.workers > 1 and not settings.transport_url:
            raise ValueError(
                "--workers above 1 needs a shared transport: --transport redis://HOST:PORT/DB"
            )
        # every mistake said before the banner
        checked = preflight(settings, args.addr, "https" if tls else "http")
        settings = checked.settings
    except ValueError as exc:
        print(f"skipfilter hub: {exc}", file=sys.stderr)
        return 2
    before, after = raise_open_files_limit()
    raised = f" (raised from {before})" if after > before else ""
    room = (after - RESERVED_FILES) * args.workers
    each = f" ({args.workers} workers)" if args.workers > 1 else ""
    print(
        f"skipfilter hub: open files limit {after}{raised}: "
        f"room for about {room:,} connections{each}",
        flush=True,
    )
    host, _, port = args.addr.rpartition(":")
    host = host.strip("[]")
    shown = "localhost" if host in ("127.0.0.1", "0.0.0.0", "::", "") else host
    url = f"{'https' if tls else 'http'}://{shown}:{port}/"
    print(f"skipfilter hub: subscribe at {url.rstrip('/')}{HUB_PATH}", flush=True)
    for note in checked.notes:
        print(f"skipfilter hub: {note}", flush=True)
    if settings.transport_url:
        from skipfilter.hub.transports.shown import redacted

        print(f"skipfilter hub: transport {redacted(settings.transport_url)}", flush=True)
    if settings.metrics_addr:
        print(f"skipfilter hub: metrics at http://{settings.metrics_addr}/metrics", flush=True)
    if settings.demo:
        print(f"skipfilter hub: demo page at {url}", flush=True)
        audience = f"{url.rstrip('/')}{HUB_PATH}"
        token = demo_tokens(settings, demo_issuer(settings), audience).publisher
        if token:
            print(
                f"skipfilter hub: demo publisher access token for {audience}: {token}", flush=True
            )
        from skipfilter.hub.demo_hints import demo_commands

        cacert = getattr(args, "tls_cert", None)
        for line in demo_commands(settings, demo_issuer(settings), audience, token, cacert):
            print(f"skipfilter hub: {line}", flush=True)
    from skipfilter.hub.serve import serve_one

    if args.workers > 1:
        from skipfilter.hub.workers import supervise

        return supervise(args, settings, serve_one)
    return serve_one(args, settings, worker=0)


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``python -m skipfilter.hub.cli``."""
    parser = argparse.ArgumentParser(prog="skipfilter hub", description=__doc__)
    add_arguments(parser)
    return run(parser.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
