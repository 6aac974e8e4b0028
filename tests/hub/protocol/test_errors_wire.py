"""RFC 6750 challenges as the Go hub writes them, and the protocol's string and form rules."""

from __future__ import annotations

import doctest
import importlib
import pkgutil
import unicodedata

import pytest
from hypothesis import given
from hypothesis import strategies as st

import skipfilter.hub.frontends.v1
from skipfilter.hub.frontends.v1.errors import BearerError, RequestError
from skipfilter.hub.frontends.v1.wire import parse_urlencoded, string_problem

METADATA = "https://hub.example.com/.well-known/oauth-protected-resource/.well-known/mercure"


def test_no_token_is_a_bare_challenge_naming_the_metadata() -> None:
    error = BearerError.missing_token()
    assert (error.status, error.error) == (401, None)
    assert error.www_authenticate(METADATA) == f'Bearer resource_metadata="{METADATA}"'
    assert error.www_authenticate() == "Bearer"


@pytest.mark.parametrize(
    ("error", "status", "code"),
    [
        (BearerError.invalid_token("expired"), 401, "invalid_token"),
        (BearerError.insufficient_scope("no grant"), 403, "insufficient_scope"),
        (BearerError.invalid_request("two headers"), 400, "invalid_request"),
    ],
)
def test_each_code_renders_the_go_hubs_exact_challenge(
    error: BearerError, status: int, code: str
) -> None:
    assert error.status == status
    assert error.www_authenticate(METADATA) == (
        f'Bearer error="{code}", resource_metadata="{METADATA}"'
    )
    assert error.www_authenticate() == f'Bearer error="{code}"'


def test_a_description_is_sent_only_on_request_and_only_in_rfc6750s_charset() -> None:
    error = BearerError.invalid_token('the "aud" claim \\ é')
    assert error.description == 'invalid token: the "aud" claim \\ é'
    value = error.www_authenticate(None, describe=True)
    assert (
        value
        == 'Bearer error="invalid_token", error_description="invalid token: the ?aud? claim ? ?"'
    )


def test_quotes_in_the_metadata_url_cannot_break_the_challenge() -> None:
    value = BearerError.missing_token().www_authenticate('https://h/"x\\')
    assert value == 'Bearer resource_metadata="https://h/\\"x\\\\"'


def test_a_request_error_has_no_challenge() -> None:
    error = RequestError.bad_request("unknown parameter 'Match'")
    assert (error.status, error.error, error.www_authenticate(METADATA)) == (
        400,
        "invalid_request",
        None,
    )
    assert not isinstance(error, BearerError)


def _oracle(value: str) -> bool:
    """A protocol string, from the spec's words, one character at a time."""
    return not any(
        ord(c) <= 0x1F or 0x7F <= ord(c) <= 0x9F or unicodedata.category(c) in ("Cf", "Cs")
        for c in value
    )


@pytest.mark.parametrize(
    "value",
    ["a\x00b", "a\nb", "\x1f", "\x7f", "\x80", "\x9f", "a\u200bb", "\u202e", "\ufeff", "\xad"],
)
def test_controls_and_format_characters_are_refused(value: str) -> None:
    assert string_problem(value) is not None


@pytest.mark.parametrize(
    "value", ["", "https://example.com/books/1", "é", "日本/本", "a b", "\xa0"]
)
def test_other_text_is_allowed(value: str) -> None:
    assert string_problem(value) is None


@given(st.text())
def test_string_rule_agrees_with_the_spec_character_by_character(value: str) -> None:
    assert (string_problem(value) is None) == _oracle(value)


@pytest.mark.parametrize(
    ("query", "pairs"),
    [
        (b"match=a+b", [(b"match", b"a b")]),
        (b"match=%2B%26%3D", [(b"match", b"+&=")]),
        (b"flag&&x=", [(b"flag", b""), (b"x", b"")]),
        (b"a=b=c", [(b"a", b"b=c")]),
        (b"a=%zz%4", [(b"a", b"%zz%4")]),
        (b"a=%C3%A9", [(b"a", "é".encode())]),
        (b"a;b=c", [(b"a;b", b"c")]),
        ("m=é", [(b"m", "é".encode())]),
    ],
)
def test_forms_decode_the_whatwg_way(query: bytes | str, pairs: list[tuple[bytes, bytes]]) -> None:
    assert parse_urlencoded(query) == pairs


@pytest.mark.parametrize(
    "name",
    sorted(
        m.name
        for m in pkgutil.iter_modules(
            skipfilter.hub.frontends.v1.__path__, "skipfilter.hub.frontends.v1."
        )
    ),
)
def test_docstring_examples_run(name: str) -> None:
    failures, _ = doctest.testmod(importlib.import_module(name), optionflags=doctest.ELLIPSIS)
    assert failures == 0
