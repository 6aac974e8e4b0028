"""What carrying the encoded SSE chunk in a Redis Stream entry would save a node (a script).

Every node of a Redis-backed hub turns each entry it reads into an ``Entry``: JSON decode,
the publish checks (``valid_update``: an entry is untrusted input), then the SSE encoding
and HTTP chunk framing every recipient is sent. Carrying the chunk in the entry could skip
only the last two steps (the update is still needed to match topics and check privacy,
and a carried chunk is as untrusted as the rest: using it unchecked would let anyone with
``XADD`` rights send any bytes to every subscriber). Timed per entry, in one run, for
several payload sizes; also the bytes each node reads per entry with and without it.

    .venv/bin/python -m benchmarks.hub.redis_entry_chunk
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable

from skipfilter.hub.transports.redis.entries import (
    ID_FIELD,
    UPDATE_FIELD,
    EntryReader,
    decode,
    encode,
)
from skipfilter.hub.update import Update, http_chunk


def per_call_us(fn: Callable[[], object], seconds: float) -> float:
    """One timing of ``fn``, in microseconds per call."""
    calls, start = 0, time.perf_counter()
    while (elapsed := time.perf_counter() - start) < seconds:
        for _ in range(20):
            fn()
        calls += 20
    return elapsed / calls * 1e6


def best_interleaved(fns: list[Callable[[], object]], seconds: float, rounds: int) -> list[float]:
    """The best of ``rounds`` timings of each of ``fns``, taken in turn so that a busy
    spell of a shared machine slows all of them alike."""
    best = [float("inf")] * len(fns)
    for _ in range(rounds):
        for i, fn in enumerate(fns):
            best[i] = min(best[i], per_call_us(fn, seconds))
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=0.1, help="per timing")
    parser.add_argument("--rounds", type=int, default=9, help="timings of each, the best kept")
    args = parser.parse_args()
    reader = EntryReader("bench")
    sid = b"1700000000000-1"
    print(
        f"{'data bytes':>10} {'entry today us':>15} {'decode+check us':>16} "
        f"{'encode+chunk us':>16} {'saved':>6} {'entry B':>8} {'with chunk B':>13}"
    )
    for size in (100, 1_000, 10_000, 100_000):
        update = Update(
            "urn:uuid:6e1c3d1c-6b7e-4c2b-9a34-4f0e4c1b6f1a",
            ("https://example.com/books/1", "https://example.com/users/42"),
            ('{"title": "x", "n": 1}, ' * (size // 24 + 1))[:size],  # one line, as JSON is
            True,
            "book",
            None,
        )
        fields = {UPDATE_FIELD: encode(update).encode(), ID_FIELD: update.id.encode()}
        chunk = http_chunk(update.encode())

        def entry_today(f: dict[bytes, bytes] = fields) -> object:
            return reader.entry(sid, f)

        def decode_checked(f: dict[bytes, bytes] = fields) -> object:
            return decode(f)

        def encode_chunk(u: Update = update) -> object:
            return http_chunk(u.encode())

        today, checked, encoding = best_interleaved(
            [entry_today, decode_checked, encode_chunk],
            args.seconds,
            args.rounds,
        )
        entry_bytes = sum(len(k) + len(v) for k, v in fields.items())
        print(
            f"{size:>10} {today:>15.1f} {checked:>16.1f} {encoding:>16.1f} "
            f"{encoding / today:>6.0%} {entry_bytes:>8} {entry_bytes + 1 + len(chunk):>13}"
        )


if __name__ == "__main__":
    main()
