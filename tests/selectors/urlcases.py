"""Random URL Patterns and topics that break naive indexes, for the urlpattern tests.

Upper-case hosts and schemes, explicit default ports, percent-encoded and non-ASCII paths,
dot segments, backslashes, IPv4 numbers, punycode, userinfo, trailing slashes, hostname
wildcards, regexp groups, optional and repeated groups, ``*``, relative references and
strings that are no URL at all.
"""

from __future__ import annotations

from hypothesis import strategies as st

BASES = (
    None,
    "https://example.com/.well-known/mercure",
    "https://hub.example:8443/a/b",
)

_SCHEMES = ["https", "http", "HTTPS", "wss", "foo"]
_USERINFO = ["", "", "", "u@", "u:p@", "%40:x@"]
_HOSTS = [
    "example.com",
    "example.com",
    "EXAMPLE.com",
    "a.example.com",
    "B.a.example.com",
    "example.org",
    "xn--nxasmq6b.com",
    "éxample.com",
    "127.0.0.1",
    "0x7f.1",
    "example.com.",
    "ex%41mple.com",
    "[::1]",
]
_PORTS = ["", "", "", ":443", ":80", ":8080", ":0443", ":", ":8443"]
_SEGMENTS = ["books", "Books", "1", "2", "%31", "café", "caf%C3%A9", "", ".", "..", "%2e"]
_SEGMENTS += ["a b", "x\\y", ":id", "news", "blog", "a%2Fb", "~u", "*"]
_QUERIES = ["", "", "", "?", "?x=1", "?a/b", "?é"]
_FRAGMENTS = ["", "", "", "#", "#f", "#a/b"]

paths = st.lists(st.sampled_from(_SEGMENTS), min_size=0, max_size=4).map(
    lambda segments: "".join("/" + s for s in segments)
)

absolute_topics = st.builds(
    lambda scheme, user, host, port, path, query, fragment: (
        f"{scheme}://{user}{host}{port}{path}{query}{fragment}"
    ),
    st.sampled_from(_SCHEMES),
    st.sampled_from(_USERINFO),
    st.sampled_from(_HOSTS),
    st.sampled_from(_PORTS),
    paths,
    st.sampled_from(_QUERIES),
    st.sampled_from(_FRAGMENTS),
)
relative_topics = st.one_of(
    st.builds(lambda p, q: (p or "/") + q, paths, st.sampled_from(_QUERIES)),
    paths.map(lambda p: p.lstrip("/")),
    st.sampled_from(["//example.com/books/1", "?x=1", "#f", "", "./books", "../x"]),
)
odd_topics = st.sampled_from(
    ["*", "not a url", "https://", "https://exa mple.com/", "urn:isbn:1", "data:x,y ", "\ud800"]
)
_OPAQUE_SCHEMES = ["urn", "URN", "tag", "mailto", "x-y+z.1", "http", "HTTPS", "file", "ws", "1x"]
_OPAQUE_PIECES = ["isbn", ":", "1", "uuid", "-", "a.b", "@", "~", "!$&'()*+,;=", "/", "//"]
_OPAQUE_PIECES += [" ", "%20", "?x", "#f", "é", "\\", ".", "..", "\t", "A"]
opaque_topics = st.builds(  # scheme:path, where the path is no authority nor hierarchy
    lambda scheme, pieces: f"{scheme}:{''.join(pieces)}",
    st.sampled_from(_OPAQUE_SCHEMES),
    st.lists(st.sampled_from(_OPAQUE_PIECES), max_size=5),
)
topics = st.one_of(absolute_topics, absolute_topics, relative_topics, odd_topics)

_PROTOCOLS = ["https", "https", "http{s}?", "*", "HTTPS", "http"]
_PATTERN_HOSTS = [
    "example.com",
    "example.com",
    "EXAMPLE.com",
    "*.example.com",
    "{*.}?example.com",
    ":sub.example.com",
    "example.com:443",
    "example.com:8080",
    "example.com:*",
    "*",
    "127.0.0.1",
]
_PATTERN_PATHS = [
    "",
    "/",
    "/books/:id",
    "/books/:id?",
    "/books/*",
    "/books/1",
    "/books/1/",
    "/books/%31",
    "/café",
    "/caf%C3%A9",
    "/:kind(news|blog)/*",
    "/books{/:id}?",
    "/books/:id+",
    "/books/(\\d+)",
    "/books/:id/:rest*",
    "/*",
    "/Books/1",
    "/a/../books/1",
    "/books{/:id}?/reviews",
    "/books/:id?/reviews",
    "/{books}?/1",
    "/books{.json}?",
    "/books{/:id}?",
    "/books/:id?",
    "/books/{:id}?",
    "/:id{/x}?/:y",
]
_PATTERN_TAILS = ["", "", "", "\\?x=1", "#f", "?x=1"]

absolute_patterns = st.builds(
    lambda protocol, host, path, tail: f"{protocol}://{host}{path}{tail}",
    st.sampled_from(_PROTOCOLS),
    st.sampled_from(_PATTERN_HOSTS),
    st.sampled_from(_PATTERN_PATHS),
    st.sampled_from(_PATTERN_TAILS),
)
relative_patterns = st.sampled_from(
    ["/books/:id", "/books/1", "books/:id", "/.well-known/mercure/subscriptions/:t/:s", "/*"]
)
patterns = st.one_of(absolute_patterns, absolute_patterns, relative_patterns, st.just("*"))
