"""Publisher and subscriber keys from a JWK Set URL (what Keycloak, Cognito, Auth0... publish).

A token names its key by ``kid``. The set is fetched on first use and every ``refresh``
seconds; a ``kid`` the hub does not know triggers a refetch, at most one per ``min_refresh``
seconds, so a flood of made-up kids costs one fetch, not one each. Concurrent askers share
the fetch in flight. A failed fetch keeps the last good keys and logs why; a key no longer
published is refused once a fetch has dropped it (verified tokens are then checked again).

Fetching never blocks the event loop: urllib runs in a thread of the set's own small
pool (never the loop's default executor), bounded in size (``max_bytes``) and, as a whole,
in time: at ``timeout`` the loop shuts the fetch's sockets down, so a server that sends
its headers a byte a second cannot hold a thread past it. Redirects go to http(s) only.
Only asymmetric keys count: a published HMAC secret would let anyone sign.

A ``file://`` URL (the Go hub's keys mounted as a file) is read when the hub starts, so a
missing or broken file stops it there, and again at each refresh, so rotating the file's
keys needs no restart.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import http.client
import json
import logging
import socket
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import jwt

from skipfilter.hub.auth.verify import (
    AuthError,
    Claims,
    TokenCache,
    TokenSource,
    TokenVerifier,
    Verifier,
    decode_claims,
    unverified_header,
)
from skipfilter.hub.keys import ASYMMETRIC_ALGORITHMS, describe_key, key_algorithms
from skipfilter.hub.refusal import HubRefusal
from skipfilter.hub.settings import HubSettings, Role, role_keys

log = logging.getLogger("skipfilter.hub.auth.jwks")

#: The PyJWT algorithm whose ``from_jwk`` reads each key type (the key decides the rest).
_READERS = {"RSA": "RS256", "EC": "ES256", "OKP": "EdDSA"}


class JwksError(HubRefusal):
    """A JWK Set that could not be fetched or read; the message says why. A token it should
    check cannot be: 503 (``JwksKeys`` says so as an ``AuthError``)."""

    status = 503


@dataclass(frozen=True, slots=True)
class Jwk:
    """One usable public key of a set and the algorithms it may check."""

    kid: str | None
    key: Any
    algorithms: frozenset[str]
    #: The key's JSON, to tell whether a refetch changed anything.
    source: str


def _jwk(data: object) -> Jwk:
    """Read one key of a set; JwksError says why it cannot be used."""
    if not isinstance(data, dict):
        raise JwksError("not an object")
    kid, kty, alg = data.get("kid"), data.get("kty"), data.get("alg")
    if kid is not None and not isinstance(kid, str):
        raise JwksError("'kid' is not a string")
    if data.get("use", "sig") != "sig":
        raise JwksError(f"'use' is {data.get('use')!r}, not 'sig'")
    if kty == "oct":
        raise JwksError("a symmetric key (kty 'oct'): a published secret would let anyone sign")
    if "d" in data:
        raise JwksError("it holds a private key; a JWK Set must publish public keys only")
    if kty not in _READERS:
        raise JwksError(f"unsupported key type {kty!r}")
    try:
        key = jwt.PyJWK(data, algorithm=_READERS[kty]).key
    except (jwt.PyJWTError, ValueError, TypeError, KeyError) as exc:
        raise JwksError(f"unreadable {kty} key ({exc})") from exc
    algorithms = key_algorithms(key)
    if not algorithms:
        raise JwksError(f"an {describe_key(key)} fits no supported algorithm")
    if alg is not None:
        if alg not in algorithms:
            raise JwksError(f"'alg' {alg!r} does not fit an {describe_key(key)}")
        algorithms = frozenset({alg})
    return Jwk(kid, key, algorithms, json.dumps(data, sort_keys=True))


def parse_jwks(body: bytes) -> tuple[tuple[Jwk, ...], list[str]]:
    """The usable keys of a JWK Set document and why the others were skipped.

    Raises JwksError when the document is not a JWK Set or has no usable key (a set that
    would refuse every token is taken for a broken deployment, not a rotation).
    """
    try:
        document = json.loads(body)
    except ValueError as exc:
        raise JwksError(f"not JSON ({exc})") from exc
    if not isinstance(document, dict) or not isinstance(document.get("keys"), list):
        raise JwksError('not a JWK Set: no "keys" array')
    keys, skipped = [], []
    for i, data in enumerate(document["keys"]):
        try:
            keys.append(_jwk(data))
        except JwksError as exc:
            kid = data.get("kid") if isinstance(data, dict) else None
            skipped.append(f"key {kid or i!r}: {exc}")
    if not keys:
        raise JwksError("no usable signing key" + "".join(f"; {s}" for s in skipped[:5]))
    return tuple(keys), skipped


class _HttpOnlyRedirects(urllib.request.HTTPRedirectHandler):
    """Follow redirects to http(s) only (urllib would also follow one to ftp)."""

    def redirect_request(
        self,
        req: urllib.request.Request,
        fp: Any,
        code: int,
        msg: str,
        headers: Any,
        newurl: str,
    ) -> urllib.request.Request | None:
        if not newurl.lower().startswith(("http://", "https://")):
            raise JwksError(f"redirected to a non-HTTP URL {newurl[:100]!r}")
        return super().redirect_request(req, fp, code, msg, headers, newurl)


class FetchSockets:
    """The sockets one fetch opened: ``close()`` ends every read blocked on them at once
    (what bounds a fetch as a whole, since socket timeouts bound each read only)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._open: list[socket.socket] = []
        self.closed = False

    def add(self, sock: socket.socket) -> socket.socket:
        with self._lock:
            if self.closed:
                sock.close()
                raise TimeoutError
            self._open.append(sock)
        return sock

    def close(self) -> None:
        with self._lock:
            self.closed = True
            for sock in self._open:
                with contextlib.suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)


def _tracked(base: type[http.client.HTTPConnection]) -> Any:
    """``base`` registering each socket it opens (before TLS or a proxy tunnel) with the
    fetch's FetchSockets."""

    class Tracked(base):  # type: ignore[valid-type,misc]
        def __init__(self, *args: Any, sockets: FetchSockets, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)

            def connect(*a: Any, **k: Any) -> socket.socket:
                return sockets.add(socket.create_connection(*a, **k))

            self._create_connection = connect

    return Tracked


_HTTP, _HTTPS = _tracked(http.client.HTTPConnection), _tracked(http.client.HTTPSConnection)


class _Http(urllib.request.HTTPHandler):
    def __init__(self, sockets: FetchSockets) -> None:
        super().__init__()
        self._sockets = sockets

    def http_open(self, req: urllib.request.Request) -> Any:
        return self.do_open(functools.partial(_HTTP, sockets=self._sockets), req)


class _Https(urllib.request.HTTPSHandler):
    def __init__(self, sockets: FetchSockets) -> None:
        super().__init__()
        self._sockets = sockets

    def https_open(self, req: urllib.request.Request) -> Any:
        connection = functools.partial(_HTTPS, sockets=self._sockets)
        return self.do_open(connection, req, context=self._context)  # type: ignore[attr-defined]


def is_file_url(url: str) -> bool:
    """Whether a JWK Set URL names a local file (``file:///path``) rather than a server."""
    return urllib.parse.urlsplit(url).scheme.lower() == "file"


def read_jwks_file(url: str, max_bytes: int) -> bytes:
    """The document of a ``file://`` JWK Set URL (host empty or ``localhost``), at most
    ``max_bytes``; JwksError says why it cannot be read."""
    parts = urllib.parse.urlsplit(url)
    if parts.netloc not in ("", "localhost"):
        raise JwksError(f"a file:// URL names a file of this machine, not of {parts.netloc!r}")
    path = urllib.request.url2pathname(parts.path)
    try:
        with open(path, "rb") as file:
            body = file.read(max_bytes + 1)
    except OSError as exc:
        raise JwksError(f"cannot read {path} ({exc.strerror or exc})") from exc
    if len(body) > max_bytes:
        raise JwksError(f"{path} is larger than {max_bytes} bytes")
    return body


def fetch_jwks(
    url: str, timeout: float, max_bytes: int, sockets: FetchSockets | None = None
) -> bytes:
    """GET the document (blocking: run it in a thread), within ``timeout`` and ``max_bytes``;
    ``sockets.close()`` from another thread ends it at once. A ``file://`` URL is read."""
    if is_file_url(url):
        return read_jwks_file(url, max_bytes)
    sockets = sockets or FetchSockets()
    opener = urllib.request.build_opener(_HttpOnlyRedirects, _Http(sockets), _Https(sockets))
    deadline = time.monotonic() + timeout
    request = urllib.request.Request(
        url, headers={"Accept": "application/jwk-set+json, application/json"}
    )
    try:
        with opener.open(request, timeout=timeout) as response:
            declared = response.headers.get("Content-Length", "")
            if declared.isdigit() and int(declared) > max_bytes:
                raise JwksError(f"the document is {declared} bytes, more than {max_bytes}")
            body = bytearray()
            while chunk := response.read1(65536):
                body += chunk
                if len(body) > max_bytes:
                    raise JwksError(f"the document is larger than {max_bytes} bytes")
                if time.monotonic() > deadline:
                    raise TimeoutError
            return bytes(body)
    except urllib.error.HTTPError as exc:
        raise JwksError(f"HTTP {exc.code} {exc.reason}") from exc
    except urllib.error.URLError as exc:
        raise JwksError(f"cannot reach it ({exc.reason})") from exc
    except TimeoutError as exc:
        raise JwksError(f"no complete answer within {timeout:g} s") from exc
    except OSError as exc:
        if sockets.closed:  # the loop gave up on this fetch and shut its sockets
            raise JwksError(f"no complete answer within {timeout:g} s") from exc
        raise JwksError(f"connection failed ({exc})") from exc


class JwksKeys:
    """The keys of one JWK Set URL, fetched off the event loop and refreshed (see module)."""

    def __init__(
        self,
        url: str,
        refresh: float = 3600.0,
        min_refresh: float = 30.0,
        timeout: float = 5.0,
        max_bytes: int = 256 << 10,
    ) -> None:
        self.url = url
        self.refresh = refresh
        self.min_refresh = min_refresh
        self.timeout = timeout
        self.max_bytes = max_bytes
        #: Bumped whenever the set of keys changes (verifiers then drop cached tokens).
        self.generation = 0
        self.last_error: str | None = None
        self._keys: tuple[Jwk, ...] = ()
        self._fetched_at: float | None = None
        self._attempted_at = float("-inf")
        self._loop: asyncio.AbstractEventLoop | None = None
        self._inflight: asyncio.Task[None] | None = None
        self._refresher: asyncio.Task[None] | None = None
        #: Fetches run one at a time; a second thread only covers one still ending.
        self._threads = ThreadPoolExecutor(2, thread_name_prefix="skipfilter-jwks")
        if is_file_url(url):
            self._load_file()

    def _load_file(self) -> None:
        """Read a ``file://`` set now: the hub refuses to start on a file it cannot use
        (ValueError naming the URL), as the Go hub does."""
        try:
            self._keys, skipped = parse_jwks(read_jwks_file(self.url, self.max_bytes))
        except JwksError as exc:
            raise ValueError(f"JWK Set {self.url}: {exc}") from None
        self._fetched_at = self._attempted_at = time.monotonic()
        for reason in skipped:
            log.warning("JWK Set %s: skipped %s", self.url, reason)

    async def key_for(self, kid: str | None, algorithm: str) -> Jwk:
        """The key a token with this ``kid`` and ``alg`` must be checked with.

        Raises AuthError: 401 for a kid still unknown after a (rate-limited) refetch, a key
        that does not fit ``algorithm``, or no kid where several keys fit; 503 when no key
        set could be fetched yet.
        """
        self._bind_loop()
        if not self._keys:
            await self._refetch_if_allowed()
        if not self._keys:
            raise AuthError(
                503,
                f"no keys to check the token: fetching the JWK Set {self.url} failed "
                f"({self.last_error})",
            )
        if kid is None:
            fitting = [k for k in self._keys if algorithm in k.algorithms]
            if len(fitting) == 1:
                return fitting[0]
            raise AuthError(
                401,
                f"invalid token: no 'kid' header, and {len(fitting)} keys of the JWK Set "
                f"fit {algorithm!r}",
            )
        found = self._find(kid)
        if not found:
            await self._refetch_if_allowed()
            found = self._find(kid)
        if not found:
            raise AuthError(401, f"invalid token: unknown key id (kid) {kid[:80]!r}")
        for jwk in found:
            if algorithm in jwk.algorithms:
                return jwk
        fits = ", ".join(sorted(found[0].algorithms))
        raise AuthError(
            401, f"invalid token: algorithm {algorithm!r} does not fit key {kid!r} ({fits})"
        )

    def _find(self, kid: str) -> list[Jwk]:
        return [k for k in self._keys if k.kid == kid]

    def _bind_loop(self) -> None:
        """Start the periodic refresh on the running loop (again if the loop changed)."""
        loop = asyncio.get_running_loop()
        if loop is not self._loop:
            self._loop, self._inflight = loop, None
            self._refresher = loop.create_task(self._refresh_periodically())

    async def _refetch_if_allowed(self) -> None:
        """Join the fetch in flight, else start one unless the last began < min_refresh ago."""
        if self._inflight is None and time.monotonic() - self._attempted_at < self.min_refresh:
            return
        await self.refetch()

    async def refetch(self) -> None:
        """Fetch now, or join the fetch in flight; a failure keeps the keys (and is logged)."""
        if self._inflight is None:
            self._inflight = asyncio.get_running_loop().create_task(self._fetch())
        # shielded: a client that hangs up must not cancel the fetch others wait for
        await asyncio.shield(self._inflight)

    async def _fetch(self) -> None:
        self._attempted_at = time.monotonic()
        sockets = FetchSockets()
        try:
            fetch = asyncio.get_running_loop().run_in_executor(
                self._threads, fetch_jwks, self.url, self.timeout, self.max_bytes, sockets
            )
            try:
                body = await asyncio.wait_for(fetch, self.timeout)
            finally:
                sockets.close()  # whatever happened, nothing of this fetch reads on
            keys, skipped = parse_jwks(body)
        except Exception as exc:  # whatever went wrong, the last good keys stay in use
            if isinstance(exc, JwksError):
                self.last_error = str(exc)
            elif isinstance(exc, TimeoutError):
                self.last_error = f"no complete answer within {self.timeout:g} s"
            else:
                self.last_error = f"{type(exc).__name__}: {exc}"
                log.exception("JWK Set %s: unexpected error", self.url)
            kept = (
                f"keeping the {len(self._keys)} keys fetched "
                f"{time.monotonic() - self._fetched_at:.0f} s ago"
                if self._fetched_at is not None
                else "no keys yet: tokens it should check are refused (503)"
            )
            log.warning("JWK Set %s could not be fetched: %s; %s", self.url, self.last_error, kept)
            return
        finally:
            self._inflight = None
        self.last_error = None
        self._fetched_at = time.monotonic()
        if [k.source for k in keys] != [k.source for k in self._keys]:
            self._keys = keys
            self.generation += 1
            kids = ", ".join(repr(k.kid) for k in keys)
            log.info("JWK Set %s: %d keys (%s)", self.url, len(keys), kids)
            for reason in skipped:  # once per new set, not at every refresh
                log.warning("JWK Set %s: skipped %s", self.url, reason)

    async def _refresh_periodically(self) -> None:
        """Refetch every ``refresh`` seconds; after a failure, retry sooner."""
        while True:
            if self._fetched_at is None or self.last_error is not None:
                delay = min(self.refresh, max(self.min_refresh, 1.0))
            else:
                delay = self.refresh
            await asyncio.sleep(delay)
            await self.refetch()


class JwksVerifier:
    """Verify tokens with the key of a JWK Set their ``kid`` names (see ``JwksKeys``)."""

    def __init__(self, keys: JwksKeys, size: int = 4096) -> None:
        self.keys = keys
        self._cache = TokenCache(size)
        self._generation = keys.generation

    async def claims(self, token: str, source: TokenSource) -> Claims:
        """Verified claims of ``token``; raises AuthError (401, or 503 without keys)."""
        if self._generation != self.keys.generation:
            self._cache.clear()  # a key may be gone: every token is checked again
            self._generation = self.keys.generation
        claims = self._cache.get(token, source)
        if claims is not None:
            return claims
        header = unverified_header(token)
        alg, kid = header["alg"], header.get("kid")
        if alg not in ASYMMETRIC_ALGORITHMS:
            raise AuthError(
                401,
                f"invalid token: algorithm {alg!r} is not accepted with a JWK Set "
                f"(one of {', '.join(sorted(ASYMMETRIC_ALGORITHMS))})",
            )
        if kid is not None and not isinstance(kid, str):
            raise AuthError(401, "invalid token: the 'kid' header must be a string")
        jwk = await self.keys.key_for(kid, alg)
        claims = decode_claims(token, jwk.key, alg, source)
        if self._generation == self.keys.generation:
            self._cache.put(token, claims)
        return claims


def verifier_for(settings: HubSettings, role: Role) -> TokenVerifier | None:
    """The role's verifier: its JWK Set URL when set (it wins over a key, as in the Go
    hub), else its key, else None (the role has no tokens)."""
    found = role_keys(settings, role)
    if found.jwks_url:
        keys = JwksKeys(
            found.jwks_url,
            refresh=settings.jwks_refresh,
            min_refresh=settings.jwks_min_refresh,
            timeout=settings.jwks_timeout,
            max_bytes=settings.jwks_max_bytes,
        )
        return JwksVerifier(keys)
    if found.key is not None:
        return Verifier(found.key, found.alg)
    return None
