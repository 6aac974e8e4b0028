"""TopicIndex with its level index and without it, LockedTrie and Paho, in one process.

Not an asv suite: loads each word workload at 100k subscribers into each matcher and
prints CPU microseconds per published message and per subscribe, and recipients per
message. ``python benchmarks/word_level_index.py iot,iot-hot,amqp,mqtt`` (run it under
``flock /tmp/skipfilter-bench.lock`` on a shared machine). Figures: docs/benchmarks.md.
"""

from __future__ import annotations

import gc
import sys
import time
from collections.abc import Callable

from skipfilter.baselines import LockedTrie
from skipfilter.baselines.paho import PahoMatcher
from skipfilter.bench.scenarios import Scenario, scenario
from skipfilter.index import TopicIndex, Tuning
from skipfilter.matcher import Matcher

SIZE = 100_000
MESSAGES = 3_000


def trie_only(syntax: str) -> Matcher:
    return TopicIndex(syntax, tuning=Tuning(level_index=0))


def run(make: Callable[[str], Matcher], scen: Scenario) -> tuple[float, float, float]:
    """(µs per message, µs per subscribe, recipients per message), CPU time."""
    matcher = make(scen.syntax)
    for sub in scen.subscribers:
        matcher.subscribe(list(sub.selectors))
    messages = [op.message.topics for op in scen.ops if op.message is not None]
    start, recipients = time.process_time(), 0
    for topics in messages:
        recipients += len(matcher.match(topics))
    per_message = (time.process_time() - start) / len(messages) * 1e6
    start = time.process_time()
    for sub in scen.extras:
        matcher.subscribe(list(sub.selectors))
    per_subscribe = (time.process_time() - start) / len(scen.extras) * 1e6
    return per_message, per_subscribe, recipients / len(messages)


def main(names: list[str]) -> None:
    makers: list[tuple[str, Callable[[str], Matcher]]] = [
        ("TopicIndex", TopicIndex),
        ("TopicIndex, trie only", trie_only),
        ("LockedTrie", LockedTrie),
    ]
    for name in names:
        scen = scenario(name, SIZE, MESSAGES, 0)
        cells, recipients = [], 0.0
        for label, make in [*makers, *([("Paho", PahoMatcher)] if scen.syntax == "mqtt" else [])]:
            per_message, per_subscribe, recipients = run(make, scen)
            gc.collect()
            cells.append(f"{label} {per_message:.1f} µs (subscribe {per_subscribe:.1f})")
        print(f"{name}: {recipients:.0f} recipients/msg | " + " | ".join(cells), flush=True)


if __name__ == "__main__":
    main(sys.argv[1].split(",") if len(sys.argv) > 1 else ["iot", "iot-hot", "amqp", "mqtt"])
