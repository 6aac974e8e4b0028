"""Tests for skipfilter.selectors: every syntax against a brute-force oracle written here."""

from __future__ import annotations

import doctest
import pickle
import re
from collections.abc import Callable

import pytest
import uritemplate
from hypothesis import example, given
from hypothesis import strategies as st
from uritemplate.variable import VariableValue

from skipfilter.errors import InvalidSelector
from skipfilter.selectors import DELIMITERS, SYNTAXES, Selector, compile_selector, compiler, matches
from skipfilter.selectors import uritemplate as ours
from skipfilter.selectors.selector import regex_of
from tests.selectors.urloracle import urlpattern_oracle, urlpattern_valid

# -- oracles: the most obvious word-by-word matchers --------------------------------------


def amqp_words(text: str) -> list[str]:
    """RabbitMQ's split: on '.', except that "" has no words ("a..b" has three)."""
    return text.split(".") if text else []


def amqp_oracle(selector: str, topic: str) -> bool:
    """Words as RabbitMQ splits them; '*' one word, '#' any number of words."""

    def rec(p: list[str], t: list[str]) -> bool:
        if not p:
            return not t
        if p[0] == "#":
            return any(rec(p[1:], t[i:]) for i in range(len(t) + 1))
        return bool(t) and p[0] in ("*", t[0]) and rec(p[1:], t[1:])

    return rec(amqp_words(selector), amqp_words(topic))


def nats_oracle(selector: str, topic: str) -> bool:
    """Tokens split on '.'; '*' one token, '>' (last) one or more tokens."""

    def rec(p: list[str], t: list[str]) -> bool:
        if not p:
            return not t
        if p[0] == ">":
            return len(t) >= 1
        return bool(t) and p[0] in ("*", t[0]) and rec(p[1:], t[1:])

    return rec(selector.split("."), topic.split("."))


def mqtt_oracle(selector: str, topic: str) -> bool:
    """Levels split on '/'; '+' one level, '#' (last) zero or more; wildcard-first skips '$'."""
    if topic.startswith("$") and selector.split("/")[0] in ("+", "#"):
        return False

    def rec(p: list[str], t: list[str]) -> bool:
        if not p:
            return not t
        if p[0] == "#":
            return True
        return bool(t) and p[0] in ("+", t[0]) and rec(p[1:], t[1:])

    return rec(selector.split("/"), topic.split("/"))


def mercure_oracle(selector: str, topic: str) -> bool:
    """Non-template Mercure selectors: '*' or equality."""
    assert "{" not in selector
    return selector == "*" or selector == topic


def regex_oracle(selector: str, topic: str) -> bool:
    return re.fullmatch(selector, topic) is not None


def nats_valid(text: str) -> bool:
    tokens = text.split(".")
    return bool(text) and all(
        tok and not any(c in tok for c in " \t\n\r\f") and (tok != ">" or i == len(tokens) - 1)
        for i, tok in enumerate(tokens)
    )


def mqtt_valid(text: str) -> bool:
    levels = text.split("/")
    return (
        bool(text)
        and "\x00" not in text
        and all(
            (lvl in ("+", "#") or ("+" not in lvl and "#" not in lvl))
            and (lvl != "#" or i == len(levels) - 1)
            for i, lvl in enumerate(levels)
        )
    )


def check(sel: Selector, topic: str, oracle: Callable[[str, str], bool]) -> None:
    """The compiled selector agrees with the oracle and its facts are honest for ``topic``."""
    expected = oracle(sel.text, topic)
    assert sel.matches(topic) is expected, (sel, topic)
    if sel.exact is not None:
        assert expected == (topic == sel.exact)
        assert sel.matches(sel.exact)
    if expected:
        assert topic.startswith(sel.prefix), (sel, topic)
        if sel.segments is not None:
            assert topic.count(DELIMITERS[sel.syntax]) == sel.segments, (sel, topic)
    if sel.match_all:
        assert expected


# -- strategies: small alphabets so that matches happen often -----------------------------


def joined(words: list[str], sep: str, lo: int, hi: int) -> st.SearchStrategy[str]:
    return st.lists(st.sampled_from(words), min_size=lo, max_size=hi).map(sep.join)


amqp_selectors = joined(["a", "b", "", "*", "#", "a*", "#"], ".", 0, 6)
amqp_topics = joined(["a", "b", "", "*", "#"], ".", 0, 7)
nats_selectors = st.tuples(
    joined(["a", "b", "*", "a*"], ".", 1, 4), st.sampled_from(["", ".>", ".*"])
).map("".join) | st.just(">")
nats_topics = joined(["a", "b", "", "*", ">"], ".", 1, 6)
mqtt_selectors = st.tuples(
    joined(["a", "b", "", "+", "$s", "$"], "/", 1, 4), st.sampled_from(["", "/#", "/+"])
).map("".join).filter(bool) | st.sampled_from(["#", "+", "+/#"])
mqtt_topics = joined(["a", "b", "", "$s", "$", "+", "#"], "/", 1, 6)

regex_atoms = st.sampled_from(["a", "b", ".", r"\.", "[ab]", "ab", "", "a."])
regexes = st.recursive(
    regex_atoms,
    lambda inner: st.one_of(
        st.tuples(inner, inner).map("".join),
        st.tuples(inner, inner).map(lambda p: f"(?:{p[0]}|{p[1]})"),
        st.tuples(inner, inner).map("|".join),
        st.tuples(inner, st.sampled_from(["*", "+", "?", "{2}", "{0,1}"])).map(
            lambda p: p[0] + p[1] if len(p[0]) == 1 and p[0] != "|" else f"(?:{p[0]}){p[1]}"
        ),
    ),
    max_leaves=5,
)
regex_topics = st.text(alphabet="ab.", max_size=6)


# -- property tests against the oracles ---------------------------------------------------


@given(amqp_selectors, st.lists(amqp_topics, max_size=8))
@example("#.*", [""])
@example("a.#.#.b", ["a.b", "a.x.y.b", "a..b"])
def test_amqp_matches_oracle(text: str, topics: list[str]) -> None:
    sel = compile_selector(text, "amqp")
    for topic in [*topics, "", text]:
        check(sel, topic, amqp_oracle)


@given(nats_selectors, st.lists(nats_topics, max_size=8))
def test_nats_matches_oracle(text: str, topics: list[str]) -> None:
    sel = compile_selector(text, "nats")
    for topic in [*topics, "", text]:
        check(sel, topic, nats_oracle)


@given(mqtt_selectors, st.lists(mqtt_topics, max_size=8))
@example("+/#", ["$s", "$s/a", "a", ""])
def test_mqtt_matches_oracle(text: str, topics: list[str]) -> None:
    sel = compile_selector(text, "mqtt")
    for topic in [*topics, "", text]:
        check(sel, topic, mqtt_oracle)


@given(regexes, st.lists(regex_topics, max_size=8))
def test_regex_matches_oracle(text: str, topics: list[str]) -> None:
    sel = compile_selector(text, "regex")
    for topic in [*topics, "", text]:
        check(sel, topic, regex_oracle)


@given(st.text(alphabet="ab*/:", max_size=8) | st.just("*"), st.lists(st.text("ab*/:", max_size=8)))
def test_mercure_non_template_matches_oracle(text: str, topics: list[str]) -> None:
    sel = compile_selector(text)
    for topic in [*topics, "", text]:
        check(sel, topic, mercure_oracle)


# -- facts an index relies on -------------------------------------------------------------

FACTS = [
    # syntax, selector, exact, prefix, match_all
    ("mercure", "*", None, "", True),
    ("mercure", "/users/42", "/users/42", "/users/42", False),
    ("mercure", "https://x/{id", "https://x/{id", "https://x/{id", False),
    ("mercure", "", "", "", False),
    ("amqp", "#", None, "", True),
    ("amqp", "#.#", None, "", True),
    ("amqp", "*", None, "", False),
    ("amqp", "a.b", "a.b", "a.b", False),
    ("amqp", "a*.b", "a*.b", "a*.b", False),
    ("amqp", "a.b.*", None, "a.b.", False),
    ("amqp", "a.b.#", None, "a.b", False),
    ("amqp", "a.#.#", None, "a", False),
    ("amqp", "a.#.b", None, "a.", False),
    ("amqp", "*.a", None, "", False),
    ("amqp", "", "", "", False),
    ("nats", ">", None, "", True),
    ("nats", "*", None, "", False),
    ("nats", "a.>", None, "a.", False),
    ("nats", "a.*.c", None, "a.", False),
    ("nats", "a*.b", "a*.b", "a*.b", False),
    ("mqtt", "#", None, "", False),  # does not match "$SYS/x"
    ("mqtt", "+", None, "", False),
    ("mqtt", "sport/#", None, "sport", False),
    ("mqtt", "sport/+", None, "sport/", False),
    ("mqtt", "$SYS/#", None, "$SYS", False),
    ("mqtt", "a//b", "a//b", "a//b", False),
    ("regex", "abc", "abc", "abc", False),
    ("regex", "ab*", None, "a", False),
    ("regex", "ab+c", None, "a", False),
    ("regex", r"a\.b", None, "a", False),
    ("regex", "abc|abd", None, "", False),
    ("regex", "(?i)abc", None, "", False),
    ("regex", "users/[0-9]+", None, "users/", False),
    ("regex", "(?s).*", None, "", True),
    ("regex", ".*", None, "", False),  # '.' does not match a newline
]


@pytest.mark.parametrize(("syntax", "text", "exact", "prefix", "match_all"), FACTS)
def test_facts(syntax: str, text: str, exact: str | None, prefix: str, match_all: bool) -> None:
    sel = compile_selector(text, syntax)
    assert (sel.text, sel.syntax) == (text, syntax)
    assert (sel.exact, sel.prefix, sel.match_all) == (exact, prefix, match_all)


@pytest.mark.parametrize("syntax", ["amqp", "nats", "regex"])
@given(st.text(max_size=12))
def test_match_all_matches_arbitrary_strings(syntax: str, topic: str) -> None:
    everything = {"amqp": "#", "nats": ">", "regex": "(?s).*"}[syntax]
    assert compile_selector(everything, syntax).matches(topic)
    assert compile_selector("*", "mercure").matches(topic)


# -- hand-written cases -------------------------------------------------------------------

CASES = [
    # mercure
    ("mercure", "*", "https://example.com/anything", True),
    ("mercure", "*", "", True),
    ("mercure", "/users/42", "/users/42", True),
    ("mercure", "/users/42", "/users/4", False),
    ("mercure", "https://x/{id", "https://x/{id", True),
    ("mercure", "https://x/{id", "https://x/1", False),
    ("mercure", "https://x/*", "https://x/1", False),  # '*' is only special alone
    # amqp
    ("amqp", "#", "", True),
    ("amqp", "#", "a.b.c", True),
    ("amqp", "*", "", False),  # "" has no words, as in RabbitMQ (its routing_SUITE: t25)
    ("amqp", "*", "a", True),
    ("amqp", "*", "a.b", False),
    ("amqp", "", "", True),
    ("amqp", "", ".", False),
    ("amqp", "a.*.b", "a..b", True),  # empty words are words
    ("amqp", "*.*.*", "a..b", True),
    ("amqp", "*.*", "a..b", False),
    ("amqp", "a.#", "a", True),
    ("amqp", "a.#", "a.", True),
    ("amqp", "a.#", "ab", False),
    ("amqp", "#.a", "a", True),
    ("amqp", "#.a", "x.y.a", True),
    ("amqp", "#.a", "xa", False),
    ("amqp", "a.#.#.b", "a.b", True),
    ("amqp", "a.#.#.b", "a.x.y.b", True),
    ("amqp", "a.#.b", "a.b.c", False),
    ("amqp", "a*", "ab", False),  # wildcards only as whole words
    ("amqp", "a*", "a*", True),
    ("amqp", "a.#b", "a.x", False),
    ("amqp", "#.b.#.c.#", "x.b.y.c", True),
    ("amqp", "#.b.#.c.#", "c.b", False),
    ("amqp", "*.#.*", "a", False),
    ("amqp", "*.#.*", "a.b", True),
    # nats
    ("nats", ">", "a", True),
    ("nats", ">", "a.b.c", True),
    ("nats", "a.>", "a", False),  # '>' needs at least one token
    ("nats", "a.>", "a.b.c", True),
    ("nats", "a.*", "a.b", True),
    ("nats", "a.*", "a.b.c", False),
    ("nats", "a*", "ab", False),
    ("nats", "a*", "a*", True),
    ("nats", "*.b.>", "a.b.c", True),
    ("nats", "*.b.>", "a.c.c", False),
    # mqtt
    ("mqtt", "#", "$SYS/x", False),
    ("mqtt", "+/x", "$SYS/x", False),
    ("mqtt", "$SYS/#", "$SYS/x", True),
    ("mqtt", "$SYS/+", "$SYS/x", True),
    ("mqtt", "+/x", "a$/x", True),
    ("mqtt", "a/+/#", "a/$b", True),  # '$' matters only at the start of the topic
    ("mqtt", "sport/#", "sport", True),
    ("mqtt", "sport/#", "sport/", True),
    ("mqtt", "sport/#", "sport/tennis/player1", True),
    ("mqtt", "sport/#", "sports", False),
    ("mqtt", "sport/+", "sport", False),
    ("mqtt", "sport/+", "sport/", True),  # empty levels are levels
    ("mqtt", "+", "/finance", False),
    ("mqtt", "+/+", "/finance", True),
    ("mqtt", "/+", "/finance", True),
    ("mqtt", "#", "", True),
    ("mqtt", "a//b", "a//b", True),
    # regex
    ("regex", "a.c", "abc", True),
    ("regex", "a.c", "abcd", False),  # full match
    ("regex", "a.c", "xabc", False),
    ("regex", "users/[0-9]+", "users/42", True),
]


@pytest.mark.parametrize(("syntax", "text", "topic", "expected"), CASES)
def test_cases(syntax: str, text: str, topic: str, expected: bool) -> None:
    assert compile_selector(text, syntax).matches(topic) is expected
    assert matches(text, topic, syntax) is expected
    oracle = {
        "amqp": amqp_oracle,
        "nats": nats_oracle,
        "mqtt": mqtt_oracle,
        "regex": regex_oracle,
        "mercure": mercure_oracle,
    }[syntax]
    if "{" not in text:
        assert oracle(text, topic) is expected  # the oracles agree with the hand-written table


# -- errors -------------------------------------------------------------------------------

INVALID = [
    # syntax, selector, column, a word the message must contain
    ("nats", "", 1, "empty"),
    ("nats", "a.>.b", 3, "'>'"),
    ("nats", ">.a", 1, "'>'"),
    ("nats", "a..b", 3, "empty token"),
    ("nats", ".a", 1, "empty token"),
    ("nats", "a.", 3, "empty token"),
    ("nats", "a.b c", 4, "whitespace"),
    ("mqtt", "", 1, "empty"),
    ("mqtt", "a/#/b", 3, "'#'"),
    ("mqtt", "#/a", 1, "'#'"),
    ("mqtt", "a#", 2, "'#'"),
    ("mqtt", "a/b+", 4, "'+'"),
    ("mqtt", "a/+b/c", 3, "'+'"),
    ("mqtt", "a\x00b", 2, "NUL"),
    ("regex", "a(b", 2, "regex"),
    ("regex", "ab[", 3, "regex"),
    ("regex", "*a", 1, "regex"),
    ("regex", "a{1001}", 1, "repetition"),  # RE2 reads a{99999999999} as plain text
    ("regex", r"(a)\1", 4, "backreference"),
    ("regex", "a(?=b)", 2, "lookaround"),
    ("regex", "a(?<!b)", 2, "lookaround"),
    ("regex", "a++", 2, "possessive"),
    ("regex", r"\p{L}{1000}", 1, "bytes of program"),  # past RE2's max_mem: not built
]


@pytest.mark.parametrize(("syntax", "text", "column", "word"), INVALID)
def test_invalid_selectors(syntax: str, text: str, column: int, word: str) -> None:
    with pytest.raises(InvalidSelector) as info:
        compile_selector(text, syntax)
    err = info.value
    assert (err.selector, err.column) == (text, column)
    assert word in str(err)
    assert f"column {column}" in str(err)
    assert repr(text) in str(err)


def test_unknown_syntax_is_a_plain_value_error() -> None:
    with pytest.raises(ValueError, match="unknown selector syntax") as info:
        compile_selector("a", "glob")
    assert not isinstance(info.value, InvalidSelector)
    with pytest.raises(ValueError, match="unknown selector syntax"):
        matches("a", "a", "glob")


ODD_TEXT = st.text(alphabet=list("ab.*>#+/$ \t\x00{}()[]\\|?:"), max_size=12) | st.text(max_size=12)


@pytest.mark.parametrize("syntax", SYNTAXES)
@given(text=ODD_TEXT, topics=st.lists(st.text(alphabet="ab./$", max_size=6), max_size=4))
def test_arbitrary_text_compiles_or_raises_invalid_selector(
    syntax: str, text: str, topics: list[str]
) -> None:
    validity = {"nats": nats_valid, "mqtt": mqtt_valid, "urlpattern": urlpattern_valid}.get(syntax)
    try:
        sel = compile_selector(text, syntax)
    except InvalidSelector as err:
        assert err.selector == text
        assert err.column is not None and 1 <= err.column <= len(text) + 1
        assert syntax in ("nats", "mqtt", "regex", "urlpattern")
        assert validity is None or not validity(text)
        return
    assert validity is None or validity(text)
    oracles: dict[str, Callable[[str, str], bool]] = {
        "amqp": amqp_oracle,
        "nats": nats_oracle,
        "mqtt": mqtt_oracle,
    }
    oracle = {**oracles, "urlpattern": urlpattern_oracle}.get(syntax)
    for topic in [*topics, text]:
        if oracle is not None:
            check(sel, topic, oracle)
        else:
            assert isinstance(sel.matches(topic), bool)


# -- no catastrophic backtracking ---------------------------------------------------------

LONG = [
    ("amqp", "#.#.#.#.x", "a." * 20_000 + "y", False),
    ("amqp", "#.a.#.a.#.a.#.x", "a." * 20_000 + "y", False),
    ("amqp", "#.a.#.a.#.a.#.x", "a." * 20_000 + "x", True),
    ("amqp", "#.*.#.*.#.b", "a." * 20_000 + "b", True),
    ("amqp", "*.#.*", "a." * 20_000 + "b", True),
    ("amqp", "#.a.b", "a." * 20_000 + "c", False),
    ("amqp", "a.#.a.b", "a." * 20_000 + "c", False),
    ("nats", "*.*.*.>", "a." * 20_000 + "b", True),
    ("mqtt", "+/+/+/#", "a/" * 20_000 + "b", True),
    ("mqtt", "a/+/b", "a/" * 20_000 + "b", False),
]


@pytest.mark.timeout(20)
@pytest.mark.parametrize(("syntax", "text", "topic", "expected"), LONG)
def test_long_topics_do_not_backtrack(syntax: str, text: str, topic: str, expected: bool) -> None:
    assert compile_selector(text, syntax).matches(topic) is expected


# -- mercure templates ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "topic", "expected"),
    [
        ("https://example.com/books/{id}", "https://example.com/books/1", True),
        ("https://example.com/books/{id}", "https://example.com/books/1/x", False),
        ("https://example.com/books/{id}", "https://example.com/books/{id}", True),
        ("https://example.com/books/{id}", "https://example.com/users/1", False),
        ("https://example.com/{+path}", "https://example.com/a/b", True),
        ("/users/{id}{?fields}", "/users/7?fields=a,b", True),
    ],
)
def test_mercure_templates(text: str, topic: str, expected: bool) -> None:
    sel = compile_selector(text)
    assert sel.matches(topic) is expected
    assert sel.exact is None
    assert not sel.match_all
    assert text.startswith(sel.prefix)
    if expected:
        assert topic.startswith(sel.prefix)


@given(
    st.sampled_from(
        ["https://e.com/books/{id}", "/u/{id}/b{/rest*}", "/s{?q,page}", "{+base}/x", "/a/{x:2}"]
    ),
    st.dictionaries(
        st.sampled_from(["id", "rest", "q", "page", "base", "x"]),
        st.text(alphabet="ab1 /é", min_size=1, max_size=5),
    ),
)
def test_mercure_template_matches_its_expansions(
    text: str, values: dict[str, VariableValue]
) -> None:
    topic = uritemplate.expand(text, values)  # the PyPI expander, as an oracle
    sel = compile_selector(text)
    assert sel.matches(topic)
    assert topic.startswith(sel.prefix)
    if sel.segments is not None:
        assert topic.count("/") == sel.segments
    assert sel.matches(topic) == ours.parse(text).matches(topic)


# -- the object itself --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "syntax"), [("*", "mercure"), ("a.#.#.b", "amqp"), ("a.>", "nats"), ("a+", "regex")]
)
def test_selectors_pickle_compare_and_hash(text: str, syntax: str) -> None:
    sel = compile_selector(text, syntax)
    clone = pickle.loads(pickle.dumps(sel))
    assert clone == sel and hash(clone) == hash(sel)
    assert clone.matches("a.x.b") == sel.matches("a.x.b")
    assert sel != compile_selector(text, "amqp" if syntax != "amqp" else "mercure")
    with pytest.raises(AttributeError):
        sel.text = "other"  # type: ignore[misc]


@pytest.mark.parametrize(
    ("text", "syntax", "yes", "no"),
    [("a/+/c", "mqtt", "a/b/c", "a/b"), ("a.*", "nats", "a.b", "b.a"), ("a.#", "amqp", "a", "b")],
)
def test_word_selectors_compile_their_regex_on_first_test(
    text: str, syntax: str, yes: str, no: str
) -> None:
    """Subscribing compiles no regex (indexes prove word matches); the first test does,
    then the selector tests through the compiled regex, and a test kept from before works."""
    sel = compile_selector(text, syntax)
    kept = sel.test
    assert not isinstance(kept, type(re.compile("").fullmatch))
    assert sel.matches(yes) and not sel.matches(no)
    assert isinstance(sel.test, type(re.compile("").fullmatch))
    assert kept(yes) and not kept(no)
    assert pickle.loads(pickle.dumps(sel)).matches(yes)


def test_docstring_examples_run() -> None:
    flags = doctest.ELLIPSIS | doctest.IGNORE_EXCEPTION_DETAIL
    result = doctest.testmod(compiler, optionflags=flags)
    assert result.failed == 0 and result.attempted >= 4


@pytest.mark.parametrize(
    ("syntax", "text", "topic"),
    [("amqp", "a.*.#", "a.b.c"), ("nats", "a.*", "a.b"), ("mqtt", "a/+/#", "a/b/c")],
)
def test_the_regex_of_a_word_selector_is_readable_before_and_after_its_first_test(
    syntax: str, text: str, topic: str
) -> None:
    """Spark's RLIKE strategy translates a selector's regex: it must not depend on whether
    the (lazily compiled) test already ran."""
    selector = compile_selector(text, syntax)
    before = regex_of(selector)
    assert before is not None and re.fullmatch(before, topic)
    assert selector.matches(topic)
    assert regex_of(selector) == before
