"""The urlpattern syntax: WHATWG URL Patterns, to the letter of the standard's own test data.

- Every case of web-platform-tests' urlpatterntestdata.json whose pattern is a string and
  whose inputs are URL strings, through compile_selector and through one TopicIndex
  holding every such pattern at once (against brute force with the ``urlpattern`` package).
- The canonical form topics are filed by agrees with the package's parser, and the facts a
  compiled pattern is filed by are honest, on random topics and patterns.
- Errors say why; typed selectors; pickling.
"""

from __future__ import annotations

import json
import pickle
from pathlib import Path
from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from skipfilter import TopicIndex
from skipfilter.errors import InvalidSelector
from skipfilter.selectors import TypedSelector, compile_selector, matches
from skipfilter.selectors.urlpattern import PATTERN_LIMIT, Resolver, host_key
from skipfilter.selectors.urlpattern.canonical import href_of, key_of, split
from tests.selectors import urlcases
from tests.selectors.urloracle import components, urlpattern_oracle, urlpattern_valid

VECTORS = Path(__file__).parent / "vectors" / "urlpatterntestdata.json"
HUB = "https://example.com/.well-known/mercure"


def _string_cases() -> list[dict[str, Any]]:
    """The cases whose pattern is a string (and a base URL) and whose inputs are strings."""
    cases = json.loads(VECTORS.read_text(encoding="utf-8"))["cases"]
    return [
        case
        for case in cases
        if case.get("pattern")
        and all(isinstance(part, str) for part in case["pattern"])
        and len(case["pattern"]) <= 2
        and all(isinstance(part, str) for part in case.get("inputs", []))
        and "skip" not in case
    ]


CASES = _string_cases()


def test_the_vectors_are_the_standards_cases() -> None:
    data = json.loads(VECTORS.read_text(encoding="utf-8"))
    assert "web-platform-tests" in data["source"]
    assert len(CASES) >= 50
    assert sum(case.get("expected_obj") == "error" for case in CASES) >= 8
    assert sum(bool(case.get("inputs")) for case in CASES) >= 45


@pytest.mark.parametrize("case", CASES, ids=lambda case: " ".join(case["pattern"]))
def test_standard_case_through_compile_selector(case: dict[str, Any]) -> None:
    text, base = case["pattern"][0], (case["pattern"][1:] or [None])[0]
    if case.get("expected_obj") == "error":
        refused = InvalidSelector if base != "" else ValueError  # '': no absolute base URL
        with pytest.raises(refused, match=r"URL pattern|base_url must be an absolute URL"):
            compile_selector(text, "urlpattern", base_url=base)
        return
    selector = compile_selector(text, "urlpattern", base_url=base)
    inputs = case.get("inputs", [])
    if not inputs or (len(inputs) == 2 and inputs[1] != base):
        return  # another base for the topic: the index test below covers it
    expected = isinstance(case.get("expected_match"), dict)
    assert selector.matches(inputs[0]) is expected


def test_every_standard_case_in_one_index_against_brute_force() -> None:
    """All the standard's valid patterns subscribed to one index (each with its base), every
    input matched (against its base): the subscribers are exactly those the package finds."""
    index = TopicIndex("urlpattern", cache_size=4)
    subscribers: dict[int, tuple[str, str | None]] = {}
    for case in CASES:
        if case.get("expected_obj") == "error":
            continue
        text, base = case["pattern"][0], (case["pattern"][1:] or [None])[0]
        subscribers[index.subscribe([text], base_url=base)] = (text, base)
    probes = [case["inputs"] for case in CASES if case.get("inputs")]
    assert len(subscribers) >= 40 and len(probes) >= 45
    for inputs in probes:
        topic, base = inputs[0], (inputs[1:] or [None])[0]
        expected = {
            sid
            for sid, (text, pattern_base) in subscribers.items()
            if urlpattern_oracle(text, topic, pattern_base, base)
        }
        assert set(index.match([topic], base_url=base)) == expected, inputs


def test_the_standard_cases_match_as_their_data_says() -> None:
    """The brute force itself agrees with the data (so the test above tests the index)."""
    for case in CASES:
        if case.get("expected_obj") == "error" or not case.get("inputs"):
            continue
        text, base = case["pattern"][0], (case["pattern"][1:] or [None])[0]
        topic, topic_base = case["inputs"][0], (case["inputs"][1:] or [None])[0]
        expected = isinstance(case.get("expected_match"), dict)
        assert urlpattern_oracle(text, topic, base, topic_base) is expected, case


# -- the canonical form topics are filed by ------------------------------------------------


@settings(max_examples=400)
@given(urlcases.topics | urlcases.opaque_topics, st.sampled_from(urlcases.BASES))
@example("https://EXAMPLE.com:443", None)
@example("https://example.com:443/books/1", None)  # lower case: the plain-URL shortcut
@example("http://example.com:80/books/1?x", None)
@example("https://example.com:443", HUB)
@example("urn:isbn:1", None)
@example("https://example.com/a/%2e%2E/b?x#y", None)
@example("foo:/.//x", None)
@example("/books/1", HUB)
@example("https://example.com/x?\ud800", None)
@example("", HUB)  # after "/x": the head cache must not take "" for a path under "/"
def test_canonical_form_is_the_packages(topic: str, base: str | None) -> None:
    """Through a fresh resolver and through one shared by every example (its cache of plain
    heads filled by earlier topics)."""
    parts = components(topic, base)
    SHARED[base].canonical("/x")
    for resolver in (Resolver(base), SHARED[base]):
        found = resolver.canonical(topic)
        if parts is None:
            assert found is None
            continue
        assert found is not None
        key, href = split(found)
        assert key == key_of(parts[0], parts[3], parts[4], parts[5])
        assert components(href) == parts, href  # the href parses back to the same URL


SHARED = {base: Resolver(base) for base in urlcases.BASES}


@given(
    st.lists(
        st.sampled_from(["a", "B", "1", "-", "_", "~", ".", "%2e", "é", " ", "?", ""]), max_size=4
    )
)
def test_a_plain_head_does_not_vouch_for_an_odd_tail(tail: list[str]) -> None:
    """The head cache: after ``https://example.com/books/`` and ``/books/`` were seen plain,
    a topic under them is still canonicalized as the package does."""
    for base in urlcases.BASES[1:]:
        resolver = SHARED[base]
        for head in ("https://example.com/books/", "/books/"):
            assert resolver.canonical(head + "x") is not None
            topic = head + "".join(tail)
            parts = components(topic, base)
            found = resolver.canonical(topic)
            assert (found is None) is (parts is None)
            if found is not None and parts is not None:
                key, href = split(found)
                assert key == key_of(parts[0], parts[3], parts[4], parts[5]), topic
                assert components(href) == parts


@given(st.lists(st.sampled_from("/ab%2e.:@\\?#\t"), max_size=12).map("".join))
def test_canonical_form_of_odd_paths(path: str) -> None:
    for topic, base in ((f"https://example.com{path}", None), (path, HUB)):
        parts = components(topic, base)
        found = Resolver(base).canonical(topic)
        assert (found is None) is (parts is None)
        if parts is not None and found is not None:
            key, href = split(found)
            assert key == key_of(parts[0], parts[3], parts[4], parts[5])
            assert components(href) == parts


def test_href_of_inserts_the_dot_a_hostless_double_slash_path_needs() -> None:
    assert href_of(["foo", "", "", "", "", "//x", "", ""]) == "foo:/.//x"
    assert href_of(["urn", "", "", "", "", "isbn:1", "", ""]) == "urn:isbn:1"
    assert href_of(["https", "u", "", "a.b", "8", "/", "q", "f"]) == "https://u@a.b:8/?q#f"


def test_a_base_that_is_no_absolute_url_is_refused() -> None:
    with pytest.raises(ValueError, match="base_url must be an absolute URL"):
        Resolver("/relative")
    with pytest.raises(ValueError, match="base_url must be an absolute URL"):
        TopicIndex("urlpattern", base_url="not a url")


# -- the facts patterns are filed by -------------------------------------------------------


@settings(max_examples=300)
@given(urlcases.patterns, st.lists(urlcases.topics, min_size=1, max_size=6))
@example("https://EXAMPLE.com:443/books/1", ["https://example.com/books/1?x#y"])
@example("https://*.example.com/*", ["https://a.example.com/x"])
@example("http{s}?://{*.}?example.com/books/:id", ["http://example.com/books/1"])
def test_filing_facts_are_honest(text: str, topics: list[str]) -> None:
    """A topic a pattern matches has the key (literal), key prefix (origin) or host-key
    prefix (host) the pattern is filed by, and the number of '/' it says."""
    base = HUB
    if not urlpattern_valid(text, base):
        with pytest.raises(InvalidSelector):
            compile_selector(text, "urlpattern", base_url=base)
        return
    selector = compile_selector(text, "urlpattern", base_url=base)
    facts = selector.url
    for topic in topics:
        expected = urlpattern_oracle(text, topic, base)
        assert selector.matches(topic) is expected, (text, topic)
        if facts is None:
            assert selector.match_all
            continue
        found = Resolver(base).canonical(topic)
        if found is None:
            assert not expected
            continue
        key, _ = split(found)
        if facts.filing != "origin" or key.startswith(facts.key):  # where the index tests
            assert bool(facts.test(found)) is expected, (text, found)
        if not expected:
            if facts.filing == "literal" and not facts.tested:
                assert key != facts.key
            continue
        _, host, _, pathname = key.split("\n")
        if facts.filing == "literal":
            assert key == facts.key
        elif facts.filing == "origin":
            assert key.startswith(facts.key)
        elif facts.filing == "host":
            assert host_key(host, pathname).startswith(facts.key)
        if facts.segments is not None:
            assert pathname.count("/") == facts.segments


def test_plainly_literal_patterns_are_not_compiled_and_file_like_compiled_ones() -> None:
    """The literal shortcut yields the facts the package's own components give."""
    for text in [
        "https://example.com/books/1",
        "http://a-b.example.org:8080/x/y/",
        "https://example.com/caf%C3%A9",
        "https://localhost/",
    ]:
        selector = compile_selector(text, "urlpattern")
        assert selector.url is not None and selector.url.filing == "literal"
        assert not selector.url.tested
        assert selector.test.__qualname__.startswith("_literal_selector")
        parts = components(text.replace("https://", "https://").rstrip(), None)
        assert parts is not None
        assert selector.url.key == key_of(parts[0], parts[3], parts[4], parts[5])
    assert compile_selector("https://EXAMPLE.com/x", "urlpattern").url.filing == "literal"  # type: ignore[union-attr]


@given(
    st.sampled_from(["http", "https"]),
    st.lists(st.sampled_from(["a", "b-c", "x1", "0", "xn--a", "ab"]), min_size=1, max_size=3),
    st.sampled_from(["", ":80", ":443", ":8080", ":65535", ":99999"]),
    st.lists(st.sampled_from(["a", "%41", ".", "..", "%2e", "~", "@", "!$&',;="]), max_size=3),
)
def test_literal_shortcut_agrees_with_the_package(
    scheme: str, labels: list[str], port: str, segments: list[str]
) -> None:
    text = f"{scheme}://{'.'.join(labels)}{port}/{'/'.join(segments)}"
    if not urlpattern_valid(text):
        with pytest.raises(InvalidSelector):
            compile_selector(text, "urlpattern")
        return
    selector = compile_selector(text, "urlpattern")
    for topic in [text, text.upper(), f"{scheme}://{'.'.join(labels)}/{'/'.join(segments)}"]:
        assert selector.matches(topic) is urlpattern_oracle(text, topic), topic


# -- the selector API ------------------------------------------------------------------------


def test_star_alone_matches_everything() -> None:
    star = compile_selector("*", "urlpattern")
    assert star.match_all and star.matches("not a url") and star.matches("")


def test_literal_is_canonical_not_string_equality() -> None:
    root = compile_selector("https://example.com/", "urlpattern")
    assert root.matches("https://EXAMPLE.com:443")
    assert root.matches("https://example.com:443/")  # lower case: the parser's shortcut
    assert root.matches("https://example.com/?page=2#top")
    assert not root.matches("http://example.com/")
    assert not root.matches("https://example.com:8443/")
    books = compile_selector("https://example.com/books/1", "urlpattern")
    assert books.matches("https://example.com:443/books/1")
    assert compile_selector("http://example.com/books/:id", "urlpattern").matches(
        "http://example.com:80/books/1"
    )
    assert not books.matches("https://example.com/books/%31")  # compared as written
    assert not books.matches("https://example.com/Books/1")  # paths are case-sensitive
    assert compile_selector("https://example.com/café", "urlpattern").matches(
        "https://example.com/caf%C3%A9"
    )


def test_relative_patterns_and_topics_resolve_against_the_base() -> None:
    books = compile_selector("/books/:id", "urlpattern", base_url=HUB)
    assert books.matches("/books/1") and books.matches("https://example.com/books/1")
    assert not books.matches("https://other.example/books/1")
    assert compile_selector("books/:id", "urlpattern", base_url=HUB).matches(
        "https://example.com/.well-known/books/1"
    )
    absolute = compile_selector("https://example.com/books/:id", "urlpattern", base_url=HUB)
    assert absolute.matches("/books/7")
    assert not compile_selector("https://example.com/books/:id", "urlpattern").matches("/books/7")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("/books/:id", "relative URL pattern '/books/:id' needs a base URL"),
        ("https://example.com/a+b", "invalid URL pattern 'https://example.com/a\\+b': parser"),
        ("https://example.com/(a", "invalid URL pattern"),
        ("https://example.com/\ud800", "not valid UTF-8"),
        ("https://example.com/" + "a" * PATTERN_LIMIT, "longer than the limit of 4096"),
    ],
)
def test_refused_patterns_say_why(text: str, message: str) -> None:
    with pytest.raises(InvalidSelector, match=message) as info:
        compile_selector(text, "urlpattern")
    assert info.value.selector == text and info.value.column is not None


def test_the_limit_is_4096_utf8_bytes() -> None:
    head = "https://example.com/"
    fits = head + "é" * ((PATTERN_LIMIT - len(head)) // 2)
    assert len(fits.encode()) <= PATTERN_LIMIT
    compile_selector(fits, "urlpattern")
    over = fits + "é"
    with pytest.raises(InvalidSelector, match="of 4098 bytes") as info:
        compile_selector(over, "urlpattern")
    assert info.value.column == len(over)


def test_no_catastrophic_backtracking() -> None:
    """The package runs regexps in linear time: a hostile pattern costs what its input does."""
    hostile = compile_selector("https://example.com/((?:a+)+)+b", "urlpattern")
    assert not hostile.matches("https://example.com/" + "a" * 50_000 + "c")


def test_base_url_is_for_urlpattern_only() -> None:
    with pytest.raises(ValueError, match="base_url applies to urlpattern"):
        compile_selector("/a/{b}", "mercure", base_url=HUB)


def test_exact_is_a_selector_type() -> None:
    exact = compile_selector("https://example.com/{id}", "exact")
    assert exact.exact == "https://example.com/{id}" and not exact.match_all
    assert compile_selector("*", "exact").exact == "*"  # the index applies Mercure's '*'
    assert matches("https://example.com/books/:id", "https://example.com/books/1", "urlpattern")


def test_typed_selectors_are_checked_and_hashable() -> None:
    typed = TypedSelector("https://example.com/books/:id", "urlpattern")
    assert typed == TypedSelector("https://example.com/books/:id", "urlpattern")
    assert len({typed, TypedSelector("https://example.com/books/:id")}) == 2
    assert TypedSelector("x").syntax == "exact"
    with pytest.raises(ValueError, match="unknown selector type 'uri'"):
        TypedSelector("x", "uri")
    with pytest.raises(TypeError, match="a selector must be a string"):
        TypedSelector(42, "exact")  # type: ignore[arg-type]


def test_selectors_pickle_with_their_base() -> None:
    selector = compile_selector("/books/:id", "urlpattern", base_url=HUB)
    copy = pickle.loads(pickle.dumps(selector))
    assert copy == selector and copy.base == HUB and copy.matches("/books/1")
    literal = compile_selector("https://example.com/a", "urlpattern")
    assert pickle.loads(pickle.dumps(literal)).matches("https://EXAMPLE.com/a")
