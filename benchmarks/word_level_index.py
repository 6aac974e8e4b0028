"""TopicIndex's default beside its two paths forced, LockedTrie and Paho, in one process.

Not an asv suite: loads each word workload (100k subscribers by default) into each
matcher, then times the same published messages on all of them *interleaved*, a chunk of
1,000 messages each in turn (the first of each chunk rotating), so a burst of load on
this shared machine lands on every matcher alike while each keeps its caches warm over a
chunk, as a hub running one matcher would. Prints CPU microseconds per message and per
subscribe (1,000 fresh subscribers, after the messages), recipients per message, and the
ratios the docs quote.
``python benchmarks/word_level_index.py iot,iot-fleet,industrial,amqp,mqtt,iot-hot`` (run
it under ``flock /tmp/skipfilter-bench.lock`` on a shared machine); ``--size 10000``,
``--messages 3000``. Figures: docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import gc
import time
from collections.abc import Callable, Sequence

from skipfilter.baselines import LockedTrie
from skipfilter.baselines.paho import PahoMatcher
from skipfilter.bench.scenarios import Scenario, scenario
from skipfilter.index import TopicIndex, Tuning
from skipfilter.matcher import Matcher

CHUNK = 1000

Make = Callable[[str], Matcher]


def forced(mode: str) -> Make:
    """TopicIndex with its path forced: ``"always"`` the level index, ``"never"`` the trie."""

    def make(syntax: str) -> Matcher:
        return TopicIndex(syntax, tuning=Tuning(level_index=mode))  # type: ignore[arg-type]

    return make


MAKERS: list[tuple[str, Make]] = [
    ("default", TopicIndex),
    ("level index", forced("always")),
    ("trie", forced("never")),
    ("LockedTrie", LockedTrie),
    ("Paho", PahoMatcher),
]


def interleaved(matchers: Sequence[Matcher], messages: list[tuple[str, ...]]) -> list[float]:
    """CPU µs per message of each matcher, timed in alternating chunks of the same messages;
    the matcher that goes first (and meets the chunk's topics in cold memory) rotates."""
    spent = [0.0] * len(matchers)
    for start in range(0, len(messages), CHUNK):
        chunk = messages[start : start + CHUNK]
        first = start // CHUNK % len(matchers)
        for i in [*range(first, len(matchers)), *range(first)]:
            match = matchers[i].match
            began = time.process_time()
            for topics in chunk:
                match(topics)
            spent[i] += time.process_time() - began
    return [s / len(messages) * 1e6 for s in spent]


def subscribe_cost(matcher: Matcher, scen: Scenario) -> float:
    """CPU µs per subscribe of the scenario's fresh subscribers, into the loaded matcher."""
    gc.collect()
    began = time.process_time()
    for sub in scen.extras:
        matcher.subscribe(list(sub.selectors))
    return (time.process_time() - began) / len(scen.extras) * 1e6


def measure(name: str, size: int, messages: int) -> None:
    """Load, time interleaved, print one line per matcher and the ratios."""
    scen = scenario(name, size, messages, 0)
    makers = [(label, make) for label, make in MAKERS if label != "Paho" or scen.syntax == "mqtt"]
    matchers = []
    for _, make in makers:
        matcher = make(scen.syntax)
        for sub in scen.subscribers:
            matcher.subscribe(list(sub.selectors))
        matchers.append(matcher)
    batch = [op.message.topics for op in scen.ops if op.message is not None]
    gc.collect()
    costs = interleaved(matchers, batch)
    sample = batch[:500]
    recipients = sum(len(matchers[0].match(topics)) for topics in sample) / len(sample)
    subscribes = [subscribe_cost(m, scen) for m in matchers]
    timed = dict(zip((label for label, _ in makers), costs, strict=True))
    best_path = min(timed["level index"], timed["trie"])
    print(f"{name} at {size:,}: {recipients:,.0f} recipients/msg")
    for (label, _), cost, sub in zip(makers, costs, subscribes, strict=True):
        print(f"  {label:12s} {cost:8.1f} µs/msg  subscribe {sub:6.1f} µs")
    ratios = [f"default / better path {timed['default'] / best_path:.2f}"]
    ratios += [f"LockedTrie / default {timed['LockedTrie'] / timed['default']:.2f}"]
    if "Paho" in timed:
        ratios += [f"Paho / default {timed['Paho'] / timed['default']:.2f}"]
    print("  " + ", ".join(ratios), flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    every = "amqp,mqtt,iot,iot-hot,iot-fleet,industrial"
    parser.add_argument("workloads", nargs="?", default=every)
    parser.add_argument("--size", type=int, default=100_000)
    parser.add_argument("--messages", type=int, default=3_000)
    args = parser.parse_args()
    for name in args.workloads.split(","):
        measure(name, args.size, args.messages)


if __name__ == "__main__":
    main()
