"""``--tls-cert``/``--tls-key``: the hub serves HTTPS itself, so browsers keep draft-08's
``__Secure-`` cookie without a proxy; its native stream path works over TLS; a stream
behind a proxy that terminates TLS is https too (X-Forwarded-Proto from a trusted proxy)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import httpx
from httpx_sse import EventSource

from rigs.selfsigned import self_signed
from skipfilter.hub.frontends.v1.access_tokens import mint_access_token
from tests.hub.hubtest import HUB, PUBLISHER_KEY, HubProcess, Server
from tests.hub.v1test import ISSUER, v1_settings

TOPIC = "https://example.com/books/1"


def test_the_hub_serves_streams_and_publishes_over_https(tmp_path: Path) -> None:
    """A subscriber over HTTPS (the native stream path) gets what a publisher sent over
    HTTPS; the hub sees the https origin (the token's https audience is accepted)."""
    cert = self_signed(tmp_path / "tls")
    hub = HubProcess(
        "--tls-cert", str(cert.cert), "--tls-key", str(cert.key),
        "--issuer", ISSUER, "--publisher-jwt-key", PUBLISHER_KEY, "--anonymous",
        "--history", str(tmp_path / "h.sqlite3"),
        compatibility=False, verify=cert.client_context(),
    )  # fmt: skip
    try:
        assert hub.url.startswith("https://")
        token = mint_access_token(ISSUER, hub.url + HUB, PUBLISHER_KEY, publish=[("*", "exact")])
        verify = cert.client_context()
        with (
            httpx.Client(base_url=hub.url, verify=verify, timeout=10) as client,
            client.stream("GET", HUB, params={"match": TOPIC}) as stream,
        ):
            assert stream.status_code == 200, stream.read()
            answer = client.post(
                HUB,
                data={"topic": TOPIC, "data": "over tls"},
                headers={"Authorization": f"Bearer {token}"},
            )
            assert answer.status_code == 200, answer.text
            event = next(iter(EventSource(stream).iter_sse()))
            assert (event.id, event.data) == (answer.text.strip(), "over tls")
        assert "subscribe at https://localhost:" in hub.output()
    finally:
        hub.kill()


def test_the_demo_over_https_sets_the_secure_cookie(tmp_path: Path) -> None:
    """``--demo --tls-cert``: the page's cookie is draft-08's ``__Secure-`` one, ``Secure``."""
    cert = self_signed(tmp_path / "tls")
    hub = HubProcess(
        "--demo", "--tls-cert", str(cert.cert), "--tls-key", str(cert.key),
        "--history", str(tmp_path / "h.sqlite3"),
        compatibility=False, verify=cert.client_context(),
    )  # fmt: skip
    try:
        page = httpx.get(hub.url + "/", verify=cert.client_context(), timeout=10)
        cookie = page.headers["set-cookie"]
        assert cookie.startswith("__Secure-mercure_access_token=")
        assert "Secure" in cookie.split(";")[1:] or "; Secure" in cookie
    finally:
        hub.kill()


def _hub(*args: str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "skipfilter.cli", "hub", "--anonymous", "--addr"]
    return subprocess.run(
        [*command, "127.0.0.1:0", *args], capture_output=True, text=True, timeout=30
    )


def test_bad_tls_flags_are_refused_in_one_line_before_listening(tmp_path: Path) -> None:
    cert = self_signed(tmp_path / "tls")
    alone = _hub("--tls-cert", str(cert.cert))
    assert alone.returncode == 2
    assert "--tls-cert and --tls-key go together" in alone.stderr
    swapped = _hub("--tls-cert", str(cert.key), "--tls-key", str(cert.cert))
    assert swapped.returncode == 2
    assert swapped.stderr.count("\n") == 1 and "cannot load them" in swapped.stderr
    missing = _hub("--tls-cert", str(tmp_path / "none.pem"), "--tls-key", str(cert.key))
    assert missing.returncode == 2 and "none.pem" in missing.stderr


def test_a_stream_behind_a_tls_proxy_is_https(tmp_path: Path) -> None:
    """A proxy terminating TLS says so in X-Forwarded-Proto: the native stream path reads it
    from a trusted address as the app does for publishes, so ``--public-urls https://...``
    lets the stream through (it answered 421, taking the stream for http)."""
    settings = v1_settings(tmp_path, public_urls=("https://hub.example.com",))
    with Server(settings) as server, server.client() as client:
        headers = {"Host": "hub.example.com", "X-Forwarded-Proto": "https"}
        with client.stream("GET", HUB, params={"match": TOPIC}, headers=headers) as stream:
            assert stream.status_code == 200, stream.read()
        plain = client.get(HUB, params={"match": TOPIC}, headers={"Host": "hub.example.com"})
        assert plain.status_code == 421
