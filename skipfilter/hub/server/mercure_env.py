"""The Go Mercure hub's environment read as this hub's flags and settings.

Docker and Kubernetes deployments of the Go hub (a Caddy module) configure it with
``SERVER_NAME`` (the Caddy site address) and ``MERCURE_EXTRA_DIRECTIVES`` (lines of its
``mercure`` block); ``SKIPFILTER_ADDR`` is this hub's own listen address (HOST:PORT) and wins
over ``SERVER_NAME``. Each becomes a flag's default, so flags given on the command line win.
A directive this hub has maps to its setting; one it lacks is refused (ValueError naming it);
one about Caddy's or the Go hub's internals is ignored with a warning. docs/hub.md ("Moving
from the Go hub") is the full table.
"""

from __future__ import annotations

import argparse
import ipaddress
import os
import re
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from urllib.parse import urlsplit

from skipfilter.hub.server.flags import parse_duration
from skipfilter.hub.settings import HubSettings, IssuerSettings

#: This hub's own listen-address variable (HOST:PORT, as ``--addr``).
ADDR_ENV = "SKIPFILTER_ADDR"
SERVER_NAME_ENV = "SERVER_NAME"
DIRECTIVES_ENV = "MERCURE_EXTRA_DIRECTIVES"
#: Caddy's own variables in the Go hub's Caddyfile: nothing here reads them.
CADDY_ONLY_ENV = ("GLOBAL_OPTIONS", "CADDY_EXTRA_CONFIG", "CADDY_SERVER_EXTRA_DIRECTIVES")

_SIZE = re.compile(r"(\d+(?:\.\d*)?|\.\d+) ?([a-z]*)")
_SIZE_UNITS = {"": 1, "b": 1}
for _power, _letter in enumerate("kmgtpe", start=1):
    _SIZE_UNITS.update({_letter: 1000**_power, f"{_letter}b": 1000**_power})
    _SIZE_UNITS.update({f"{_letter}i": 1024**_power, f"{_letter}ib": 1024**_power})
_PLACEHOLDER = re.compile(
    r"\{env\.([A-Za-z_][A-Za-z0-9_]*)\}|\{\$([A-Za-z_][A-Za-z0-9_]*)(?::([^}]*))?\}"
)


def parse_size(text: str) -> int:
    """Bytes of a size as the Go hub reads ``max_request_body_size`` (``512KB`` = 512,000,
    ``1MiB`` = 1,048,576, ``100`` bytes); ValueError otherwise."""
    match = _SIZE.fullmatch(text.strip().lower())
    if match is None or match.group(2) not in _SIZE_UNITS:
        raise ValueError(f"{text!r} is not a size (like 512KB, 1MiB or 1048576)")
    return int(float(match.group(1)) * _SIZE_UNITS[match.group(2)])


@dataclass(frozen=True, slots=True)
class Directive:
    """One Caddyfile directive: its name, arguments, line and the block it opens."""

    name: str
    args: tuple[str, ...]
    line: int
    block: tuple[Directive, ...] = ()


def _tokens(text: str) -> list[tuple[str, int, bool]]:
    """Caddyfile tokens (text, line, quoted): whitespace separates them, ``"..."`` (with
    ``\\"``) and backticks quote, ``#`` at a token's start comments out the rest of the line."""
    found: list[tuple[str, int, bool]] = []
    i, line, n = 0, 1, len(text)
    while i < n:
        c = text[i]
        if c == "\n":
            line += 1
            i += 1
        elif c.isspace():
            i += 1
        elif c == "#":
            while i < n and text[i] != "\n":
                i += 1
        elif c in '"`':
            start, i, value = line, i + 1, []
            while i < n and text[i] != c:
                if c == '"' and text[i] == "\\" and i + 1 < n and text[i + 1] in '"\\':
                    i += 1
                line += text[i] == "\n"
                value.append(text[i])
                i += 1
            if i >= n:
                raise ValueError(f"{DIRECTIVES_ENV} line {start}: a quote is never closed")
            found.append(("".join(value), start, True))
            i += 1
        else:
            start = i
            while i < n and not text[i].isspace():
                i += 1
            found.append((text[start:i], line, False))
    return found


def parse_directives(text: str) -> tuple[Directive, ...]:
    """The directives of a ``mercure`` block's body: one per line, a trailing ``{`` opens a
    block that a ``}`` line closes. ValueError naming the line for unbalanced braces."""
    lines: list[list[tuple[str, int, bool]]] = []
    for token in _tokens(text):
        if lines and lines[-1][0][1] == token[1]:
            lines[-1].append(token)
        else:
            lines.append([token])

    def block(at: int, depth: int) -> tuple[tuple[Directive, ...], int]:
        found: list[Directive] = []
        while at < len(lines):
            words = lines[at]
            if [(w, q) for w, _, q in words] == [("}", False)]:
                if depth == 0:
                    raise ValueError(f"{DIRECTIVES_ENV} line {words[0][1]}: '}}' closes nothing")
                return tuple(found), at + 1
            opens = words[-1][0] == "{" and not words[-1][2]
            args = tuple(w for w, _, _ in words[1 : -1 if opens else None])
            inner: tuple[Directive, ...] = ()
            at += 1
            if opens:
                inner, at = block(at, depth + 1)
            found.append(Directive(words[0][0], args, words[0][1], inner))
        if depth:
            raise ValueError(f"{DIRECTIVES_ENV}: a '{{' block is never closed")
        return tuple(found), at

    return block(0, 0)[0]


def _substitute(text: str, env: Mapping[str, str]) -> str:
    """Caddy's ``{env.NAME}`` and ``{$NAME:default}`` placeholders, from ``env``."""

    def value(match: re.Match[str]) -> str:
        if match.group(1):
            return env.get(match.group(1), "")
        return env.get(match.group(2)) or match.group(3) or ""

    return _PLACEHOLDER.sub(value, text)


@dataclass(frozen=True, slots=True)
class SiteAddress:
    """``SERVER_NAME`` read as Caddy reads a site address: ``[scheme://]host[:port]``."""

    scheme: str | None
    host: str
    port: int | None

    @classmethod
    def parse(cls, text: str) -> SiteAddress:
        """One site address; ValueError naming what this hub cannot serve."""
        where = f"{SERVER_NAME_ENV} {text!r}"
        scheme, sep, rest = text.partition("://")
        if not sep:
            scheme, rest = "", text
        if scheme not in ("", "http", "https"):
            raise ValueError(f"{where}: the scheme must be http:// or https://")
        if "/" in rest:
            raise ValueError(f"{where}: a site address with a path is not supported")
        if "*" in rest:
            raise ValueError(f"{where}: wildcard names are not supported; use --public-urls")
        try:
            parts = urlsplit(f"//{rest}")
            port = parts.port
        except ValueError:
            raise ValueError(f"{where}: the port must be a number from 1 to 65535") from None
        if port == 0 or parts.username or parts.password:
            raise ValueError(f"{where}: expected [http(s)://]HOST[:PORT] or :PORT")
        return cls(scheme or None, parts.hostname or "", port)

    def scheme_for(self, tls: bool) -> str:
        """https with --tls-cert (this hub never obtains certificates), else http; port 80
        is plain HTTP as in Caddy. ValueError for https:// without certificate files."""
        if self.scheme == "https" and not tls:
            raise ValueError(
                f"{SERVER_NAME_ENV} https://{self.host}: this hub obtains no certificate: "
                "give --tls-cert and --tls-key, or use http://"
            )
        if self.scheme == "http" or self.port == 80:
            return "http"
        return "https" if tls else "http"

    def listen(self, tls: bool) -> str:
        """The HOST:PORT to bind: a bare host is port 443 with TLS, else 80 (Caddy's
        ports); an IP or ``localhost`` binds itself, a name or no host every interface."""
        scheme = self.scheme_for(tls)
        port = self.port or (443 if scheme == "https" else 80)
        if self.host == "localhost":
            return f"localhost:{port}"
        try:
            address = ipaddress.ip_address(self.host)
        except ValueError:
            return f"0.0.0.0:{port}"
        return f"[{address}]:{port}" if address.version == 6 else f"{address}:{port}"

    def public_url(self, tls: bool) -> str | None:
        """The origin clients use, for a name or an address other machines reach (None for
        no host or a loopback one: the hub then knows itself from its address)."""
        if not self.host or self.host == "localhost":
            return None
        try:
            if ipaddress.ip_address(self.host).is_loopback:
                return None
        except ValueError:
            pass
        scheme = self.scheme_for(tls)
        host = f"[{self.host}]" if ":" in self.host else self.host
        default = 443 if scheme == "https" else 80
        return f"{scheme}://{host}" + (f":{self.port}" if self.port not in (None, default) else "")


class SiteDefault(str):
    """``--addr``'s default when it comes from ``SERVER_NAME``: its text is the plain-HTTP
    address (for ``--help``); the port and scheme are settled once TLS is known."""

    site: SiteAddress


@dataclass
class MercureEnv:
    """What the Go hub's environment asks for, sorted by how this hub takes it."""

    #: Flag defaults (argparse dests): a flag on the command line still wins.
    defaults: dict[str, object] = field(default_factory=dict)
    #: MERCURE_* variables the settings already read (keys), from directives.
    env: dict[str, str] = field(default_factory=dict)
    #: Settings with no flag (``max_body``, ``cache_size``).
    changes: dict[str, object] = field(default_factory=dict)
    issuers: list[IssuerSettings] = field(default_factory=list)
    #: What was ignored and why, said at start.
    warnings: list[str] = field(default_factory=list)

    def applied(self, settings: HubSettings) -> HubSettings:
        """``settings`` with the directives' values that no flag carries."""
        return settings.with_changes(**self.changes) if self.changes else settings


def _arity(d: Directive, least: int, most: int | None) -> None:
    where = f"{DIRECTIVES_ENV} line {d.line}: {d.name}"
    if d.block and d.name not in ("transport", "issuer", "publisher", "subscriber"):
        raise ValueError(f"{where} takes no block")
    if len(d.args) < least:
        raise ValueError(f"{where} needs {'an argument' if least == 1 else f'{least} arguments'}")
    if most is not None and len(d.args) > most:
        extra = "no argument" if most == 0 else f"at most {most} argument{'s' * (most > 1)}"
        raise ValueError(f"{where} takes {extra}, got {' '.join(d.args)!r}")


def _value(d: Directive, parse: Callable[[str], object]) -> object:
    _arity(d, 1, 1)
    try:
        return parse(d.args[0])
    except ValueError as exc:
        raise ValueError(f"{DIRECTIVES_ENV} line {d.line}: {d.name} {exc}") from None


def _verifier(d: Directive, role: str) -> dict[str, str]:
    """A ``publisher``/``subscriber`` block of an ``issuer``: ``jwt KEY [ALG]`` or
    ``jwks_uri URL``."""
    found: dict[str, str] = {}
    for inner in d.block:
        where = f"{DIRECTIVES_ENV} line {inner.line}: {inner.name}"
        if inner.name == "jwt":
            _arity(inner, 1, 2)
            found[f"{role}_key"] = inner.args[0]
            if len(inner.args) == 2:
                found[f"{role}_alg"] = inner.args[1]
        elif inner.name == "jwks_uri":
            _arity(inner, 1, None)
            if len(inner.args) > 1:
                raise ValueError(
                    f"{where}: this hub pins no algorithm list for a JWK Set (each key checks "
                    "the asymmetric algorithms it fits, or its own 'alg'): drop "
                    f"{' '.join(inner.args[1:])!r} or set 'alg' on the keys"
                )
            found[f"{role}_jwks_url"] = inner.args[0]
        else:
            raise ValueError(f"{where}: not a {d.name} directive (jwt or jwks_uri)")
    if f"{role}_key" in found and f"{role}_jwks_url" in found:
        raise ValueError(
            f"{DIRECTIVES_ENV} line {d.line}: {d.name}: jwt and jwks_uri exclude each other"
        )
    return found


def _issuer(d: Directive) -> IssuerSettings:
    _arity(d, 1, 1)
    values: dict[str, object] = {"issuer": d.args[0]}
    for inner in d.block:
        if inner.name == "authorization_server":
            _arity(inner, 0, 0)
            values["authorization_server"] = True
        elif inner.name in ("publisher", "subscriber"):
            _arity(inner, 0, 0)
            values.update(_verifier(inner, inner.name))
        else:
            raise ValueError(
                f"{DIRECTIVES_ENV} line {inner.line}: {inner.name}: not an issuer directive "
                "(authorization_server, publisher, subscriber)"
            )
    try:
        return IssuerSettings(**values)  # type: ignore[arg-type]
    except ValueError as exc:
        raise ValueError(f"{DIRECTIVES_ENV} line {d.line}: {exc}") from None


def _transport(d: Directive, found: MercureEnv) -> None:
    """``transport local`` / ``transport_url local://``: no durable history; Redis URLs go
    to this hub's Redis transport; Bolt is refused (this hub's history file is SQLite)."""
    _arity(d, 1, 1)
    where = f"{DIRECTIVES_ENV} line {d.line}: {d.name} {d.args[0]}"
    kind = d.args[0].split("://")[0] if d.name == "transport_url" else d.args[0]
    if kind == "local" and not d.block:
        found.defaults["history"] = ":memory:"
    elif kind == "bolt":
        raise ValueError(
            f"{where}: this hub's durable history is an SQLite file, not a Bolt one: "
            "use --history PATH (and --history-size N)"
        )
    elif d.name == "transport_url" and kind in ("redis", "rediss", "redis+sentinel"):
        found.defaults["transport"] = d.args[0]
    else:
        raise ValueError(
            f"{where}: not a transport this hub has (local; Redis as --transport redis://...)"
        )


#: Directives about the Go hub's or Caddy's internals: ignored, with the reason said.
_IGNORED = {
    "name": "it names one of several hubs in one Caddy; this process serves one hub",
    "subscriber_list_cache_size": "a cache of the Go hub's; subscriber lists are bitmaps here",
    "topic_selector_cache": "a cache of the Go hub's; matching is memoized by the index here",
    "lru_cache": "a cache of the Go hub's; matching is memoized by the index here",
    "debugger": "this hub has no debugger page: watch a production hub through /metrics "
    "(--metrics-addr), try things on the demo page (playground, --demo) on loopback",
    "ui": "this hub has no debugger page: watch a production hub through /metrics "
    "(--metrics-addr), try things on the demo page (playground, --demo) on loopback",
}
_SWITCHES = {"anonymous": "anonymous", "subscriptions": "subscriptions"}
_DURATIONS = ("heartbeat", "write_timeout", "dispatch_timeout")
_LISTS = {"cors_origins": "cors_origins", "publish_origins": "publish_origins"}
_LISTS["public_urls"] = "public_urls"
_VALUES = {
    "cookie_name": "cookie_name",
    "resource_identifier": "resource_identifier",
    "publisher_jwks_url": "publisher_jwks_url",
    "subscriber_jwks_url": "subscriber_jwks_url",
}
#: Every directive read here, for the refusal of any other.
KNOWN = sorted(
    {*_IGNORED, *_SWITCHES, *_DURATIONS, *_LISTS, *_VALUES}
    | {"playground", "demo", "max_request_body_size", "publisher_jwt", "subscriber_jwt"}
    | {"protocol_version_compatibility", "transport", "transport_url", "topic_matcher_cache"}
    | {"issuer"}
)


def _directive(d: Directive, found: MercureEnv) -> None:
    """Map one directive onto ``found``; ValueError for one this hub cannot honour."""
    where = f"{DIRECTIVES_ENV} line {d.line}: {d.name}"
    if d.name in _SWITCHES:
        _arity(d, 0, 0)
        found.defaults[_SWITCHES[d.name]] = True
    elif d.name in ("playground", "demo"):
        _arity(d, 0, 0)
        found.defaults["demo"] = True
    elif d.name in _DURATIONS:
        seconds = _value(d, parse_duration)
        found.defaults[d.name] = seconds
    elif d.name in _LISTS:
        _arity(d, 1, None)
        found.defaults[_LISTS[d.name]] = " ".join(d.args)
    elif d.name in _VALUES:
        found.defaults[_VALUES[d.name]] = _value(d, str)
    elif d.name == "max_request_body_size":
        size = _value(d, parse_size)
        if size == 0:
            raise ValueError(
                f"{where} 0 (no limit, left to a proxy) is not supported: this hub always "
                "bounds a request body; give a size such as 1MiB"
            )
        found.changes["max_body"] = size
    elif d.name in ("publisher_jwt", "subscriber_jwt"):
        _arity(d, 1, 2)
        role = d.name.removesuffix("_jwt").upper()
        found.env[f"MERCURE_{role}_JWT_KEY"] = d.args[0]
        if len(d.args) == 2:
            found.env[f"MERCURE_{role}_JWT_ALG"] = d.args[1]
    elif d.name == "protocol_version_compatibility":
        version = _value(d, str)
        if version != "8":
            raise ValueError(
                f"{where} {version}: this hub serves Mercure 0.x clients as draft 8 (8); "
                "leave it out for Mercure 1.0 only"
            )
        found.defaults["protocol_version_compatibility"] = 8
    elif d.name in ("transport", "transport_url"):
        _transport(d, found)
    elif d.name == "topic_matcher_cache":
        entries = _value(d, int)
        assert isinstance(entries, int)
        if entries > 0:
            found.changes["cache_size"] = entries
        else:
            found.warnings.append(f"{where} {entries} ignored: this hub's matching memo stays on")
    elif d.name == "issuer":
        found.issuers.append(_issuer(d))
    elif d.name in _IGNORED:
        found.warnings.append(f"{where} ignored: {_IGNORED[d.name]}")
    else:
        raise ValueError(
            f"{where}: not a directive this hub has (it reads {', '.join(KNOWN)}; "
            "docs/hub.md maps each Go hub directive)"
        )


def read_environment(env: Mapping[str, str]) -> MercureEnv:
    """The Go hub's variables in ``env`` as this hub's defaults; ValueError (one line,
    naming the variable and the line) for what it cannot honour."""
    found = MercureEnv()
    for d in parse_directives(_substitute(env.get(DIRECTIVES_ENV, ""), env)):
        _directive(d, found)
    if env.get(ADDR_ENV):
        found.defaults["addr"] = env[ADDR_ENV]
    elif env.get(SERVER_NAME_ENV, "").strip():
        names = re.split(r"[,\s]+", env[SERVER_NAME_ENV].strip())
        sites = [SiteAddress.parse(name) for name in names if name]
        if len(set(sites)) > 1:
            raise ValueError(
                f"{SERVER_NAME_ENV} {env[SERVER_NAME_ENV]!r}: this hub listens on one address; "
                "give one site address (and --public-urls for the other names)"
            )
        addr = SiteDefault(sites[0].listen(tls=sites[0].scheme == "https"))
        addr.site = sites[0]
        found.defaults["addr"] = addr
    for name in CADDY_ONLY_ENV:
        if env.get(name, "").strip():
            found.warnings.append(f"{name} ignored: it configures Caddy, which this hub is not")
    return found


def declare(parser: argparse.ArgumentParser, env: Mapping[str, str] | None = None) -> None:
    """Make the environment's values ``parser``'s defaults (flags given still win); a
    mistake in it is kept for ``resolve`` to refuse, so ``--help`` still works."""
    try:
        found = read_environment(os.environ if env is None else env)
    except ValueError as exc:
        parser.set_defaults(mercure_env=exc)
        return
    parser.set_defaults(**found.defaults, mercure_issuers=tuple(found.issuers), mercure_env=found)


def resolve(args: argparse.Namespace, warn: Callable[[str], None] | None = None) -> MercureEnv:
    """The environment ``declare`` read for these ``args``: ValueError for its mistake;
    ``--addr`` (and ``--public-urls``) settled from ``SERVER_NAME`` now that TLS is known;
    each ignored directive said through ``warn`` (stderr)."""
    found = getattr(args, "mercure_env", None) or MercureEnv()
    if isinstance(found, ValueError):
        raise found
    tls = bool(getattr(args, "tls_cert", None))
    if isinstance(args.addr, SiteDefault):
        site = args.addr.site
        args.addr = site.listen(tls)
        url = site.public_url(tls)
        if url and not args.public_urls and not args.resource_identifier:
            args.public_urls = url
    say = warn or (lambda line: print(f"skipfilter hub: {line}", file=sys.stderr, flush=True))
    for line in found.warnings:
        say(line)
    return found


def environment_for(found: MercureEnv, env: Mapping[str, str] | None = None) -> dict[str, str]:
    """``env`` with the MERCURE_* variables the directives set (keys) laid over it."""
    return {**(os.environ if env is None else env), **found.env}
