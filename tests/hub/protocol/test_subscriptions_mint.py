"""Subscription topics and documents (draft-08 §8), and ``skipfilter token`` checked by the
verifier that the hub will use."""

from __future__ import annotations

import asyncio
import io
import json
from pathlib import Path
from typing import Any
from urllib.parse import unquote

import jwt
import pytest
from hypothesis import given
from hypothesis import strategies as st

from skipfilter.cli import main
from skipfilter.hub.frontends.v1.access_tokens import MintError, mint_access_token
from skipfilter.hub.frontends.v1.errors import RequestError
from skipfilter.hub.frontends.v1.issuers import Issuer, StaticKey
from skipfilter.hub.frontends.v1.matchers import LEGACY
from skipfilter.hub.frontends.v1.subscriptions import (
    SubscriptionPath,
    collection_document,
    etag,
    not_modified,
    parse_subscription_path,
    subscription_document,
    subscription_topic,
)
from skipfilter.hub.frontends.v1.tokens import AccessToken, AccessTokenVerifier
from tests.hub.keytest import key_pair

HUB = "http://localhost:3000/.well-known/mercure"
ISS = "https://issuer.example"
SECRET = "a-development-secret-of-32-bytes-or-more"


def test_the_specs_subscription_event() -> None:
    matcher = ("https://example.com/:selector", "urlpattern")
    subscriber = "urn:uuid:bb3de268-05b0-4c65-b44e-8f9acefc29d6"
    assert subscription_document(matcher, subscriber, True, {"foo": "bar"}) == {
        "id": "/.well-known/mercure/subscriptions/urlpattern"
        "/https%3A%2F%2Fexample.com%2F%3Aselector"
        "/urn%3Auuid%3Abb3de268-05b0-4c65-b44e-8f9acefc29d6",
        "type": "subscription",
        "match_type": "urlpattern",
        "match": "https://example.com/:selector",
        "subscriber": subscriber,
        "active": True,
        "payload": {"foo": "bar"},
    }
    assert "payload" not in subscription_document(matcher, subscriber, False)


def test_variables_are_encoded_exactly_once() -> None:
    topic = subscription_topic(("a%2Fb c/d", "exact"), "s%")
    assert topic == "/.well-known/mercure/subscriptions/exact/a%252Fb%20c%2Fd/s%25"
    assert subscription_topic(("x", "exact"), "s", "/hub") == "/hub/subscriptions/exact/x/s"


def test_0x_subscriptions_keep_the_0x_shape() -> None:
    doc = subscription_document(("https://e.com/{id}", LEGACY), "s", True)
    assert doc["id"] == "/.well-known/mercure/subscriptions/https%3A%2F%2Fe.com%2F%7Bid%7D/s"
    assert doc["topic"] == "https://e.com/{id}" and "match" not in doc


@given(st.text(min_size=1), st.sampled_from(["exact", "urlpattern"]), st.text(min_size=1))
def test_topics_read_back_as_what_they_name(value: str, kind: str, subscriber: str) -> None:
    topic = subscription_topic((value, kind), subscriber)
    assert parse_subscription_path(topic) == SubscriptionPath((value, kind), subscriber)
    assert unquote(topic.split("/")[-2]) == value


def test_api_paths() -> None:
    assert parse_subscription_path("/.well-known/mercure/subscriptions") == SubscriptionPath()
    assert parse_subscription_path("/.well-known/mercure/subscriptions/exact/a") == (
        SubscriptionPath(("a", "exact"))
    )
    for path in [
        "/.well-known/mercure/subscriptions/regex/a",
        "/.well-known/mercure/subscriptions/exact/a/b/c",
        "/.well-known/mercure/subscriptions/exact//b",
        "/.well-known/mercure/subscriptions/a/b",
        "/.well-known/mercure/subscriptions/exact/%FF",
    ]:
        with pytest.raises(RequestError) as caught:
            parse_subscription_path(path)
        assert caught.value.status == 400
    with pytest.raises(RequestError) as caught:
        parse_subscription_path("/elsewhere")
    assert caught.value.status == 404
    legacy = parse_subscription_path("/.well-known/mercure/subscriptions/a/b", compatibility=True)
    assert legacy == SubscriptionPath(("a", LEGACY), "b")


def test_collections_etags_and_304() -> None:
    docs = [subscription_document(("a", "exact"), "s", True)]
    assert collection_document("/.well-known/mercure/subscriptions", docs) == {
        "id": "/.well-known/mercure/subscriptions",
        "type": "subscriptions",
        "subscriptions": docs,
    }
    tag = etag("urn:uuid:1")
    assert tag == '"urn:uuid:1"'
    assert etag('a b"%é\x7f') == '"a%20b%22%25%C3%A9%7F"'
    assert not_modified(tag, tag) and not_modified(f"W/{tag}", tag)
    assert not_modified(f'"x", {tag}', tag) and not_modified("*", tag)
    assert not not_modified('"other"', tag) and not not_modified(None, tag)


# -- skipfilter token -------------------------------------------------------------------------


def verified(token: str, key: Any, alg: str, role: str = "publisher") -> AccessToken:
    keys = StaticKey(key, alg)
    verifier = AccessTokenVerifier([Issuer(ISS, publisher=keys, subscriber=keys)])
    return asyncio.run(verifier.verify(token, role, HUB, HUB))  # type: ignore[arg-type]


def test_minted_tokens_pass_the_hubs_verification() -> None:
    token = mint_access_token(
        ISS,
        HUB,
        SECRET,
        publish=[("https://example.com/books/1", "exact")],
        subscribe=[("https://example.com/books/:id", "urlpattern"), ("*", "exact")],
        payload={"user": "alice"},
        subject="alice",
        ttl=120,
    )
    assert jwt.get_unverified_header(token) == {"alg": "HS256", "typ": "at+jwt"}
    access = verified(token, SECRET, "HS256")
    assert access.subject == "alice" and access.client_id == ISS
    assert access.grants.matchers("publish") == (("https://example.com/books/1", "exact"),)
    assert access.grants.details[1].payload == {"user": "alice"}
    assert 100 < access.seconds_left() <= 120  # type: ignore[operator]
    assert set(access.claims) == {
        "iss",
        "aud",
        "sub",
        "client_id",
        "iat",
        "exp",
        "jti",
        "authorization_details",
    }


@pytest.mark.parametrize("alg", ["RS256", "ES256", "ES384", "EdDSA"])
def test_pem_private_keys_sign_with_their_own_algorithm(alg: str) -> None:
    pair = key_pair(alg)
    token = mint_access_token(ISS, HUB, pair.private_pem, subscribe=[("*", "exact")], kid="k1")
    assert jwt.get_unverified_header(token) == {"alg": alg, "typ": "at+jwt", "kid": "k1"}
    verified(token, pair.public_pem, alg, "subscriber")


@pytest.mark.parametrize(
    ("kwargs", "reason"),
    [
        ({}, "grant something"),
        ({"publish": [("a", "regex")]}, "unsupported match type"),
        ({"publish": [("https://e.com/(", "urlpattern")]}, "URL Pattern"),
        ({"publish": [("*", "exact")], "payload": {"a": 1}}, "subscribe grant"),
        ({"publish": [("*", "exact")], "key": "short"}, "32 bytes"),
        ({"publish": [("*", "exact")], "algorithm": "RS256"}, "PEM private key"),
        ({"publish": [("*", "exact")], "algorithm": "XX1"}, "not one of"),
        ({"publish": [("*", "exact")], "key": "-----BEGIN junk"}, "PEM private key"),
    ],
)
def test_tokens_the_hub_would_refuse_are_not_minted(kwargs: dict[str, Any], reason: str) -> None:
    key = kwargs.pop("key", SECRET)
    with pytest.raises(MintError, match=reason):
        mint_access_token(ISS, HUB, key, **kwargs)


def test_a_pem_key_must_fit_the_algorithm() -> None:
    pair = key_pair("ES256")
    with pytest.raises(MintError, match="cannot sign RS256"):
        mint_access_token(ISS, HUB, pair.private_pem, publish=[("*", "exact")], algorithm="RS256")


def run_cli(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(["token", *args])
    out, err = capsys.readouterr()
    return code, out.strip(), err


def test_the_command_prints_a_verifiable_token(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    key_file = tmp_path / "secret"
    key_file.write_text(SECRET + "\n")
    code, out, err = run_cli(
        [
            "--iss",
            ISS,
            "--aud",
            HUB,
            "--key",
            f"@{key_file}",
            "--publish",
            "https://example.com/books/1",
            "--subscribe-urlpattern",
            "/books/:id",
            "--payload",
            '{"a": 1}',
            "--ttl",
            "60",
            "--pretty",
        ],
        capsys,
    )
    assert code == 0, err
    access = verified(out, SECRET, "HS256")
    assert access.grants.matchers("subscribe") == (("/books/:id", "urlpattern"),)
    assert json.loads(err)["header"] == {"alg": "HS256", "typ": "at+jwt"}


def test_the_command_reads_the_key_from_stdin_and_pem(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    pair = key_pair("ES256")
    monkeypatch.setattr("sys.stdin", io.StringIO(pair.private_pem))
    code, out, _ = run_cli(["--iss", ISS, "--aud", HUB, "--key", "@-", "--subscribe", "*"], capsys)
    assert code == 0
    verified(out, pair.public_pem, "ES256", "subscriber")


def test_dev_defaults(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MERCURE_PUBLISHER_JWT_KEY", SECRET)
    code, out, _ = run_cli(["--dev"], capsys)
    assert code == 0
    claims = jwt.decode(out, options={"verify_signature": False})
    assert (claims["iss"], claims["aud"]) == ("https://localhost", HUB)
    keys = StaticKey(SECRET, "HS256")
    verifier = AccessTokenVerifier([Issuer("https://localhost", publisher=keys)])
    access = asyncio.run(verifier.verify(out, "publisher", HUB, HUB))
    assert (
        access.grants.matchers("publish")
        == access.grants.matchers("subscribe")
        == (("*", "exact"),)
    )


@pytest.mark.parametrize(
    ("args", "reason"),
    [
        (["--aud", HUB, "--key", SECRET, "--publish", "*"], "required"),
        (
            ["--iss", ISS, "--aud", HUB, "--key", SECRET, "--publish", "*", "--payload", "[1]"],
            "JSON object",
        ),
        (
            ["--iss", ISS, "--aud", HUB, "--key", SECRET, "--subscribe", "*", "--payload", "{"],
            "Expecting",
        ),
        (["--iss", ISS, "--aud", HUB, "--key", "@/no/such/file", "--publish", "*"], "No such"),
    ],
)
def test_the_command_says_why_it_refuses(
    args: list[str],
    reason: str,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("MERCURE_PUBLISHER_JWT_KEY", raising=False)
    code, out, err = run_cli(args, capsys)
    assert code == 2 and out == "" and reason in err


def test_legacy_mints_a_0x_token(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """``--legacy``: the 0.x ``mercure`` claim (a compatibility-mode hub taking it is run by
    the docs' 0.x example, tests/test_docs_commands.py)."""
    args = ["--legacy", "--key", SECRET, "--publish", "*", "--subscribe", "/books/{id}"]
    code, out, err = run_cli(args, capsys)
    assert code == 0, err
    claims = jwt.decode(out, SECRET, algorithms=["HS256"])
    assert claims["mercure"] == {"publish": ["*"], "subscribe": ["/books/{id}"]}
    assert "iss" not in claims and "authorization_details" not in claims


def test_legacy_refuses_what_0x_tokens_cannot_say(capsys: pytest.CaptureFixture[str]) -> None:
    args = ["--legacy", "--key", SECRET, "--publish-urlpattern", "/books/:id", "--iss", ISS]
    code, out, err = run_cli(args, capsys)
    assert code == 2 and out == ""
    assert "--issuer, --publish-urlpattern: Mercure 0.x tokens have no such claim" in err
