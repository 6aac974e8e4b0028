"""TopicIndex's default beside its two paths forced, LockedTrie and Paho, in one process.

Not an asv suite: loads each word workload (100k subscribers by default) into each
matcher, then times the same published messages on all of them *interleaved*, a chunk of
500 messages each in turn (the first of each chunk rotating), so a burst of load on this
shared machine lands on every matcher alike while each keeps its caches warm over a
chunk, as a hub running one matcher would. A throwaway index is loaded first, so no timed
matcher is the one placed in the holes that building the workload left. Where a matcher
is loaded still counts (three identical indexes in one process: the first loaded up to
10% slower, docs/benchmarks.md), so each workload runs twice, in fresh processes, the
matchers loaded in ``MAKERS`` order and then reversed. Prints CPU microseconds per message
and per subscribe (1,000 fresh subscribers after the messages, in rounds of 100 taking
turns; the median round, averaged over the passes), recipients per message, and the
ratios the docs quote: each the median over both passes' rounds of the two matchers'
times on the same chunk (with 3 rounds of 1,000, a burst in one moved a ratio by 10%),
then each pass's own.
``python benchmarks/index/word_level_index.py iot,iot-fleet,industrial,amqp,mqtt,iot-hot`` (run
it under ``flock /tmp/skipfilter-bench.lock`` on a shared machine); ``--size 10000``,
``--messages 3000``. Figures: docs/benchmarks.md."""

from __future__ import annotations

import argparse
import gc
import statistics
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor
from multiprocessing import get_context
from typing import NamedTuple

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


class Pass(NamedTuple):
    """What one process measured: per round, each matcher's CPU seconds (in ``MAKERS``
    order, whatever order they were loaded in), each one's µs per subscribe, recipients."""

    labels: list[str]
    timed: int  # messages timed on each matcher
    rounds: list[list[float]]
    subscribes: list[float]
    recipients: float


def one_pass(name: str, size: int, messages: int, reverse: bool) -> Pass:
    """Load the matchers (in ``MAKERS`` order, or reversed), time them interleaved."""
    scen = scenario(name, size, messages, 0)
    chosen = [(label, make) for label, make in MAKERS if label != "Paho" or scen.syntax == "mqtt"]
    makers = [make for _, make in chosen]
    order = list(range(len(makers)))[:: -1 if reverse else 1]
    # Kept to the end: the first matcher loaded after building the workload fills the holes
    # its temporaries left and ran 5-10% slower than an identical one loaded after it.
    ballast = TopicIndex(scen.syntax)
    for sub in scen.subscribers:
        ballast.subscribe(list(sub.selectors))
    loaded: dict[int, Matcher] = {}
    for i in order:
        loaded[i] = makers[i](scen.syntax)
        for sub in scen.subscribers:
            loaded[i].subscribe(list(sub.selectors))
    matchers = [loaded[i] for i in range(len(makers))]
    batch = [op.message.topics for op in scen.ops if op.message is not None]
    gc.collect()
    rounds = interleaved(matchers, batch)
    sample = batch[:500]
    recipients = sum(len(matchers[0].match(topics)) for topics in sample) / len(sample)
    subscribes = subscribe_costs(matchers, scen)
    del ballast
    return Pass([label for label, _ in chosen], len(batch), rounds, subscribes, recipients)


def measure(name: str, size: int, messages: int) -> None:
    """Two passes in fresh processes, the matchers loaded in opposite orders: where a
    matcher is loaded moved its speed by up to 10% (identical indexes, one process), so
    each one is measured once early and once late; print one line per matcher and the
    ratios over both passes' rounds, then each pass's own."""
    spawn = get_context("spawn")
    passes = []
    for reverse in (False, True):  # each in a process of its own
        with ProcessPoolExecutor(1, mp_context=spawn, max_tasks_per_child=1) as pool:
            passes.append(pool.submit(one_pass, name, size, messages, reverse).result())
    labels = passes[0].labels
    rounds = [spent for each in passes for spent in each.rounds]
    index = {label: i for i, label in enumerate(labels)}
    print(f"{name} at {size:,}: {passes[0].recipients:,.0f} recipients/msg, {len(rounds)} rounds")
    for i, label in enumerate(labels):
        cost = sum(spent[i] for spent in rounds) / sum(p.timed for p in passes)
        each = statistics.mean(p.subscribes[i] for p in passes)
        print(f"  {label:12s} {cost * 1e6:8.1f} µs/msg  subscribe {each:6.1f} µs")
    for title, chosen in (
        ("both passes", rounds),
        *(
            (f"loaded {way}", p.rounds)
            for way, p in zip(("forward", "reversed"), passes, strict=True)
        ),
    ):
        print(f"  {title}: " + ", ".join(ratios(chosen, index)), flush=True)


def ratios(rounds: list[list[float]], index: dict[str, int]) -> list[str]:
    """The docs' ratios over ``rounds``: the default against its better path and the
    baselines (each the median of the rounds' ratios)."""
    default = index["default"]
    better = max(  # the better path is the faster one: the larger ratio
        ratio(rounds, default, index["level index"]), ratio(rounds, default, index["trie"])
    )
    shown = [f"default / better path {better:.2f}"]
    shown += [f"LockedTrie / default {ratio(rounds, index['LockedTrie'], default):.2f}"]
    if "Paho" in index:
        shown += [f"Paho / default {ratio(rounds, index['Paho'], default):.2f}"]
    return shown


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
