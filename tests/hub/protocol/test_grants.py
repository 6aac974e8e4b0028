"""``authorization_details`` read into grants (draft-08 §6.4, §6.7, §6.8): all or nothing."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from urlpattern import URLPattern

from skipfilter.hub.auth.verify import Claims, TokenSource
from skipfilter.hub.frontends.v1.errors import BearerError
from skipfilter.hub.frontends.v1.grants import (
    MERCURE_DETAIL,
    AuthorizationDetails,
    Detail,
    legacy_details,
    parse_authorization_details,
)
from skipfilter.hub.frontends.v1.matchers import LEGACY, TopicMatcher, UrlPatternCheck

HUB = "https://hub.example.com/.well-known/mercure"


def detail(actions: Any = ("subscribe",), topics: Any = None, **extra: Any) -> dict[str, Any]:
    body = {
        "type": MERCURE_DETAIL,
        "actions": list(actions) if isinstance(actions, tuple) else actions,
        "topics": topics if topics is not None else [{"match": "*"}],
    }
    return {**body, **extra}


def parse(value: Any) -> AuthorizationDetails:
    return parse_authorization_details(value, HUB, UrlPatternCheck())


def invalid(value: Any) -> str:
    with pytest.raises(BearerError) as caught:
        parse(value)
    assert (caught.value.status, caught.value.error) == (401, "invalid_token")
    return caught.value.description


def test_the_specs_payload_example() -> None:
    grants = parse(
        [
            detail(topics=[{"match": "https://example.com/foo"}], payload={"custom1": 1}),
            detail(
                topics=[{"match": "https://example.com/bar/:id", "match_type": "urlpattern"}],
                payload={"custom2": 2},
            ),
            detail(topics=[{"match": "*"}], payload={"custom3": 3}),
            detail(("publish",), [{"match": "https://example.com/foo", "match_type": "exact"}]),
        ]
    )
    assert grants.details[1] == Detail(
        frozenset({"subscribe"}), (("https://example.com/bar/:id", "urlpattern"),), {"custom2": 2}
    )
    assert grants.matchers("subscribe") == (
        ("https://example.com/foo", "exact"),
        ("https://example.com/bar/:id", "urlpattern"),
        ("*", "exact"),
    )
    assert grants.matchers("publish") == (("https://example.com/foo", "exact"),)

    def matches(matcher: TopicMatcher, topic: str) -> bool:
        value, kind = matcher
        if value == "*":
            return True
        return URLPattern(value, HUB).test(topic, HUB) if kind == "urlpattern" else value == topic

    payload = grants.subscription_payload
    assert payload(("https://example.com/foo", "exact"), matches) == {"custom1": 1}
    sub = ("https://example.com/bar/:id", "urlpattern")
    assert payload(sub, matches) == {"custom2": 2}
    assert payload(("https://example.com/bar/1", "exact"), matches) == {"custom2": 2}
    assert payload(("other", "exact"), matches) == {"custom3": 3}


def test_publish_details_grant_neither_subscriptions_nor_their_payloads() -> None:
    """A token of several details with different actions: a ``publish`` detail, even
    listed first with a payload of its own, is neither a subscribe matcher nor a payload."""
    book, user = "https://example.com/books/1", "https://example.com/users/1"
    grants = parse(
        [
            detail(("publish",), [{"match": book}], payload={"from": "publish"}),
            detail(("publish",), [{"match": user}], payload={"from": "publish"}),
            detail(("subscribe",), [{"match": book}], payload={"from": "subscribe"}),
            detail(("publish", "subscribe"), [{"match": "https://example.com/both"}]),
        ]
    )
    assert grants.matchers("subscribe") == (
        (book, "exact"),
        ("https://example.com/both", "exact"),
    )
    assert grants.matchers("publish") == (
        (book, "exact"),
        (user, "exact"),
        ("https://example.com/both", "exact"),
    )

    def matches(matcher: TopicMatcher, topic: str) -> bool:
        return matcher[0] == topic

    assert grants.subscription_payload((book, "exact"), matches) == {"from": "subscribe"}
    assert grants.subscription_payload((user, "exact"), matches) is None  # publish only: no payload
    assert grants.subscription_payload(("https://example.com/both", "exact"), matches) is None


def test_absent_or_null_grants_nothing() -> None:
    assert parse(None) == AuthorizationDetails() and not parse(None)
    assert parse([]) == AuthorizationDetails()


def test_other_detail_types_are_ignored_whatever_their_shape() -> None:
    grants = parse([{"type": "payment", "topics": "not an array", "actions": 3}, detail()])
    assert len(grants.details) == 1


def test_unknown_actions_grant_nothing_and_keep_the_token() -> None:
    grants = parse([detail(["subscribe", "delete", "future-action"])])
    assert grants.details[0].actions == frozenset({"subscribe"})
    assert parse([detail(["delete"])]).matchers("subscribe") == ()


def test_match_type_defaults_to_exact_and_the_wildcard_needs_no_compiling() -> None:
    grants = parse(
        [
            detail(
                topics=[
                    {"match": "a"},
                    {"match": "b", "match_type": None},
                    {"match": "*", "match_type": "urlpattern"},
                ]
            )
        ]
    )
    assert grants.details[0].topics == (("a", "exact"), ("b", "exact"), ("*", "urlpattern"))


@pytest.mark.parametrize(
    "value",
    [
        "not an array",
        {"type": MERCURE_DETAIL},
        ["a string"],
        [{"actions": ["subscribe"]}],  # no type
        [{"type": 3}],
        [detail(actions=[])],
        [detail(actions="subscribe")],
        [detail(actions=None)],
        [detail(actions=["subscribe", 1])],
        [detail(topics=[])],
        [detail(topics={"match": "*"})],
        [detail(topics=["https://example.com/a"])],  # the 0.x bare string
        [detail(topics=[None])],
        [detail(topics=[{"match_type": "exact"}])],
        [detail(topics=[{"match": ""}])],
        [detail(topics=[{"match": 3}])],
        [detail(topics=[{"match": "a", "match_type": "regex"}])],
        [detail(topics=[{"match": "a", "match_type": "URLPattern"}])],
        [detail(topics=[{"match": "a", "match_type": "Exact"}])],
        [detail(topics=[{"match": "a", "match_type": "mercure"}])],  # 0.x syntax: not on the wire
        [detail(topics=[{"match": "a", "match_type": 1}])],
        [detail(topics=[{"match": "https://example.com/(", "match_type": "urlpattern"}])],
        [detail(topics=[{"match": "a" * 4097}])],
        [detail(topics=[{"match": "a\u200bb"}])],
        [detail(topics=[{"match": "a\nb"}])],
        [detail(payload="a string")],
        [detail(payload=[1])],
        [detail(), detail(topics=[{"match": ""}])],  # one bad entry rejects the token
    ],
)
def test_one_invalid_mercure_entry_rejects_the_token(value: Any) -> None:
    assert invalid(value).startswith("invalid token: authorization_details")


def test_limits_count_mercure_entries_and_their_topics() -> None:
    assert len(parse([detail() for _ in range(100)]).details) == 100
    assert "100" in invalid([detail() for _ in range(101)])
    many = [detail(topics=[{"match": f"t{i}"} for i in range(50)]) for _ in range(2)]
    assert len(parse(many).matchers("subscribe")) == 50
    assert "100" in invalid([*many, detail()])
    others = [{"type": "other"}] * 500
    assert len(parse([*others, detail()]).details) == 1


def test_counts_are_checked_before_any_pattern_is_compiled() -> None:
    compiled: list[str] = []

    def check(value: str, kind: str, base: str) -> str | None:
        compiled.append(value)
        return None

    too_many = [detail(topics=[{"match": f"/{i}", "match_type": "urlpattern"}]) for i in range(101)]
    with pytest.raises(BearerError):
        parse_authorization_details(too_many, HUB, check)
    assert compiled == []


def test_the_0x_claim_becomes_legacy_grants_with_its_payload_for_every_subscription() -> None:
    claims = Claims(("*",), ("https://example.com/books/{id}",), {"u": 1}, None, TokenSource.HEADER)
    grants = legacy_details(claims)
    assert grants.matchers("publish") == (("*", LEGACY),)
    assert grants.matchers("subscribe") == (("https://example.com/books/{id}", LEGACY),)
    assert grants.subscription_payload(("unrelated", "exact"), lambda m, t: False) == {"u": 1}
    empty = legacy_details(Claims(None, None, None, None, TokenSource.HEADER))
    assert empty == AuthorizationDetails()
    with pytest.raises(BearerError):
        legacy_details(Claims(("a\x00",), None, None, None, TokenSource.HEADER))
    with pytest.raises(BearerError):
        legacy_details(
            Claims(tuple(str(i) for i in range(1001)), None, None, None, TokenSource.HEADER)
        )


_JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False)
    | st.text(max_size=6)
    | st.sampled_from(
        [
            MERCURE_DETAIL,
            "publish",
            "subscribe",
            "exact",
            "urlpattern",
            "*",
            "/books/:id",
            "https://e.com/(x",
        ]
    ),
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.dictionaries(
            st.sampled_from(["type", "actions", "topics", "match", "match_type", "payload", "x"]),
            inner,
            max_size=5,
        )
    ),
    max_leaves=20,
)


@given(
    _JSON
    | st.lists(
        st.fixed_dictionaries(
            {"type": st.just(MERCURE_DETAIL)},
            optional={"actions": _JSON, "topics": _JSON, "payload": _JSON},
        ),
        max_size=3,
    )
)
def test_any_json_gives_grants_or_invalid_token(value: Any) -> None:
    try:
        grants = parse(value)
    except BearerError as exc:
        assert (exc.status, exc.error) == (401, "invalid_token")
        return
    for d in grants.details:
        assert d.topics and all(kind in ("exact", "urlpattern") for _, kind in d.topics)
        assert d.payload is None or isinstance(d.payload, dict)
