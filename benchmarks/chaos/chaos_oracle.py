"""What the chaos soak expects, and the end-to-end check against what happened.

The plan (seeded) says which topics each update has and which selectors each subscriber
follows; a brute-force matcher, written apart from the hub's index, says who wants what.
The truth is the store read at the end (the Redis stream, or the SQLite table): ``stored``,
the update serials in the one order. The rules:

* acknowledged means stored: every 200 is in ``stored``;
* a refusal that is definite (a 4xx) or a publish that never reached a hub (connection
  refused) is not stored; a 503 is not an acknowledgement, and such an update may or may
  not be stored; a publish that got no answer at all is allowed only when its node was
  killed (SIGKILL: from the signal to the process's end) while the connection it went on
  was open, and it too may or may not be stored;
* nothing is stored twice, and nothing is stored that no publisher sent;
* every subscriber receives, across all its connections, exactly the stored updates after
  its starting point (the genesis update) whose topics match its selectors: each once,
  in the stored order (so nothing unstored is ever delivered, acknowledged or not).
"""

from __future__ import annotations

import itertools
import random
import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from benchmarks.chaos.chaos_clients import (
    ACKED,
    MAYBE,
    REFUSED,
    UNANSWERED,
    UNSENT,
    Ledger,
    Subscriber,
)

SITE = "https://chaos.test"
FEEDS = 12
USERS = 50
BULK = f"{SITE}/bulk"
USER_TEMPLATE = f"{SITE}/users/{{id}}"
_SEGMENT = re.compile(r"[A-Za-z0-9._~-]+")


class Plan:
    """Seeded topics of updates and selectors of subscribers."""

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)

    def topics(self) -> tuple[str, ...]:
        """The topics of the next ordinary update: a feed, sometimes a user too."""
        rng = self.rng
        topics = [f"{SITE}/feeds/{rng.randrange(FEEDS)}"]
        if rng.random() < 0.3:
            topics.append(f"{SITE}/users/{rng.randrange(USERS)}")
        return tuple(topics)

    def selectors(self, bulk: bool, slow: bool) -> tuple[str, ...]:
        """A subscriber's selectors: one to three feeds, users or the user template;
        rarely everything; the bulk topic for the subscribers a stall can target."""
        rng = self.rng
        if not slow and rng.random() < 0.02:  # everything, bulk too: not for slow readers
            return ("*",)
        chosen: list[str] = [BULK] if bulk else []
        for _ in range(rng.randint(1, 3)):
            roll = rng.random()
            if roll < 0.65:
                chosen.append(f"{SITE}/feeds/{rng.randrange(FEEDS)}")
            elif roll < 0.95:
                chosen.append(f"{SITE}/users/{rng.randrange(USERS)}")
            else:
                chosen.append(USER_TEMPLATE)
        return tuple(dict.fromkeys(chosen))


def matches(selector: str, topic: str) -> bool:
    """The brute-force matcher for the plan's selectors."""
    if selector == "*":
        return True
    if selector.endswith("{id}"):
        prefix = selector[: -len("{id}")]
        return topic.startswith(prefix) and bool(_SEGMENT.fullmatch(topic[len(prefix) :]))
    return selector == topic


@dataclass
class Verdict:
    """Counts of what the check found; ``violations`` must be 0."""

    updates_stored: int = 0
    deliveries_checked: int = 0
    deliveries_received: int = 0
    publishes: dict[str, int] = field(default_factory=dict)
    maybe_stored: int = 0
    unanswered_explained: int = 0
    problems: dict[str, int] = field(default_factory=dict)
    examples: list[str] = field(default_factory=list)

    def flag(self, kind: str, count: int, example: str) -> None:
        if count:
            self.problems[kind] = self.problems.get(kind, 0) + count
            if len(self.examples) < 20:
                self.examples.append(f"{kind}: {example}")

    @property
    def violations(self) -> int:
        return sum(self.problems.values())


def check(
    ledger: Ledger,
    stored: Sequence[int],
    subscribers: Sequence[Subscriber],
    genesis: int,
    killed: dict[int, list[tuple[float, float]]],
    foreign_stored: int = 0,
    origin: float = 0.0,
) -> Verdict:
    """Judge a run: ``stored`` is the store's serials in order, ``killed`` each node's
    SIGKILLs (when the signal was sent, when the process was gone: ``time.monotonic()``);
    examples give times from ``origin``."""
    verdict = Verdict(updates_stored=len(stored))
    outcomes = ledger.outcome
    verdict.publishes = {k: outcomes.count(k) for k in (ACKED, REFUSED, MAYBE, UNSENT, UNANSWERED)}
    stored_set = set(stored)
    verdict.flag("stored twice", len(stored) - len(stored_set), "the store holds an id twice")
    verdict.flag("stored, never published", foreign_stored, "an entry no publisher sent")
    for serial, outcome in enumerate(outcomes):
        if outcome == ACKED and serial not in stored_set:
            verdict.flag("acknowledged, not stored", 1, f"u{serial}")
        elif outcome in (REFUSED, UNSENT) and serial in stored_set:
            verdict.flag("refused, yet stored", 1, f"u{serial} {ledger.detail.get(serial)}")
        elif outcome == MAYBE and serial in stored_set:
            verdict.maybe_stored += 1
        elif outcome == UNANSWERED:
            node, sent, answered = ledger.node[serial], ledger.sent[serial], ledger.answered[serial]
            opened = ledger.connected[serial]  # its node dying meanwhile: nothing could answer
            if any(signal <= answered and dead >= opened for signal, dead in killed.get(node, ())):
                verdict.unanswered_explained += 1
            else:
                detail = ledger.detail.get(serial, "")
                at = f"+{sent - origin:.2f}..{answered - origin:.2f} s"
                verdict.flag("publish without an answer", 1, f"u{serial} on {node} {at}: {detail}")
        elif outcome == "pending":
            verdict.flag("publish never finished", 1, f"u{serial}")
    after = stored[stored.index(genesis) + 1 :] if genesis in stored_set else []
    topics = ledger.topics
    for sub in subscribers:
        expected = [
            s for s in after if any(matches(x, t) for x in sub.selectors for t in topics[s])
        ]
        got = list(sub.received)
        verdict.deliveries_checked += len(expected)
        verdict.deliveries_received += len(got)
        verdict.flag("delivery of an id no publisher sent", len(sub.foreign), repr(sub.foreign[:3]))
        if got == expected:
            continue
        _compare(verdict, sub, expected, got)
    return verdict


def _compare(verdict: Verdict, sub: Subscriber, expected: list[int], got: list[int]) -> None:
    """Count what differs between what a subscriber got and what it should have."""
    who = f"subscriber {sub.index} {sub.selectors}"
    wanted = set(expected)
    seen: set[int] = set()
    firsts: list[int] = []
    twice: list[int] = []
    for serial in got:
        if serial in seen:
            twice.append(serial)
        else:
            seen.add(serial)
            firsts.append(serial)
    if twice:
        at = [i for i, serial in enumerate(got) if serial == twice[0]]
        streams = [m for m in sub.marks if m[0] <= at[-1]][-3:]
        verdict.flag("delivered twice", len(twice), f"{who}: {twice[:3]} at {at}, {streams}")
    missing = [s for s in expected if s not in seen]
    if missing:  # holes, or a tail it never got (a subscriber stuck or never resumed)?
        place_of = {serial: i for i, serial in enumerate(expected)}
        tail = sum(1 for s in missing if not got or place_of[s] > place_of.get(got[-1], -1))
        last = f"u{got[-1]}" if got else "nothing"
        detail = f"u{missing[0]}, {len(missing)} of {len(expected)} ({tail} after its last, {last})"
        verdict.flag("missing", len(missing), f"{who}: {detail}")
    extra = [s for s in firsts if s not in wanted]
    verdict.flag("delivered, not owed", len(extra), f"{who}: u{extra[0]}" if extra else "")
    place = {serial: i for i, serial in enumerate(expected)}
    order = [place[s] for s in firsts if s in place]
    reordered = sum(1 for a, b in itertools.pairwise(order) if b < a)
    verdict.flag("out of order", reordered, who)
