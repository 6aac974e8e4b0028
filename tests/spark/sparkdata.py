"""Small generated routing data for the Spark tests, and the two references to compare with."""

from __future__ import annotations

import random
from typing import Any

from skipfilter.index import TopicIndex
from skipfilter.selectors import matches

BASE = "https://example.com"
TEMPLATES = [
    f"{BASE}/books/{{id}}",
    f"{BASE}/users/{{user}}/orders{{/order}}",
    f"{BASE}/chat{{/room}}{{?lang}}",
    f"{BASE}/news/{{year}}/{{slug}}",
]

Row = dict[str, Any]


def generate(subscribers: int, messages: int, seed: int = 0) -> tuple[list[Row], list[Row]]:
    """Messages and subscriptions with templates, private updates, several topics per message,
    match-all selectors and subscriber ids that hold several subscriptions."""
    rng = random.Random(seed)
    users = [f"u{i}" for i in range(max(2, subscribers // 3))]

    def topic() -> str:
        kind = rng.random()
        if kind < 0.3:
            return f"{BASE}/books/{rng.randrange(20)}"
        if kind < 0.55:
            return f"{BASE}/users/{rng.choice(users)}/orders/{rng.randrange(5)}"
        if kind < 0.7:
            return f"{BASE}/chat/{rng.choice(['a', 'b', 'c'])}?lang=en"
        if kind < 0.85:
            return f"{BASE}/news/202{rng.randrange(4)}/s{rng.randrange(3)}"
        return f"{BASE}/users/{rng.choice(users)}"

    def selector() -> str:
        kind = rng.random()
        if kind < 0.3:
            return rng.choice(TEMPLATES)
        if kind < 0.33:
            return "*"
        return topic()

    subs: list[Row] = []
    for i in range(subscribers):
        name = f"s{i % max(1, subscribers - subscribers // 10)}"  # ~10% ids on two rows
        row: Row = {"subscriber_id": name, "topics": [selector() for _ in range(rng.randint(1, 3))]}
        kind = rng.random()
        if kind < 0.6:
            row["allowed"] = [selector() for _ in range(rng.randint(1, 2))]
        elif kind < 0.7:
            row["allowed"] = []
        else:
            row["allowed"] = None
        subs.append(row)
    msgs: list[Row] = [
        {
            "id": f"m{i}",
            "topics": [topic() for _ in range(rng.randint(1, 3))],
            "private": rng.random() < 0.3,
        }
        for i in range(messages)
    ]
    return msgs, subs


def oracle(msgs: list[Row], subs: list[Row], syntax: str = "mercure") -> set[tuple[str, str]]:
    """Deliveries by testing every selector against every topic."""
    out = set()
    for m in msgs:
        for s in subs:
            wanted = any(matches(sel, t, syntax) for sel in s["topics"] for t in m["topics"])
            if wanted and m.get("private"):
                allowed = s.get("allowed") or []
                wanted = any(matches(a, t, syntax) for a in allowed for t in m["topics"])
            if wanted:
                out.add((m["id"], s["subscriber_id"]))
    return out


def single_process(
    msgs: list[Row], subs: list[Row], syntax: str = "mercure"
) -> set[tuple[str, str]]:
    """Deliveries through one in-process TopicIndex."""
    index = TopicIndex(syntax)
    for s in subs:
        index.subscribe(s["topics"], s.get("allowed") or None, payload=s["subscriber_id"])
    out = set()
    for m in msgs:
        for name in index.payloads(index.match(m["topics"], bool(m.get("private")))):
            out.add((m["id"], str(name)))
    return out
