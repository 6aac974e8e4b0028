"""TopicIndex's default beside its two paths forced, LockedTrie and Paho, in one process.

Not an asv suite: loads each word workload (100k subscribers by default) into each
matcher, then times the same published messages on all of them *interleaved*, a chunk of
500 messages each in turn (the first of each chunk rotating), so a burst of load on this
shared machine lands on every matcher alike while each keeps its caches warm over a
chunk, as a hub running one matcher would. A throwaway index is loaded first, so no timed
matcher is the one placed in the holes that building the workload left. Prints CPU
microseconds per message and per subscribe (1,000 fresh subscribers after the messages,
in rounds of 100 taking turns; the median round), recipients per message, and the ratios
the docs quote: each the median over rounds of the two matchers' times on the same chunk
(with 3 rounds of 1,000, a burst in one moved a ratio by 10%).
``python benchmarks/word_level_index.py iot,iot-fleet,industrial,amqp,mqtt,iot-hot`` (run
it under ``flock /tmp/skipfilter-bench.lock`` on a shared machine); ``--size 10000``,
``--messages 3000``. Figures: docs/benchmarks.md."""

from __future__ import annotations

import argparse
import gc
import statistics
import time
from collections.abc import Callable, Sequence

from skipfilter.baselines import LockedTrie
from skipfilter.baselines.paho import PahoMatcher
from skipfilter.bench.scenarios import Scenario, scenario
from skipfilter.index import TopicIndex, Tuning
from skipfilter.matcher import Matcher

CHUNK = 500
SUBSCRIBE_CHUNK = 100

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


def interleaved(matchers: Sequence[Matcher], messages: list[tuple[str, ...]]) -> list[list[float]]:
    """Per round, the CPU seconds each matcher spent on that round's chunk of the same
    messages; the matcher that goes first (and meets the chunk's topics in cold memory)
    rotates."""
    rounds = []
    for start in range(0, len(messages), CHUNK):
        chunk = messages[start : start + CHUNK]
        first = start // CHUNK % len(matchers)
        spent = [0.0] * len(matchers)
        for i in [*range(first, len(matchers)), *range(first)]:
            match = matchers[i].match
            began = time.process_time()
            for topics in chunk:
                match(topics)
            spent[i] = time.process_time() - began
        rounds.append(spent)
    return rounds


def subscribe_costs(matchers: Sequence[Matcher], scen: Scenario) -> list[float]:
    """CPU µs per subscribe of the scenario's fresh subscribers into each loaded matcher,
    in rounds of ``SUBSCRIBE_CHUNK`` taking turns like :func:`interleaved`; a matcher's
    cost is its median round (a collection or a burst of load lands in one round)."""
    gc.collect()
    extras = [list(sub.selectors) for sub in scen.extras]
    rounds: list[list[float]] = [[] for _ in matchers]
    for start in range(0, len(extras), SUBSCRIBE_CHUNK):
        chunk = extras[start : start + SUBSCRIBE_CHUNK]
        first = start // SUBSCRIBE_CHUNK % len(matchers)
        for i in [*range(first, len(matchers)), *range(first)]:
            subscribe = matchers[i].subscribe
            began = time.process_time()
            for selectors in chunk:
                subscribe(selectors)
            rounds[i].append((time.process_time() - began) / len(chunk) * 1e6)
    return [statistics.median(spent) for spent in rounds]


def ratio(rounds: list[list[float]], slower: int, faster: int) -> float:
    """The median over rounds of one matcher's time over another's: robust to a burst of
    load on this shared machine landing on one matcher's chunk."""
    return statistics.median(spent[slower] / spent[faster] for spent in rounds)


def measure(name: str, size: int, messages: int) -> None:
    """Load, time interleaved, print one line per matcher and the ratios."""
    scen = scenario(name, size, messages, 0)
    makers = [(label, make) for label, make in MAKERS if label != "Paho" or scen.syntax == "mqtt"]
    # Kept to the end: the first matcher loaded after building the workload fills the holes
    # its temporaries left and ran 5-10% slower than an identical one loaded after it.
    ballast = TopicIndex(scen.syntax)
    for sub in scen.subscribers:
        ballast.subscribe(list(sub.selectors))
    matchers = []
    for _, make in makers:
        matcher = make(scen.syntax)
        for sub in scen.subscribers:
            matcher.subscribe(list(sub.selectors))
        matchers.append(matcher)
    batch = [op.message.topics for op in scen.ops if op.message is not None]
    gc.collect()
    rounds = interleaved(matchers, batch)
    costs = [sum(spent[i] for spent in rounds) / len(batch) * 1e6 for i in range(len(matchers))]
    sample = batch[:500]
    recipients = sum(len(matchers[0].match(topics)) for topics in sample) / len(sample)
    subscribes = subscribe_costs(matchers, scen)
    index = {label: i for i, (label, _) in enumerate(makers)}
    default = index["default"]
    print(f"{name} at {size:,}: {recipients:,.0f} recipients/msg, {len(rounds)} rounds")
    for (label, _), cost, each in zip(makers, costs, subscribes, strict=True):
        print(f"  {label:12s} {cost:8.1f} µs/msg  subscribe {each:6.1f} µs")
    better = max(  # the better path is the faster one: the larger ratio
        ratio(rounds, default, index["level index"]), ratio(rounds, default, index["trie"])
    )
    ratios = [f"default / better path {better:.2f}"]
    ratios += [f"LockedTrie / default {ratio(rounds, index['LockedTrie'], default):.2f}"]
    if "Paho" in index:
        ratios += [f"Paho / default {ratio(rounds, index['Paho'], default):.2f}"]
    print("  " + ", ".join(ratios) + " (medians of the rounds' ratios)", flush=True)
    del ballast


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    every = "amqp,mqtt,iot,iot-hot,iot-fleet,industrial"
    parser.add_argument("workloads", nargs="?", default=every)
    parser.add_argument("--size", type=int, default=100_000)
    parser.add_argument("--messages", type=int, default=12_000)
    args = parser.parse_args()
    for name in args.workloads.split(","):
        measure(name, args.size, args.messages)


if __name__ == "__main__":
    main()
