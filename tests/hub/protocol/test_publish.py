"""The 1.0 publish form (draft-08 §5): topics, the reserved namespace, id, type, retry, 413."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from skipfilter.hub.frontends.v1.errors import RequestError
from skipfilter.hub.frontends.v1.publish import (
    PublishForm,
    addresses_reserved_namespace,
    decode_form,
    parse_publish_form,
)

BOOK = "https://example.com/books/1"


def refused(pairs: list[tuple[str, str]], status: int = 400, **kw: object) -> str:
    with pytest.raises(RequestError) as caught:
        parse_publish_form(pairs, **kw)  # type: ignore[arg-type]
    assert caught.value.status == status
    assert caught.value.www_authenticate("https://x") is None
    return caught.value.description


def test_a_full_form() -> None:
    form = parse_publish_form(
        [
            ("topic", BOOK),
            ("topic", "https://example.com/users/42/books/1"),
            ("data", "line 1\nline 2"),
            ("private", "on"),
            ("id", "urn:uuid:1"),
            ("type", "book"),
            ("retry", "3000"),
            ("unknown", "ignored"),
        ]
    )
    assert form == PublishForm(
        (BOOK, "https://example.com/users/42/books/1"),
        "line 1\nline 2",
        True,
        "urn:uuid:1",
        "book",
        3000,
    )


def test_the_smallest_form() -> None:
    assert parse_publish_form([("topic", "bar")]) == PublishForm(("bar",))


@pytest.mark.parametrize("value", ["", "on", "false", "0"])
def test_private_is_its_presence_whatever_its_value(value: str) -> None:
    assert parse_publish_form([("topic", BOOK), ("private", value)]).private


def test_a_topic_is_required() -> None:
    assert "topic" in refused([("data", "x")])


@pytest.mark.parametrize("topic", ["a\x00b", "a\nb", "\x85", "a\u200bb", "\u202e"])
def test_topics_must_be_protocol_strings(topic: str) -> None:
    refused([("topic", BOOK), ("topic", topic)])


def test_the_wildcard_cannot_be_published_even_as_an_alternate() -> None:
    assert "'*'" in refused([("topic", "*")])
    refused([("topic", BOOK), ("topic", "*")])


RESERVED = [
    "/.well-known/mercure",
    "/.well-known/mercure/",
    "/.well-known/mercure/subscriptions/exact/a/b",
    "https://hub.example.com/.well-known/mercure/subscriptions/exact/a/b",
    "https://any.other.host:8443/.well-known/mercure",
    "http://x/.well-known/%6Dercure/x",
    "http://x/.well-known/merc%75re",
    "/.well-known/mercure/../mercure/x",
    "/a/%2e%2E/.well-known/mercure",
    "\\.well-known\\mercure",
    "mercure/x",  # relative to the hub URL /.well-known/mercure: /.well-known/mercure/x
    "",  # the hub URL itself
    "//other.host/.well-known/mercure?q#f",
    "foo:/.well-known/mercure",
]
NOT_RESERVED = [
    "/.well-known/mercurex",
    "/.WELL-KNOWN/mercure",
    "/.well-known/mercure%2Fx",
    "/.well-known/",
    "urn:x:/.well-known/mercure",
    "http://[not a url",
    "bar",
    BOOK,
    "https://example.com/.well-known/mercure-like",
]


@pytest.mark.parametrize("topic", RESERVED)
def test_the_reserved_namespace_is_tested_on_the_resolved_topic(topic: str) -> None:
    assert addresses_reserved_namespace(topic)
    assert "reserved namespace" in refused([("topic", BOOK), ("topic", topic)])


@pytest.mark.parametrize("topic", NOT_RESERVED)
def test_topics_outside_the_namespace_pass(topic: str) -> None:
    assert not addresses_reserved_namespace(topic)
    assert parse_publish_form([("topic", topic)]).topics == (topic,)


def test_the_reserved_namespace_follows_the_hub_path() -> None:
    assert addresses_reserved_namespace("/hub/x", "/hub")
    assert not addresses_reserved_namespace("/.well-known/mercure", "/hub")


@pytest.mark.parametrize("value", ["#1", "earliest", "a\x00", "a\u200b", "\x9f", " x", "x\t"])
def test_bad_ids_are_refused(value: str) -> None:
    assert "'id'" in refused([("topic", BOOK), ("id", value)])


def test_an_empty_id_lets_the_hub_generate_one() -> None:
    assert parse_publish_form([("topic", BOOK), ("id", "")]).id is None


@pytest.mark.parametrize("value", ["mercure", "a\nb", "a\u200eb", "\x7f"])
def test_bad_types_are_refused(value: str) -> None:
    assert "'type'" in refused([("topic", BOOK), ("type", value)])


def test_types_near_the_reserved_one_pass() -> None:
    assert parse_publish_form([("topic", BOOK), ("type", "Mercure")]).type == "Mercure"


@pytest.mark.parametrize("value", ["+1", "1.0", "-1", "\u0661", "", " 1", "9" * 21])
def test_retry_is_ascii_digits(value: str) -> None:
    assert "'retry'" in refused([("topic", BOOK), ("retry", value)])


@pytest.mark.parametrize("name", ["data", "id", "type", "retry"])
def test_single_fields_given_twice_are_refused(name: str) -> None:
    refused([("topic", BOOK), (name, "1"), (name, "2")])


def test_too_many_topics_is_413() -> None:
    many = [("topic", f"t{i}") for i in range(1000)]
    assert len(parse_publish_form(many).topics) == 1000
    assert "1000" in refused([*many, ("topic", "one more")], status=413)
    refused([("topic", "a"), ("topic", "b")], status=413, max_topics=1)


def test_forms_must_be_utf8() -> None:
    assert decode_form(b"topic=%C3%A9&data=a+b") == [("topic", "é"), ("data", "a b")]
    with pytest.raises(RequestError) as caught:
        decode_form(b"topic=a&data=%FF")
    assert caught.value.status == 400
    with pytest.raises(RequestError):
        decode_form(b"%FF=a")


_NAMES = st.sampled_from(["topic", "data", "id", "type", "retry", "private", "x"])


@given(st.lists(st.tuples(_NAMES, st.text(max_size=12)), max_size=8))
def test_any_form_gives_a_publish_or_a_4xx(pairs: list[tuple[str, str]]) -> None:
    try:
        form = parse_publish_form(pairs, max_topics=5)
    except RequestError as exc:
        assert exc.status in (400, 413)
        return
    assert form.topics == tuple(v for n, v in pairs if n == "topic")
    assert "*" not in form.topics
    assert not any(addresses_reserved_namespace(t) for t in form.topics)


_TRICKY = st.text(alphabet="/.\\%?#:mercuwlkn-Ehx6D2e5F \t\n\x00\x1f", max_size=30)


@given(st.one_of(_TRICKY, st.sampled_from(RESERVED + NOT_RESERVED), st.text(max_size=20)))
def test_the_shortcut_agrees_with_parsing_every_topic(topic: str) -> None:
    """The answer without parsing (no 'mercure', no '%', a path of its own) is the parser's."""
    from skipfilter.hub.frontends.v1 import publish

    slow = publish._any_url().exec(topic, "https://hub.invalid/.well-known/mercure")
    expected = slow is not None and (
        (path := publish._decode_unreserved(slow["pathname"]["input"])) == "/.well-known/mercure"
        or path.startswith("/.well-known/mercure/")
    )
    assert addresses_reserved_namespace(topic) == expected


@pytest.mark.parametrize("topic", [" ", "\x00?x", " #f", "mer\tcure/x", "/.well-known/mer\ncure"])
def test_what_the_url_parser_strips_does_not_fool_the_shortcut(topic: str) -> None:
    assert addresses_reserved_namespace(topic)
