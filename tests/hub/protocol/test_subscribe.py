"""The 1.0 subscribe query: matcher parameters, their limits, the resume point (draft-08 §3, §7)."""

from __future__ import annotations

from urllib.parse import quote, urlencode

import pytest
from hypothesis import given
from hypothesis import strategies as st

from skipfilter.hub.frontends.v1.errors import RequestError
from skipfilter.hub.frontends.v1.matchers import LEGACY, UrlPatternCheck
from skipfilter.hub.frontends.v1.subscribe import SubscribeRequest, parse_subscribe_query

HUB = "https://hub.example.com/.well-known/mercure"


def parse(query: str | bytes, **kw: object) -> SubscribeRequest:
    return parse_subscribe_query(query, HUB, UrlPatternCheck(), **kw)  # type: ignore[arg-type]


def refused(query: str | bytes, **kw: object) -> RequestError:
    with pytest.raises(RequestError) as caught:
        parse(query, **kw)
    error = caught.value
    assert (error.status, error.error) == (400, "invalid_request")
    assert error.www_authenticate("https://x") is None  # not about the token: no challenge
    return error


def test_each_matcher_parameter_gives_its_type_in_request_order() -> None:
    query = urlencode(
        [
            ("match", "https://example.com/foo"),
            ("match_urlpattern", "https://example.com/bar/:id"),
            ("match_exact", "bar"),
            ("match", "*"),
            ("match_urlpattern", "/books/:id"),
            ("match_urlpattern", "*"),
        ]
    )
    assert parse(query).matchers == (
        ("https://example.com/foo", "exact"),
        ("https://example.com/bar/:id", "urlpattern"),
        ("bar", "exact"),
        ("*", "exact"),
        ("/books/:id", "urlpattern"),
        ("*", "urlpattern"),
    )


def test_identical_matchers_are_one_subscription_other_types_are_not() -> None:
    query = "match=a&match_exact=a&match_urlpattern=%2Fa&match_urlpattern=%2Fa"
    assert parse(query).matchers == (("a", "exact"), ("/a", "urlpattern"))


def test_values_are_form_decoded() -> None:
    assert parse("match=a+b%2Bc%26d&match=").matchers == (("a b+c&d", "exact"), ("", "exact"))


@pytest.mark.parametrize(
    "name",
    [
        "Match",
        "MATCH",
        "match_Exact",
        "match_URLPattern",
        "matches",
        "match_",
        "match_regex",
        "MatchFoo",
        "match%5Furlpattern2",
    ],
)
def test_any_other_name_under_match_is_refused_and_named(name: str) -> None:
    error = refused(f"match=a&{name}=b")
    decoded = name.replace("%5F", "_")
    assert repr(decoded) in error.description


def test_other_parameters_are_ignored() -> None:
    assert parse("match=a&foo=b&Topic=c&mat=d").matchers == (("a", "exact"),)


def test_no_matcher_is_refused() -> None:
    assert "match" in refused("foo=bar").description
    refused("")


def test_the_0x_topic_parameter_is_refused_with_its_replacement_named() -> None:
    error = refused("topic=https://example.com/books/1")
    assert "match_urlpattern" in error.description


@pytest.mark.parametrize(
    "raw",
    [
        "%FF",
        "%C3",
        "a%00b",
        "%0A",
        "%7F",
        "%C2%85",
        "%E2%80%8B",
        "%E2%80%AE",
        "%EF%BB%BF",
        "%ED%A0%80",
    ],
)
def test_values_must_be_utf8_protocol_strings(raw: str) -> None:
    refused(f"match={raw}")
    refused(f"match_urlpattern=https://example.com/{raw}")


def test_a_malformed_url_pattern_is_refused() -> None:
    error = refused(f"match_urlpattern={quote('https://example.com/(unclosed')}")
    assert "URL Pattern" in error.description


def test_at_most_100_matchers() -> None:
    hundred = "&".join(f"match=t{i}" for i in range(100))
    assert len(parse(hundred).matchers) == 100
    assert "100" in refused(hundred + "&match_urlpattern=%2Fx").description


def test_at_most_4096_bytes_a_pattern() -> None:
    assert parse("match=" + "a" * 4096).matchers[0][0] == "a" * 4096
    refused("match=" + "a" * 4097)
    refused("match=" + "%C3%A9" * 2049)  # 4098 bytes of UTF-8 in 2049 characters


def test_limits_are_the_callers_to_choose() -> None:
    refused("match=a&match=b", max_matchers=1)
    refused("match=abc", max_pattern_bytes=2)


def test_a_query_body_adds_its_pairs_and_the_query_cursor_wins() -> None:
    request = parse("match=a&last_event_id=from-query", body=b"match=b&last_event_id=from-body")
    assert request.matchers == (("a", "exact"), ("b", "exact"))
    assert request.last_event_id == "from-query"
    assert parse("match=a", body=b"last_event_id=from-body").last_event_id == "from-body"


def test_the_last_event_id_header_wins_over_the_parameter() -> None:
    request = parse("match=a&last_event_id=q", last_event_id_header="h")
    assert (request.last_event_id, request.resume_requested) == ("h", True)
    assert parse("match=a&last_event_id=q", last_event_id_header="").last_event_id == "q"


@pytest.mark.parametrize(
    ("query", "header", "expected"),
    [
        ("match=a", None, (None, False)),
        ("match=a&last_event_id=", None, (None, True)),
        ("match=a", "", (None, True)),
        ("match=a&last_event_id=earliest", None, ("earliest", True)),
        ("match=a&lastEventID=x", None, (None, False)),  # 0.x's name, 1.0 mode
    ],
)
def test_resume_requested_whenever_a_cursor_is_present_even_empty(
    query: str, header: str | None, expected: tuple[str | None, bool]
) -> None:
    request = parse(query, last_event_id_header=header)
    assert (request.last_event_id, request.resume_requested) == expected


def test_compatibility_takes_0x_topics_and_lastEventID() -> None:
    request = parse(
        "topic=https://example.com/books/{id}&match=a&lastEventID=x", compatibility=True
    )
    assert request.matchers == (("https://example.com/books/{id}", LEGACY), ("a", "exact"))
    assert (request.last_event_id, request.resume_requested) == ("x", True)
    assert parse("topic=a&last_event_id=y&lastEventID=x", compatibility=True).last_event_id == "y"
    with pytest.raises(RequestError):
        parse("topic=a%00", compatibility=True)
    with pytest.raises(RequestError):
        parse("Match=a&topic=b", compatibility=True)


def test_pattern_checks_are_the_callers_to_give() -> None:
    calls: list[tuple[str, str, str]] = []

    def check(value: str, match_type: str, base: str) -> str | None:
        calls.append((value, match_type, base))
        return "refused by the index" if value == "/bad" else None

    assert parse_subscribe_query("match_urlpattern=%2Fok&match=x", HUB, check).matchers
    assert calls == [("/ok", "urlpattern", HUB), ("x", "exact", HUB)]
    with pytest.raises(RequestError, match="refused by the index"):
        parse_subscribe_query("match_urlpattern=%2Fbad", HUB, check)


_NAMES = st.sampled_from(
    [
        "match",
        "match_exact",
        "match_urlpattern",
        "Match",
        "matchx",
        "topic",
        "last_event_id",
        "lastEventID",
        "foo",
        "",
    ]
)
_RAW = st.binary(max_size=12).map(lambda b: quote(b, safe="").encode())


@given(
    st.lists(st.tuples(_NAMES | st.text(max_size=8), _RAW | st.text(max_size=8)), max_size=8),
    st.booleans(),
)
def test_any_query_gives_a_request_or_invalid_request(
    pairs: list[tuple[str, bytes | str]], compatibility: bool
) -> None:
    query = b"&".join(
        quote(n, safe="").encode() + b"=" + (v if isinstance(v, bytes) else quote(v).encode())
        for n, v in pairs
    )
    try:
        request = parse(query, compatibility=compatibility)
    except RequestError as exc:
        assert (exc.status, exc.error) == (400, "invalid_request")
        return
    assert request.matchers
    assert len(request.matchers) <= 100
