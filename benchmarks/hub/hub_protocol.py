"""Per-request cost of the Mercure 1.0 front-end pieces beside the 0.x ones, in one process.

What a 1.0 publish and subscribe will add to the hub's hot paths before the index is asked:
the publish form (the reserved-namespace test parses each topic as a WHATWG URL), the
subscribe query (each URL Pattern compiled once, then its verdict cached), and token
verification (signature and ``authorization_details``, then the verified-token cache). Each
row is timed beside its 0.x counterpart in the same run; read the ratios, not the times.

    .venv/bin/python benchmarks/hub/hub_protocol.py
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from urllib.parse import urlencode

import jwt

from skipfilter.hub.auth.verify import TokenSource, Verifier
from skipfilter.hub.frontends.v1.access_tokens import mint_access_token
from skipfilter.hub.frontends.v1.issuers import Issuer, StaticKey
from skipfilter.hub.frontends.v1.matchers import UrlPatternCheck
from skipfilter.hub.frontends.v1.publish import parse_publish_form
from skipfilter.hub.frontends.v1.subscribe import parse_subscribe_query
from skipfilter.hub.frontends.v1.tokens import AccessTokenVerifier
from skipfilter.hub.sse import check_id, check_topic

HUB = "https://hub.example.com/.well-known/mercure"
SECRET = "a-benchmark-secret-of-32-bytes-or-more"


def per_call(fn: Callable[[], object], seconds: float = 0.5) -> float:
    """Microseconds per call (best of three runs of ``seconds``)."""
    best = float("inf")
    for _ in range(3):
        calls, start = 0, time.perf_counter()
        while (elapsed := time.perf_counter() - start) < seconds:
            fn()
            calls += 1
        best = min(best, elapsed / calls)
    return best * 1e6


def per_await(fn: Callable[[], Awaitable[object]], seconds: float = 0.5) -> float:
    """``per_call`` for a coroutine, awaited in one running loop (no loop start per call)."""

    async def run() -> float:
        best = float("inf")
        for _ in range(3):
            calls, start = 0, time.perf_counter()
            while (elapsed := time.perf_counter() - start) < seconds:
                await fn()
                calls += 1
            best = min(best, elapsed / calls)
        return best * 1e6

    return asyncio.run(run())


def old_publish_checks(pairs: list[tuple[str, str]]) -> None:
    """What the 0.x hub checks on a publish form (v0.V0Frontend._update)."""
    for name, value in pairs:
        if name == "topic":
            check_topic(value)
            assert "/.well-known/mercure" not in value
        elif name == "id":
            check_id(value)


def main() -> None:
    rows: list[tuple[str, float, float]] = []
    form = [
        ("topic", "https://example.com/books/1"),
        ("topic", "https://example.com/users/42"),
        ("data", "x" * 200),
        ("id", "urn:uuid:1"),
        ("private", "on"),
    ]
    rows.append(
        (
            "publish form, 2 topics",
            per_call(lambda: old_publish_checks(form)),
            per_call(lambda: parse_publish_form(form)),
        )
    )

    check = UrlPatternCheck()
    patterns = [("match_urlpattern", f"https://example.com/books{i}/:id") for i in range(10)]
    query = urlencode([("match", "https://example.com/users/42"), *patterns])
    old_query = urlencode(
        [("topic", "https://example.com/users/42")]
        + [("topic", f"https://example.com/books{i}/{{id}}") for i in range(10)]
    )

    def old_subscribe() -> None:
        from urllib.parse import parse_qsl

        assert [v for k, v in parse_qsl(old_query) if k == "topic"]

    rows.append(
        (
            "subscribe query, 11 matchers (verdicts cached)",
            per_call(old_subscribe),
            per_call(lambda: parse_subscribe_query(query, HUB, check)),
        )
    )
    rows.append(
        (
            "subscribe query, 11 matchers (cold: compiled)",
            per_call(old_subscribe),
            per_call(lambda: parse_subscribe_query(query, HUB, UrlPatternCheck())),
        )
    )

    old = Verifier(SECRET, "HS256", size=0)
    old_token = jwt.encode(
        {"mercure": {"publish": ["*"]}, "exp": int(time.time()) + 3600}, SECRET, algorithm="HS256"
    )
    token = mint_access_token(
        "https://iss",
        HUB,
        SECRET,
        publish=[("*", "exact")],
        subscribe=[("https://example.com/books/:id", "urlpattern")],
    )
    issuer = Issuer("https://iss", publisher=StaticKey(SECRET, "HS256"))
    cold = AccessTokenVerifier([issuer], cache_size=0)
    warm = AccessTokenVerifier([issuer])
    old_cached = Verifier(SECRET, "HS256")
    rows.append(
        (
            "HS256 token, verified",
            per_call(lambda: old(old_token, TokenSource.HEADER)),
            per_await(lambda: cold.verify(token, "publisher", HUB, HUB)),
        )
    )
    rows.append(
        (
            "HS256 token, cached",
            per_call(lambda: old_cached(old_token, TokenSource.HEADER)),
            per_await(lambda: warm.verify(token, "publisher", HUB, HUB)),
        )
    )

    print(f"{'':48} {'0.x µs':>9} {'1.0 µs':>9} {'1.0/0.x':>8}")
    for name, before, after in rows:
        print(f"{name:48} {before:9.2f} {after:9.2f} {after / before:8.1f}")


if __name__ == "__main__":
    main()
