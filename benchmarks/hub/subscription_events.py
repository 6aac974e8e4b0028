"""What subscription events cost a connect: each subscription's payload (draft-08 §6.8) and
its event, for a 1.0 token at the protocol's caps (100 ``subscribe`` details, each a URL
Pattern, and 100 URL Pattern matchers), beside the naive reading in the same run.

Naive: every (matcher, grant) pair compiles the grant's pattern, as ``payload_for`` first did.
Now: a token without payloads answers at once; with payloads, each grant pattern compiles
once, then 100 x 100 matches. URL Patterns are shared only while something holds them: in
the hub the stream's index entry does (``Hub.register`` files the grants before the stream's
subscriptions are announced), here :func:`hold_grants` does the same. Read the ratios, not
the times.

    .venv/bin/python benchmarks/hub/subscription_events.py
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable
from typing import Any

from skipfilter.hub.core.grants import topic_test
from skipfilter.hub.frontends.v1.frontend import TokenGrants
from skipfilter.hub.frontends.v1.grants import AuthorizationDetails, Detail
from skipfilter.hub.frontends.v1.subscription_events import subscriptions_of
from skipfilter.hub.frontends.v1.tokens import AccessToken
from skipfilter.selectors import Selector, TypedSelector
from skipfilter.selectors.urlpattern import compile_urlpattern

BASE = "http://mercure.invalid/.well-known/mercure"
CAP = 100


@dataclasses.dataclass
class _Connection:
    id: str
    selectors: tuple[TypedSelector, ...]
    grants: Any


def connection(payloads: bool) -> _Connection:
    """A subscriber at the caps: 100 URL Pattern grants (with payloads or not), 100 matchers."""
    details = tuple(
        Detail(
            frozenset({"subscribe"}),
            ((f"https://grant{i}.example/:kind/:id", "urlpattern"),),
            {"grant": i} if payloads else None,
        )
        for i in range(CAP)
    )
    fields: dict[str, Any] = {f.name: None for f in dataclasses.fields(AccessToken)}
    token = AccessToken(**{**fields, "grants": AuthorizationDetails(details)})
    topics = tuple(TypedSelector(f"https://app{j}.example/:id", "urlpattern") for j in range(CAP))
    return _Connection("urn:uuid:bench", topics, TokenGrants.of(token, BASE))


def naive(stream: _Connection) -> None:
    """Every pair compiles its grant pattern again."""
    grants = stream.grants.token.grants

    def matches(matcher: tuple[str, str], topic: str) -> bool:
        return topic_test(TypedSelector(*matcher), BASE)(topic)

    for selector in stream.selectors:
        grants.subscription_payload((selector.text, selector.syntax), matches)


def hold_grants(stream: _Connection) -> list[Selector]:
    """The stream's grant patterns compiled as its index entry holds them (what
    ``TopicIndex`` compiles for ``allowed``): while held, matching shares them."""
    return [compile_urlpattern(g.text, BASE, keep_base=False) for g in stream.grants.subscribe]


def connect(stream: _Connection) -> list[Selector]:
    """A connect today: the grants filed (compiled once), then the subscriptions' events."""
    held = hold_grants(stream)
    subscriptions_of(stream)
    return held


def seconds(fn: Callable[[], object], repeat: int = 3) -> float:
    """Best of ``repeat`` runs."""
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


def main() -> None:
    print(f"one connect: {CAP} URL Pattern matchers x {CAP} URL Pattern grants")
    with_payloads, without = connection(True), connection(False)
    before = seconds(lambda: naive(with_payloads), repeat=1)
    cold = seconds(lambda: connect(with_payloads), repeat=1)  # naive held no pattern
    held = hold_grants(with_payloads)  # another stream with these grants is open
    warm = seconds(lambda: subscriptions_of(with_payloads))
    del held
    none = seconds(lambda: subscriptions_of(without))
    print(f"  naive (compile per pair)      {before * 1e3:9.1f} ms   1.00")
    print(f"  payloads, grants compiled     {cold * 1e3:9.1f} ms   {cold / before:.4f}")
    print(f"  payloads, grants cached       {warm * 1e3:9.1f} ms   {warm / before:.4f}")
    print(f"  no payload in the token       {none * 1e3:9.1f} ms   {none / before:.5f}")


if __name__ == "__main__":
    main()
