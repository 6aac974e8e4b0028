"""Keys from a JWK Set URL: a real http.server on loopback serving a set the tests rotate,
break and slow down, in front of a real hub."""

from __future__ import annotations

import argparse
import logging
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx
import jwt
import pytest

from skipfilter.hub import HubSettings
from skipfilter.hub.server.cli import add_arguments, settings_from_args
from tests.hub.hubtest import HUB, PUBLISHER_KEY, Server, Stream, pub_token
from tests.hub.keytest import JwksServer, KeyPair, key_pair

BOOK = "https://example.com/books/1"


@pytest.fixture
def jwks() -> Iterator[JwksServer]:
    server = JwksServer()
    yield server
    server.close()


@pytest.fixture
def rsa1() -> KeyPair:
    return key_pair("RS256")


@pytest.fixture
def warnings_log(caplog: pytest.LogCaptureFixture) -> pytest.LogCaptureFixture:
    """What the JWK Set code logs at WARNING and above (the hub runs in this process)."""
    caplog.set_level(logging.WARNING, logger="skipfilter.hub.auth.jwks")
    return caplog


def jwks_hub(
    make_server: Callable[..., Server], settings: HubSettings, url: str, **changes: Any
) -> Server:
    """A hub whose publishers' keys come from ``url`` (subscribers stay HS256/anonymous)."""
    fields: dict[str, Any] = {"publisher_key": None, "publisher_jwks_url": url}
    return make_server(settings.with_changes(**{**fields, **changes}))


def publish(server: Server, signed: str) -> httpx.Response:
    return server.publish(BOOK, auth=signed)


def wait_status(server: Server, signed: str, status: int, timeout: float = 5) -> httpx.Response:
    """Publish with ``signed`` until the hub answers ``status`` (the refresh is async)."""
    deadline = time.monotonic() + timeout
    while True:
        response = publish(server, signed)
        if response.status_code == status or time.monotonic() > deadline:
            return response
        time.sleep(0.05)


@pytest.mark.parametrize("alg", ["RS256", "PS512", "ES256", "ES512", "EdDSA"])
def test_each_key_type_is_chosen_by_kid(
    make_server: Callable[..., Server],
    settings: HubSettings,
    jwks: JwksServer,
    rsa1: KeyPair,
    alg: str,
) -> None:
    pair = key_pair(alg)
    jwks.publish([rsa1.jwk("decoy"), pair.jwk("mine")])
    server = jwks_hub(make_server, settings, jwks.url)
    assert publish(server, pair.sign(kid="mine", publish=["*"])).status_code == 200
    refusals = {
        "bad signature": key_pair(alg).sign(kid="mine", publish=["*"]),
        # the RSA decoy cannot check this algorithm (an RSA token: an EC key's)
        "does not fit key 'decoy'": (
            key_pair("ES256") if alg.startswith(("RS", "PS")) else pair
        ).sign(kid="decoy", publish=["*"]),
        "unknown key id": pair.sign(kid="nobody", publish=["*"]),
        "not accepted with a JWK Set": pub_token(),  # HS256: JWKS wins over any key
        "alg 'none'": jwt.encode({"mercure": {"publish": ["*"]}}, "", algorithm="none"),
    }
    for reason, bad in refusals.items():
        response = publish(server, bad)
        assert response.status_code == 401, reason
        assert reason in response.text
    assert server.hub.ring.head == 1


def test_jwks_wins_over_a_configured_key(
    make_server: Callable[..., Server], settings: HubSettings, jwks: JwksServer, rsa1: KeyPair
) -> None:
    jwks.publish([rsa1.jwk("k1")])
    server = jwks_hub(make_server, settings, jwks.url, publisher_key=PUBLISHER_KEY)
    response = publish(server, pub_token())
    assert response.status_code == 401 and "'HS256' is not accepted" in response.text
    assert publish(server, rsa1.sign(kid="k1", publish=["*"])).status_code == 200


def test_keys_without_kid_and_alg_members(
    make_server: Callable[..., Server], settings: HubSettings, jwks: JwksServer, rsa1: KeyPair
) -> None:
    ec = key_pair("ES256")
    jwks.publish([rsa1.jwk(None, alg="RS256"), ec.jwk("ec")])
    server = jwks_hub(make_server, settings, jwks.url)
    # no kid: the one key fitting the algorithm is used
    assert publish(server, rsa1.sign(publish=["*"])).status_code == 200
    assert publish(server, ec.sign(publish=["*"])).status_code == 200
    response = publish(server, rsa1.sign("PS256", publish=["*"]))  # the "alg" member pins it
    assert response.status_code == 401 and "0 keys of the JWK Set fit 'PS256'" in response.text
    jwks.publish([rsa1.jwk("pinned", alg="RS256"), *(key_pair("RS256").jwk(None) for _ in "ab")])
    server = jwks_hub(make_server, settings, jwks.url)
    response = publish(server, rsa1.sign("PS256", kid="pinned", publish=["*"]))
    assert response.status_code == 401 and "'PS256' does not fit key 'pinned'" in response.text
    assert publish(server, rsa1.sign(kid="pinned", publish=["*"])).status_code == 200
    response = publish(server, rsa1.sign(publish=["*"]))
    assert response.status_code == 401 and "no 'kid' header, and 3 keys" in response.text


def test_unusable_keys_are_skipped_and_logged(
    make_server: Callable[..., Server],
    settings: HubSettings,
    jwks: JwksServer,
    rsa1: KeyPair,
    warnings_log: pytest.LogCaptureFixture,
) -> None:
    secret = {"kty": "oct", "kid": "shared", "k": "c2VjcmV0LXNlY3JldC1zZWNyZXQtc2VjcmV0"}
    leaked = {**rsa1.jwk("leak"), "d": "AQAB"}
    jwks.publish([secret, leaked, rsa1.jwk("enc", use="enc"), rsa1.jwk("good")])
    server = jwks_hub(make_server, settings, jwks.url)
    assert publish(server, rsa1.sign(kid="good", publish=["*"])).status_code == 200
    for kid in ("leak", "enc"):
        assert publish(server, rsa1.sign(kid=kid, publish=["*"])).status_code == 401
    forged = jwt.encode(
        {"mercure": {"publish": ["*"]}},
        "secret-secret-secret-secret-secret",
        "HS256",
        {"kid": "shared"},
    )
    assert publish(server, forged).status_code == 401
    logged = warnings_log.text
    assert "kty 'oct'" in logged and "private key" in logged and "'use' is 'enc'" in logged


def test_rotation_unknown_kid_refetches_and_removed_keys_are_refused(
    make_server: Callable[..., Server], settings: HubSettings, jwks: JwksServer, rsa1: KeyPair
) -> None:
    rsa2 = key_pair("RS256")
    jwks.publish([rsa1.jwk("k1")])
    server = jwks_hub(make_server, settings, jwks.url, jwks_min_refresh=0)
    old = rsa1.sign(kid="k1", publish=["*"])
    assert publish(server, old).status_code == 200
    assert jwks.fetches == 1
    jwks.publish([rsa1.jwk("k1"), rsa2.jwk("k2")])
    assert publish(server, rsa2.sign(kid="k2", publish=["*"])).status_code == 200
    assert jwks.fetches == 2  # the new kid made the hub look again
    jwks.publish([rsa2.jwk("k2")])
    assert publish(server, old).status_code == 200  # known kid, verified before: no fetch
    assert jwks.fetches == 2
    assert publish(server, rsa2.sign(kid="k9", publish=["*"])).status_code == 401
    assert jwks.fetches == 3  # that fetch dropped k1...
    response = publish(server, old)  # ...so the very token accepted before is refused
    assert response.status_code == 401 and "unknown key id (kid) 'k1'" in response.text


def test_a_flood_of_unknown_kids_costs_one_fetch(
    make_server: Callable[..., Server], settings: HubSettings, jwks: JwksServer, rsa1: KeyPair
) -> None:
    jwks.publish([rsa1.jwk("k1")])
    server = jwks_hub(make_server, settings, jwks.url, jwks_min_refresh=1.5)
    assert publish(server, rsa1.sign(kid="k1", publish=["*"])).status_code == 200
    time.sleep(1.6)  # the next unknown kid may cause one fetch
    flood = [rsa1.sign(kid=uuid.uuid4().hex, publish=["*"]) for _ in range(60)]

    def send(signed: str) -> int:
        with server.client() as client:
            headers = {"Authorization": f"Bearer {signed}"}
            return client.post(HUB, data={"topic": BOOK}, headers=headers).status_code

    with ThreadPoolExecutor(8) as pool:
        statuses = list(pool.map(send, flood))
    assert statuses == [401] * 60
    assert jwks.fetches == 2
    rsa2 = key_pair("RS256")
    jwks.publish([rsa1.jwk("k1"), rsa2.jwk("k2")])
    new = rsa2.sign(kid="k2", publish=["*"])
    assert publish(server, new).status_code == 401  # too soon after the last fetch
    assert jwks.fetches == 2
    assert wait_status(server, new, 200, timeout=3).status_code == 200
    assert jwks.fetches == 3


def test_periodic_refresh_drops_removed_keys(
    make_server: Callable[..., Server], settings: HubSettings, jwks: JwksServer, rsa1: KeyPair
) -> None:
    rsa2 = key_pair("RS256")
    jwks.publish([rsa1.jwk("k1"), rsa2.jwk("k2")])
    server = jwks_hub(make_server, settings, jwks.url, jwks_refresh=0.3, jwks_min_refresh=3600)
    old, kept = rsa1.sign(kid="k1", publish=["*"]), rsa2.sign(kid="k2", publish=["*"])
    assert publish(server, old).status_code == 200
    jwks.publish([rsa2.jwk("k2")])
    jwks.wait_fetches(3)  # two periodic fetches after the first: the last saw the new set
    response = wait_status(server, old, 401, timeout=2)
    assert response.status_code == 401 and "unknown key id" in response.text
    assert publish(server, kept).status_code == 200


def test_failed_fetches_keep_the_last_good_keys_and_say_why(
    make_server: Callable[..., Server],
    settings: HubSettings,
    jwks: JwksServer,
    rsa1: KeyPair,
    warnings_log: pytest.LogCaptureFixture,
) -> None:
    jwks.publish([rsa1.jwk("k1")])
    server = jwks_hub(
        make_server,
        settings,
        jwks.url,
        jwks_refresh=0.2,
        jwks_min_refresh=3600,
        jwks_max_bytes=2048,
    )
    assert publish(server, rsa1.sign(kid="k1", publish=["*"])).status_code == 200
    failures = [
        (b"oops", 500, "HTTP 500"),
        (b"<html>", 200, "not JSON"),
        (b'{"keys": []}', 200, "no usable signing key"),
        (b'{"keys": [], "pad": "' + b"x" * 4096 + b'"}', 200, "more than 2048"),
    ]
    for body, status, reason in failures:
        jwks.serve(body, status)
        seen = jwks.fetches
        jwks.wait_fetches(seen + 2)
        fresh = rsa1.sign(kid="k1", publish=["*"], exp=3000 + seen)  # a token not cached
        assert publish(server, fresh).status_code == 200, reason
        assert reason in warnings_log.text
    assert "keeping the 1 keys fetched" in warnings_log.text


def test_fetch_is_bounded_and_never_blocks_the_event_loop(
    make_server: Callable[..., Server], settings: HubSettings, jwks: JwksServer, rsa1: KeyPair
) -> None:
    jwks.serve(b'{"keys": []}', delay=3)
    server = jwks_hub(make_server, settings, jwks.url, jwks_timeout=1, jwks_min_refresh=0.5)
    outcome: dict[str, Any] = {}

    def slow_publish() -> None:
        started = time.monotonic()
        outcome["response"] = publish(server, rsa1.sign(kid="k1", publish=["*"]))
        outcome["seconds"] = time.monotonic() - started

    thread = threading.Thread(target=slow_publish)
    thread.start()
    jwks.wait_fetches(1)
    worst = 0.0
    with server.client() as client:
        while thread.is_alive():
            started = time.monotonic()
            assert client.get("/").status_code == 200
            worst = max(worst, time.monotonic() - started)
            time.sleep(0.05)
    assert worst < 0.5  # the hub kept answering while the fetch hung
    response = outcome["response"]
    assert response.status_code == 503
    assert "no complete answer within 1 s" in response.text
    assert 0.9 < outcome["seconds"] < 2.5
    jwks.publish([rsa1.jwk("k1")])
    assert wait_status(server, rsa1.sign(kid="k1", publish=["*"]), 200).status_code == 200


@pytest.mark.parametrize(
    ("declared", "reason"),
    [(True, "300012 bytes, more than 262144"), (False, "larger than 262144 bytes")],
    ids=["content-length", "read-until-close"],
)
def test_a_huge_document_is_refused_and_the_role_answers_503(
    make_server: Callable[..., Server],
    settings: HubSettings,
    jwks: JwksServer,
    rsa1: KeyPair,
    declared: bool,
    reason: str,
) -> None:
    jwks.serve(b'{"keys": [' + b" " * 300_000 + b"]}", declare_length=declared)
    server = jwks_hub(make_server, settings, jwks.url)
    response = publish(server, rsa1.sign(kid="k1", publish=["*"]))
    assert response.status_code == 503
    assert f"fetching the JWK Set {jwks.url} failed" in response.text
    assert reason in response.text


def test_subscriber_keys_from_a_jwk_set(
    make_server: Callable[..., Server],
    settings: HubSettings,
    jwks: JwksServer,
    streams: Callable[..., Stream],
) -> None:
    ed = key_pair("EdDSA")
    jwks.publish([ed.jwk("sub")])
    server = make_server(
        settings.with_changes(subscriber_key=None, subscriber_jwks_url=jwks.url, anonymous=False)
    )
    good = ed.sign(kid="sub", subscribe=[BOOK])
    allowed = streams(server, [BOOK], params={"authorization": good})
    forged = key_pair("EdDSA").sign(kid="sub", subscribe=[BOOK])
    refused = streams(server, [BOOK], params={"authorization": forged})
    assert refused.response is not None and refused.response.status_code == 401
    server.publish(BOOK, private="on", id="secret")
    assert allowed.event().id == "secret"


def test_jwks_flags_and_environment(capsys: pytest.CaptureFixture[str]) -> None:
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    env = {
        "MERCURE_PUBLISHER_JWKS_URL": "https://idp.example/pub.json",
        "MERCURE_SUBSCRIBER_JWKS_URL": "https://idp.example/sub.json",
        "MERCURE_PROTOCOL_VERSION_COMPATIBILITY": "8",
    }
    settings = settings_from_args(parser.parse_args([]), env)
    assert settings.publisher_jwks_url == "https://idp.example/pub.json"
    assert settings.subscriber_jwks_url == "https://idp.example/sub.json"
    assert (settings.jwks_refresh, settings.jwks_min_refresh) == (3600.0, 30.0)
    args = parser.parse_args(
        [
            "--publisher-jwks-url", "http://127.0.0.1:9/p",
            "--subscriber-jwks-url", "http://127.0.0.1:9/s",
            "--jwks-refresh", "60",
            "--jwks-min-refresh", "5",
        ]
    )  # fmt: skip
    settings = settings_from_args(args, env)
    assert (settings.publisher_jwks_url, settings.subscriber_jwks_url) == (
        "http://127.0.0.1:9/p",
        "http://127.0.0.1:9/s",
    )
    assert (settings.jwks_refresh, settings.jwks_min_refresh) == (60.0, 5.0)
    with pytest.raises(ValueError, match="subscriber_jwks_url 'ftp://x/k' must be an http"):
        settings_from_args(parser.parse_args(["--subscriber-jwks-url", "ftp://x/k"]), {})
    with pytest.raises(SystemExit):  # a usage error naming the flag
        parser.parse_args(["--anonymous", "--jwks-refresh", "0"])
    assert "--jwks-refresh" in capsys.readouterr().err
    with pytest.raises(ValueError, match="jwks_refresh must be positive"):
        HubSettings(anonymous=True, jwks_refresh=0)


def test_a_server_dribbling_its_headers_is_bounded_as_a_whole_and_recovers(
    make_server: Callable[..., Server], settings: HubSettings, jwks: JwksServer, rsa1: KeyPair
) -> None:
    jwks.serve(b"", dribble=0.5)  # a byte every half second: no read ever times out
    server = jwks_hub(make_server, settings, jwks.url, jwks_timeout=1, jwks_min_refresh=0)
    signed = rsa1.sign(kid="k1", publish=["*"])
    for _ in range(8):  # more fetches than the default executor has threads
        started = time.monotonic()
        response = publish(server, signed)
        assert response.status_code == 503 and "within 1 s" in response.text
        assert time.monotonic() - started < 3
    deadline = time.monotonic() + 3
    while jwks.dribbling and time.monotonic() < deadline:
        time.sleep(0.05)
    assert jwks.dribbling == 0, f"{jwks.dribbling} fetches still reading past their timeout"
    jwks.publish([rsa1.jwk("k1")])  # the server recovers: so do tokens
    assert wait_status(server, signed, 200, timeout=10).status_code == 200
