"""The linearizability check TopicIndex's thread tests share, over any syntax."""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Callable, Sequence
from typing import TypeVar

from skipfilter.index import TopicIndex
from skipfilter.selectors import TypedSelector

#: A pattern as the test spells it: the oracle reads it as the index was given it.
P = TypeVar("P", bound=str | TypedSelector)


def check_linearizable(
    index: TopicIndex,
    patterns: Sequence[P],
    topics: list[str],
    matches: Callable[[P, str], bool],
    threads: int = 3,
    seconds: float = 1.5,
) -> None:
    """Writers subscribe and unsubscribe ``patterns`` while readers match ``topics``: every
    match holds every subscriber whose subscribe returned before it began (and is still
    there), and none whose unsubscribe did. ``matches(pattern, topic)`` is the oracle."""
    lock = threading.Lock()
    live: dict[int, P] = {}
    gone: set[int] = set()
    errors: list[str] = []
    stop = time.monotonic() + seconds

    def writer(seed: int) -> None:
        rng = random.Random(seed)
        mine: list[int] = []
        while time.monotonic() < stop and not errors:
            if mine and rng.random() < 0.5:
                sid = mine.pop(rng.randrange(len(mine)))
                with lock:
                    del live[sid]
                index.unsubscribe(sid)
                with lock:
                    gone.add(sid)
            else:
                pattern = rng.choice(patterns)
                sid = index.subscribe([pattern])
                mine.append(sid)
                with lock:
                    live[sid] = pattern

    def reader(seed: int) -> None:
        rng = random.Random(seed)
        while time.monotonic() < stop and not errors:
            topic = rng.choice(topics)
            with lock:
                before = {s for s, p in live.items() if matches(p, topic)}
                removed = set(gone)
            got = set(index.match([topic]))
            with lock:
                before &= set(live)
            if not before <= got:
                errors.append(f"missing {sorted(before - got)[:3]} for {topic}")
            if got & removed:
                errors.append(f"unsubscribed {sorted(got & removed)[:3]} returned")

    workers = [threading.Thread(target=writer, args=(i,)) for i in range(threads)]
    workers += [threading.Thread(target=reader, args=(i,)) for i in range(10, 10 + threads)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(timeout=60)
    assert not errors, errors[:3]
    for topic in topics:
        assert set(index.match([topic])) == {s for s, p in live.items() if matches(p, topic)}
