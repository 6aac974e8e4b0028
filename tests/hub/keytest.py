"""Real keys for the auth tests: generated pairs for every algorithm, and a JWK Set server.

``JwksServer`` is an http.server on 127.0.0.1 (free port, own thread) serving a document the
test can rotate, break (HTTP 500, junk, too large) or slow down, and counting its fetches.
"""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, TypedDict

import jwt
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, ed25519, rsa
from jwt.algorithms import ECAlgorithm, OKPAlgorithm, RSAAlgorithm

#: The private keys ``key_pair`` makes, and their public halves.
PrivateKey = rsa.RSAPrivateKey | ec.EllipticCurvePrivateKey | ed25519.Ed25519PrivateKey
PublicKey = rsa.RSAPublicKey | ec.EllipticCurvePublicKey | ed25519.Ed25519PublicKey


class RoleKeys(TypedDict, total=False):
    """``HubSettings`` key fields a test passes as ``**keys``, typed as the settings are."""

    publisher_key: str
    subscriber_key: str


_CURVES = {"ES256": ec.SECP256R1(), "ES384": ec.SECP384R1(), "ES512": ec.SECP521R1()}


@dataclass(frozen=True)
class KeyPair:
    """A private key to sign with and its public half (object and PEM text)."""

    alg: str
    private: PrivateKey
    public: PublicKey

    @property
    def public_pem(self) -> str:
        return self.public.public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
        ).decode()

    @property
    def private_pem(self) -> str:
        return self.private.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        ).decode()

    def jwk(self, kid: str | None, **extra: Any) -> dict[str, Any]:
        """The public key as a JWK (with ``kid`` and any extra members)."""
        if isinstance(self.public, rsa.RSAPublicKey):  # RS*, PS*
            data = RSAAlgorithm.to_jwk(self.public, as_dict=True)
        elif isinstance(self.public, ec.EllipticCurvePublicKey):  # ES*
            data = ECAlgorithm.to_jwk(self.public, as_dict=True)
        else:  # EdDSA
            data = OKPAlgorithm.to_jwk(self.public, as_dict=True)
        if kid is not None:
            data["kid"] = kid
        return {**data, **extra}

    def sign(
        self,
        alg: str | None = None,
        kid: str | None = None,
        exp: float = 3600,
        claims: dict[str, Any] | None = None,
        **mercure: Any,
    ) -> str:
        """A token signed by this private key (``claims`` replaces the mercure claim)."""
        body = claims if claims is not None else {"mercure": mercure}
        body = {**body, "exp": int(time.time() + exp)}
        headers = {"kid": kid} if kid is not None else None
        return jwt.encode(body, self.private, algorithm=alg or self.alg, headers=headers)


def key_pair(alg: str) -> KeyPair:
    """A fresh key pair for ``alg`` (RSA 2048, the curve of ES*, Ed25519 for EdDSA)."""
    private: PrivateKey
    if alg.startswith(("RS", "PS")):
        private = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    elif alg in _CURVES:
        private = ec.generate_private_key(_CURVES[alg])
    elif alg == "EdDSA":
        private = ed25519.Ed25519PrivateKey.generate()
    else:
        raise ValueError(alg)
    return KeyPair(alg, private, private.public_key())


class JwksServer:
    """A JWK Set on http://127.0.0.1:PORT/jwks.json whose answer the test controls."""

    def __init__(self, keys: list[dict[str, Any]] | None = None) -> None:
        self.body = b""
        self.status = 200
        self.delay = 0.0
        self.declare_length = True
        self.fetches = 0
        self.dribble = 0.0  # seconds between bytes of the response head (0: all at once)
        self.dribbling = 0  # connections being dribbled to right now
        self._lock = threading.Lock()
        self.publish(keys or [])
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                with server._lock:
                    server.fetches += 1
                    body, status, delay = server.body, server.status, server.delay
                    declare_length = server.declare_length
                    dribble = server.dribble
                time.sleep(delay)
                if dribble:
                    self._dribble(dribble)
                    return
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    if declare_length:  # else the body ends when the connection closes
                        self.send_header("Content-Length", str(len(body)))
                    self.end_headers()
                    self.wfile.write(body)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the hub gave up waiting (what the timeout tests expect)

            def _dribble(self, pause: float) -> None:
                """A head sent one byte per ``pause`` seconds for 20 s, or until the client
                gives up (a server that is slow, or hostile)."""
                with server._lock:
                    server.dribbling += 1
                ends = time.monotonic() + 20
                try:
                    for byte in b"HTTP/1.1 200 OK\r\nX-Padding: " + b"x" * 100_000:
                        self.connection.sendall(bytes([byte]))
                        time.sleep(pause)
                        if time.monotonic() > ends:
                            break
                except OSError:
                    pass  # the client gave up: what a bounded fetch does
                finally:
                    with server._lock:
                        server.dribbling -= 1

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/jwks.json"
        self._thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self._thread.start()

    def publish(self, keys: list[dict[str, Any]]) -> None:
        """Serve a JWK Set of ``keys`` from now on (HTTP 200)."""
        self.serve(json.dumps({"keys": keys}).encode())

    def serve(
        self,
        body: bytes,
        status: int = 200,
        delay: float = 0.0,
        declare_length: bool = True,
        dribble: float = 0.0,
    ) -> None:
        """Serve any body with any status, after ``delay`` seconds, with or without a
        Content-Length; or (``dribble``) a head that never ends, a byte at a time."""
        with self._lock:
            self.body, self.status, self.delay = body, status, delay
            self.declare_length = declare_length
            self.dribble = dribble

    def wait_fetches(self, n: int, timeout: float = 10) -> None:
        """Block until the server has answered at least ``n`` fetches."""
        deadline = time.monotonic() + timeout
        while self.fetches < n:
            if time.monotonic() > deadline:
                raise AssertionError(f"expected {n} fetches, got {self.fetches}")
            time.sleep(0.02)

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
