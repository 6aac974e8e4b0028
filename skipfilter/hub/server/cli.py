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
from skipfilter.hub.server.address import parse_address
from skipfilter.hub.server.flags import DefaultsFormatter, duration
from skipfilter.hub.server.mercure_env import declare as declare_mercure_environment
from skipfilter.hub.server.mercure_env import environment_for
from skipfilter.hub.server.mercure_env import resolve as resolve_mercure_environment
from skipfilter.hub.server.state import STATE_HOME_SHOWN, default_history
from skipfilter.hub.settings import (
    DEMO_COOKIE,
    DEV_KEY,
    SHUTDOWN_TIMEOUT,
    HubSettings,
    read_issuers_file,
)

DESCRIPTION = (
    "Run the Mercure hub. Flags mirror the Go hub's configuration; keys and algorithms also "
    "come from its environment variables (MERCURE_PUBLISHER_JWT_KEY, "
    "MERCURE_SUBSCRIBER_JWT_KEY, ..._ALG): flags win."
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Declare the hub's flags on ``parser`` (shared by ``skipfilter hub`` and ``-m``), in
    groups, each line ending with its default; durations take Mercure's syntax (``40s``)."""
    parser.formatter_class = DefaultsFormatter
    parser.description = DESCRIPTION
    listening = parser.add_argument_group("listening")
    add = listening.add_argument
    add(
        "--addr",
        default="127.0.0.1:3000",
        metavar="HOST:PORT",
        help="where to listen: HOST:PORT, [IPv6]:PORT, or :PORT (or PORT) for every interface",
    )
    add(
        "--workers",
        type=int,
        default=1,
        help="hub processes sharing --addr (one listening socket) and the history (the "
        "SQLite file, or --transport); SIGHUP replaces them one at a time",
    )
    add(
        "--tls-cert",
        metavar="PEM",
        help="serve HTTPS on --addr with this certificate chain (with --tls-key), so "
        "browsers keep the __Secure- cookie; /metrics stays plain HTTP",
    )
    add("--tls-key", metavar="PEM", help="the private key of --tls-cert")
    add(
        "--metrics-addr",
        metavar="HOST:PORT",
        help="serve /metrics here (not on --addr); worker i on PORT + i",
    )
    add(
        "--streams",
        choices=("native", "asgi"),
        default="native",
        help="write streams straight to sockets (native, needs httptools) or through ASGI",
    )
    add(
        "--shutdown-timeout",
        type=duration(positive=True),
        default=SHUTDOWN_TIMEOUT,
        metavar="DURATION",
        help="on SIGTERM, time to drain (end streams, finish accepted publishes) before exiting",
    )
    add("--log-level", default="info", help="uvicorn log level")
    add(
        "--demo",
        action="store_true",
        help="demo page at / (Mercure 1.0: subscribe, publish, watch); anonymous "
        "subscribers, the public development key for both roles unless keys are given (so "
        "loopback only), the issuer https://localhost unless --issuer, cookie "
        "mercure_access_token unless --cookie-name",
    )

    auth = parser.add_argument_group(
        "tokens and identity",
        "keys also come from MERCURE_PUBLISHER_JWT_KEY, MERCURE_SUBSCRIBER_JWT_KEY (and _ALG); "
        "flags win",
    )
    add = auth.add_argument
    add(
        "--anonymous",
        action="store_true",
        help="allow subscribers without a token (they get public updates only)",
    )
    add(
        "--publisher-jwt-key",
        metavar="KEY",
        help="HMAC secret or PEM public key; '@FILE' reads a file",
    )
    add("--publisher-jwt-alg", metavar="ALG", help="HS256 (the default for a secret), RS256, ...")
    add(
        "--subscriber-jwt-key",
        metavar="KEY",
        help="HMAC secret or PEM public key; '@FILE' reads a file",
    )
    add("--subscriber-jwt-alg", metavar="ALG", help="HS256 (the default for a secret), RS256, ...")
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
        type=duration(positive=True),
        default=3600.0,
        metavar="DURATION",
        help="time between JWK Set refetches",
    )
    add(
        "--jwks-min-refresh",
        type=duration(),
        default=30.0,
        metavar="DURATION",
        help="least time between refetches caused by unknown kids",
    )
    add(
        "--issuer",
        action="append",
        default=[],
        metavar="URL",
        help="a trusted token issuer, the exact 'iss' of its tokens; with one, the "
        "--publisher-*/--subscriber-* keys are its keys (env MERCURE_TRUSTED_ISSUERS, "
        "space-separated); repeatable",
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
        help="the hub's resource identifier, which tokens must hold in 'aud' (without it and "
        "--public-urls: http://localhost:PORT/.well-known/mercure on a loopback --addr); one "
        "ending in /.well-known/mercure is also the base of relative URL Patterns",
    )
    add(
        "--public-urls",
        default="",
        metavar="URL[,URL...]",
        help="the origins the hub answers on (e.g. https://hub.example.com); requests for "
        "any other get 421 (none given: any)",
    )
    add(
        "--protocol-version-compatibility",
        type=int,
        metavar="8",
        help="8: serve Mercure 0.x clients (topic=, the mercure claim, tokens in the query "
        "or the mercureAuthorization cookie) beside 1.0 ones, relaxing token checks for "
        "every token as the Go hub does (none given: Mercure 1.0 only; env "
        "MERCURE_PROTOCOL_VERSION_COMPATIBILITY)",
    )

    browsers = parser.add_argument_group("browsers: CORS and cookies")
    add = browsers.add_argument
    add("--cors-origins", default="", help="space/comma separated origins allowed by CORS")
    add(
        "--publish-origins",
        default="",
        help="origins allowed to publish with the cookie ('*' for any)",
    )
    add(
        "--cookie-name",
        metavar="NAME",
        help="cookie holding the access token (none given: __Secure-mercure_access_token; "
        "browsers keep __Secure- cookies only over https; compatibility mode also reads "
        "0.x's mercureAuthorization)",
    )
    add("--subscriptions", action="store_true", help="subscription events and API")

    history = parser.add_argument_group("history and transport")
    add = history.add_argument
    add(
        "--history",
        metavar="PATH",
        help="SQLite file for durable history; ':memory:' for none (none given: "
        f"{STATE_HOME_SHOWN}/hub-PORT.sqlite3, one per port; the start says which)",
    )
    add("--history-size", type=int, default=100_000, help="updates kept for replay")
    add(
        "--events-history-size",
        type=int,
        default=10_000,
        help="subscription events kept for replay, apart from the updates",
    )
    add(
        "--transport",
        metavar="URL",
        help="redis://HOST:PORT/DB shares updates with other hub nodes through a Redis Stream; "
        "redis+sentinel://H1:P1,H2:P2,H3:P3/SERVICE/DB through a Sentinel set, acknowledged "
        "once a replica holds them (needs the redis extra; none given: the SQLite --history; "
        "env MERCURE_TRANSPORT_URL)",
    )
    add(
        "--node-ttl",
        type=duration(positive=True),
        default=15.0,
        metavar="DURATION",
        help=(
            "with --transport redis: time before a silent node's subscriptions end; "
            "local --workers look for killed ones every third of it"
        ),
    )
    add(
        "--ring-size",
        type=int,
        default=4096,
        help="updates kept in memory; slower subscribers are disconnected",
    )
    add("--ring-bytes", type=int, default=64 << 20, help="bytes the in-memory ring may hold")

    timing = parser.add_argument_group(
        "timeouts", "durations: 40s, 5m, 1h30m, 500ms, or plain seconds; 0 turns one off"
    )
    add = timing.add_argument
    add(
        "--heartbeat",
        type=duration(),
        default=40.0,
        metavar="DURATION",
        help="time between heartbeats",
    )
    add(
        "--dispatch-timeout",
        type=duration(),
        default=5.0,
        metavar="DURATION",
        help="time a subscriber's socket may stay full before it is dropped",
    )
    add(
        "--write-timeout",
        type=duration(),
        default=600.0,
        metavar="DURATION",
        help="time a stream may stay open; clients then reconnect and resume",
    )
    add(
        "--header-timeout",
        type=duration(),
        default=10.0,
        metavar="DURATION",
        help="time a connection may take to send a request's line and headers",
    )
    add(
        "--body-timeout",
        type=duration(),
        default=10.0,
        metavar="DURATION",
        help="time a request's body may take to arrive, else 408",
    )

    limits = parser.add_argument_group("limits")
    add = limits.add_argument
    add(
        "--max-head-bytes",
        type=int,
        default=1 << 20,
        help="largest request line and header fields together, in bytes, else 431",
    )
    add(
        "--max-header-fields",
        type=int,
        default=100,
        help="most header fields in one request, else 431",
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
    declare_mercure_environment(parser)  # SERVER_NAME, MERCURE_EXTRA_DIRECTIVES: defaults


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
        history_path=args.history or default_history(parse_address(args.addr).port, env),
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
        issuers=(read_issuers_file(args.issuers_file) if args.issuers_file else ())
        + getattr(args, "mercure_issuers", ())
        or None,
        resource_identifier=args.resource_identifier,
        public_urls=_origins(args.public_urls) or None,
        protocol_version_compatibility=args.protocol_version_compatibility,
    )


def run(args: argparse.Namespace) -> int:
    """Start the hub (or ``--workers`` of them) and serve until interrupted."""
    from skipfilter.hub.http.demo import demo_issuer, demo_tokens
    from skipfilter.hub.server.address import bound
    from skipfilter.hub.server.preflight import preflight
    from skipfilter.hub.server.serve import (
        RESERVED_FILES,
        bind_listeners,
        raise_open_files_limit,
        tls_of,
    )

    settings: HubSettings | None = None
    try:
        environment = resolve_mercure_environment(args)  # its mistakes, --addr from SERVER_NAME
        settings = environment.applied(settings_from_args(args, environment_for(environment)))
        tls = tls_of(args)
        if args.workers < 1:
            raise ValueError(f"--workers must be at least 1, got {args.workers}")
        if args.shutdown_timeout <= 0:
            raise ValueError(f"--shutdown-timeout must be positive, got {args.shutdown_timeout}")
        if args.history is None and not settings.transport_url:
            settings = _default_history(settings)
        if args.workers > 1:
            settings = _shared_history(settings)
        # every mistake said before the banner
        checked = preflight(settings, args.addr, "https" if tls else "http")
        settings = checked.settings
        # bound before anything is said: a port in use is the one line, never after a banner
        listener, metrics = bind_listeners(args.addr, settings.metrics_addr, args.workers)
    except (ValueError, ImportError) as exc:  # ImportError: the transport's extra is missing
        print(f"skipfilter hub: {_transport_named(exc, settings)}", file=sys.stderr)
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
    scheme = "https" if tls else "http"
    print(f"skipfilter hub: listening on {bound(listener, scheme)}", flush=True)
    host, port = listener.getsockname()[:2]
    shown = "localhost" if host in ("127.0.0.1", "0.0.0.0", "::") else _literal(host)
    url = f"{scheme}://{shown}:{port}/"
    print(f"skipfilter hub: subscribe at {url.rstrip('/')}{HUB_PATH}", flush=True)
    for note in checked.notes:
        print(f"skipfilter hub: {note}", flush=True)
    if not settings.transport_url:
        where = settings.history_path
        kept = "none kept (in memory)" if where == ":memory:" else os.path.abspath(where)
        print(f"skipfilter hub: history {kept}", flush=True)
    if settings.transport_url:
        from skipfilter.hub.transports.shown import redacted

        print(f"skipfilter hub: transport {redacted(settings.transport_url)}", flush=True)
    for index, sock in enumerate(metrics):  # as bound: port 0 is any free port
        whose = f" (worker {index})" if len(metrics) > 1 else ""
        shown = f"{_literal(sock.getsockname()[0])}:{sock.getsockname()[1]}"
        print(f"skipfilter hub: metrics at http://{shown}/metrics{whose}", flush=True)
    if settings.demo:
        print(f"skipfilter hub: demo page at {url}", flush=True)
        audience = f"{url.rstrip('/')}{HUB_PATH}"
        token = demo_tokens(settings, demo_issuer(settings), audience).publisher
        if token:
            print(
                f"skipfilter hub: demo publisher access token for {audience}: {token}", flush=True
            )
        from skipfilter.hub.server.demo_hints import demo_commands

        cacert = getattr(args, "tls_cert", None)
        for line in demo_commands(settings, demo_issuer(settings), audience, token, cacert):
            print(f"skipfilter hub: {line}", flush=True)
    from skipfilter.hub.server.serve import serve_one

    if args.workers > 1:
        from skipfilter.hub.server.workers import supervise

        return supervise(args, settings, serve_one, (listener, metrics))
    return serve_one(
        args, settings, worker=0, shared=listener, metrics=metrics[0] if metrics else None
    )


def _literal(host: str) -> str:
    return f"[{host}]" if ":" in host else host


def _default_history(settings: HubSettings) -> HubSettings:
    """No ``--history``: the port's file in the user's state directory (``state.py``), its
    folder made."""
    path = Path(settings.history_path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ValueError(
            f"cannot make {path.parent} for the history ({exc.strerror}): "
            "give --history PATH (or ':memory:')"
        ) from None
    return settings.with_changes(history_path=str(path))


def _shared_history(settings: HubSettings) -> HubSettings:
    """Several workers on a SQLite history share its file (``history_shared``); one kept
    in memory cannot be shared: a ValueError saying so."""
    from skipfilter.hub.transports.sqlite_shared import memory_refused

    url = settings.transport_url
    if url and not url.startswith("sqlite://"):
        return settings  # Redis: shared already
    refused = memory_refused(url[len("sqlite://") :] if url else settings.history_path)
    if refused is not None:
        raise ValueError(refused)
    return settings.with_changes(history_shared=True)


def _transport_named(exc: Exception, settings: HubSettings | None) -> str:
    """A transport's missing extra (ImportError) named with the flag it came from."""
    if isinstance(exc, ImportError) and settings is not None and settings.transport_url:
        from skipfilter.hub.transports.shown import redacted

        return f"--transport {redacted(settings.transport_url)}: {exc}"
    return str(exc)


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``python -m skipfilter.hub.server.cli``."""
    parser = argparse.ArgumentParser(prog="skipfilter hub")
    add_arguments(parser)
    return run(parser.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
