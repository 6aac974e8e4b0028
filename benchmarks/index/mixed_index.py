"""What ``extra_syntaxes`` costs: a mixed index's match beside each syntax alone, and the
single-syntax path before and after the change.

Two measures, each a ratio of timings taken side by side (CPU time, best of rounds):

- ``mixed N``: the mercure workload's N subscribers, the first half in 1.0 form (URL
  Patterns, exact topics: mercure1) and the second half in 0.x form (URI templates typed
  ``mercure``), in one ``TopicIndex("urlpattern", extra_syntaxes=("mercure",))``, against
  each half alone in its own syntax's index (``urlpattern``, ``mercure``) and all N in
  1.0 form (in a plain index, and in a mixed one holding no 0.x selector); the same
  messages (2 topics each, 20% private).
- ``before DIR N``: ``TopicIndex("urlpattern")`` on mercure1 at N (match, and subscribe
  with known patterns), run in turns in subprocesses importing the library from DIR (a
  ``git archive`` of the base commit) and from this tree: the single-syntax path's cost
  after the change over before.

From the repository root, under ``flock /tmp/skipfilter-bench.lock`` on a shared machine:
``.venv/bin/python benchmarks/index/mixed_index.py mixed 100000``;
``git archive main skipfilter | tar -x -C /tmp/base && .venv/bin/python
benchmarks/index/mixed_index.py before /tmp/base 100000``.
Figures: docs/topic-index.md#several-syntaxes-in-one-index.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from typing import Any

HUB = "https://example.com/.well-known/mercure"
MESSAGES = 5000
ROUNDS = 5


def _best_us(run: Callable[[], object], calls: int, rounds: int = ROUNDS) -> float:
    """Microseconds per call of the best of ``rounds`` runs of ``run`` (``calls`` calls)."""
    clock = time.process_time
    best = float("inf")
    for _ in range(rounds):
        start = clock()
        run()
        best = min(best, clock() - start)
    return best / calls * 1e6


def _matcher(index: Any, messages: list[Any]) -> Callable[[], None]:
    match = index.match

    def run() -> None:
        for message in messages:
            match(message.topics, private=message.private)

    return run


def mixed(size: int) -> None:
    """Print the match cost of a mixed index beside each syntax alone (see module)."""
    from skipfilter import TopicIndex, TypedSelector
    from skipfilter.bench.workloads import mercure, mercure1

    old, new = mercure(size, MESSAGES), mercure1(size, MESSAGES)
    half = size // 2
    v1 = new.subscribers[:half]
    v0 = old.subscribers[half:]

    def typed(selectors: tuple[Any, ...]) -> list[TypedSelector]:
        return [TypedSelector(s, "mercure") for s in selectors]

    alone_v1 = TopicIndex("urlpattern", base_url=HUB)
    alone_v0 = TopicIndex("mercure")
    everyone_v1 = TopicIndex("urlpattern", base_url=HUB)
    both = TopicIndex("urlpattern", base_url=HUB, extra_syntaxes=("mercure",))
    v1_in_mixed = TopicIndex("urlpattern", base_url=HUB, extra_syntaxes=("mercure",))
    for s in v1:
        alone_v1.subscribe(s.selectors, s.allowed)
        both.subscribe(s.selectors, s.allowed)
    for s in v0:
        alone_v0.subscribe(s.selectors, s.allowed)
        both.subscribe(typed(s.selectors), None if s.allowed is None else typed(s.allowed))
    for s in new.subscribers:
        everyone_v1.subscribe(s.selectors, s.allowed)
        v1_in_mixed.subscribe(s.selectors, s.allowed)
    for m in new.messages:  # the answers agree
        expected = alone_v1.match(m.topics, private=m.private)
        for sid in alone_v0.match(m.topics, private=m.private):
            expected.add(sid + half)  # the 0.x half's ids came after the 1.0 half's
        assert both.match(m.topics, private=m.private) == expected
    costs: dict[str, float] = {}
    runs = {
        "urlpattern half alone": _matcher(alone_v1, new.messages),
        "mercure half alone": _matcher(alone_v0, old.messages),
        "mixed (both halves)": _matcher(both, new.messages),
        "all N as urlpattern": _matcher(everyone_v1, new.messages),
        "the same, mixed index": _matcher(v1_in_mixed, new.messages),
    }
    for _ in range(ROUNDS):  # in turns, so that a load change hits all of them
        for name, run in runs.items():
            us = _best_us(run, MESSAGES, rounds=1)
            costs[name] = min(costs.get(name, us), us)
    halves = costs["urlpattern half alone"] + costs["mercure half alone"]
    print(f"match at N={size:,} ({MESSAGES} messages, best of {ROUNDS}):")
    for name, us in costs.items():
        print(f"  {name:24} {us:7.2f} us/message")
    both_us = costs["mixed (both halves)"]
    print(f"  mixed / (the two halves alone)  {both_us / halves:.2f}x")
    v1_us = costs["all N as urlpattern"]
    print(f"  mixed / all N as urlpattern     {both_us / v1_us:.2f}x")
    alike = costs["the same, mixed index"] / v1_us
    print(f"  no 0.x subscriber: mixed index / urlpattern index  {alike:.2f}x")


def single(size: int) -> None:
    """Print, as JSON, TopicIndex("urlpattern")'s match and subscribe costs on mercure1
    (only the API the base commit has)."""
    from skipfilter import TopicIndex
    from skipfilter.bench.workloads import mercure1

    work = mercure1(size, MESSAGES)
    extra = mercure1(MESSAGES, 0, seed=1).subscribers  # subscribed, then unsubscribed
    index = TopicIndex("urlpattern", base_url=HUB)
    for s in work.subscribers:
        index.subscribe(s.selectors, s.allowed)
    subscribe, unsubscribe = index.subscribe, index.unsubscribe

    def churn() -> None:
        sids = [subscribe(s.selectors, s.allowed) for s in extra]
        for sid in sids:
            unsubscribe(sid)

    result = {
        "match": _best_us(_matcher(index, work.messages), MESSAGES),
        "subscribe+unsubscribe": _best_us(churn, len(extra)),
    }
    print(json.dumps(result))


def before(base: str, size: int, turns: int = 3) -> None:
    """Print the single-syntax costs after the change over before (see module)."""
    here = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    trees = {"before": os.path.abspath(base), "after": here}
    got: dict[str, list[dict[str, float]]] = {name: [] for name in trees}
    for _ in range(turns):
        for name, tree in trees.items():
            env = {**os.environ, "PYTHONPATH": tree}
            out = subprocess.run(
                [sys.executable, __file__, "single", str(size)],
                env=env,
                cwd="/",
                check=True,
                capture_output=True,
                text=True,
            ).stdout
            got[name].append(json.loads(out.splitlines()[-1]))
    print(f"TopicIndex('urlpattern') on mercure1 at N={size:,}, {turns} turns each:")
    for key in got["before"][0]:
        b = statistics.median(r[key] for r in got["before"])
        a = statistics.median(r[key] for r in got["after"])
        print(f"  {key:22} before {b:7.2f} us  after {a:7.2f} us  after/before {a / b:.3f}")


if __name__ == "__main__":
    mode, *args = sys.argv[1:] or ["mixed"]
    if mode == "single":
        single(int(args[0]))
    elif mode == "before":
        before(args[0], int(args[1]) if len(args) > 1 else 100_000)
    else:
        mixed(int(args[0]) if args else 100_000)
