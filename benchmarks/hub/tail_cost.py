"""What an update costs a hub node that delivers it to nobody: CPU per update, in process.

Issue 42 asks that an update matching none of a node's subscribers cost that node close
to nothing (target: 5 us of CPU). A node of a shared transport reads every update of the
cluster back (the Redis tail; the shared SQLite follower), so this is what every node
added costs every publish. Each measurement runs in a child process whose ``skipfilter`` is
this checkout (``new``) or a git revision (``git archive``): a hub with ``--subscribers``
subscribers (exact topics, Mercure 1.0's default, none of them published to) starts, its
event loop is held while another process publishes ``--updates`` updates through the same
transport, then the loop is let go and the CPU time (``time.process_time``) the hub spends
until fan-out has handled the last of them is divided by their number: the tail, the
decoding, the match, the ring and fan-out. Case ``matching`` adds one subscriber of ``*``,
whose stream takes each chunk, so every update is decoded and delivered. Variants and cases
run in turn, ``--rounds`` times, the best of each kept; ratios are against the first
variant (the first ``--compare`` revision). ``--profile CASE`` prints where the time goes.

    .venv/bin/python benchmarks/hub/tail_cost.py --compare 9514441
    .venv/bin/python benchmarks/hub/tail_cost.py --compare 9514441 --transport sqlite-shared
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import gc
import json
import os
import pstats
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
CASES = ("nobody", "matching")


def _updates(count: int, seed: int) -> list[Any]:
    """``count`` updates as the mercure workload publishes them: two topics, mostly unique,
    a small JSON body; one in eight private."""
    from skipfilter.hub.update import Update

    return [
        Update(
            f"urn:uuid:{seed:08x}-{i:012x}",
            (f"https://example.com/books/{seed}-{i}", f"https://example.com/shelves/{i % 97}"),
            json.dumps({"title": f"Book {i}", "pages": i % 700, "tags": ["a", "b"]}),
            i % 8 == 0,
            "book" if i % 3 == 0 else None,
        )
        for i in range(count)
    ]


def _settings(transport: str, where: str) -> Any:
    from skipfilter.hub.settings import HubSettings

    common: dict[str, Any] = {"anonymous": True, "heartbeat": 0}  # the default ring: 4096
    if transport == "redis":
        return HubSettings(transport_url=where, **common)
    return HubSettings(history_path=where, history_shared=True, **common)


async def _write(transport_name: str, where: str, count: int, seed: int) -> None:
    """Publish ``count`` updates through the transport, in groups, as a busy node would."""
    from skipfilter.hub.transports import open_transport
    from skipfilter.hub.update import http_chunk

    transport = open_transport(_settings(transport_name, where))
    loop = asyncio.get_running_loop()

    def deliver(entries: list[Any], done: asyncio.Future[Any] | None) -> None:
        if done is not None and not done.done():
            done.set_result(entries[-1])

    await transport.start(loop, deliver)
    updates = _updates(count, seed)
    for start in range(0, count, 256):
        group = updates[start : start + 256]
        done: asyncio.Future[Any] = loop.create_future()
        transport.append(group, [http_chunk(u.encode()) for u in group], done)
        await asyncio.wait_for(done, 30)
    await transport.close()


class _Sink:
    """A stream that takes what it is offered as a socket would: its bytes, once."""

    def __init__(self) -> None:
        self.bytes = 0

    def offer(self, entry: Any) -> None:
        self.bytes += len(entry.chunk)

    def offer_batch(self, batch: Any) -> None:
        self.bytes += len(batch.chunk)


async def _measure(args: argparse.Namespace) -> dict[str, Any]:
    """CPU seconds per update for each case, in this process (and where its code is)."""
    import skipfilter
    from skipfilter.hub.core.hub import Hub
    from skipfilter.selectors import TypedSelector

    results: dict[str, Any] = {"source": skipfilter.__file__}
    for round_, case in enumerate(CASES):
        hub = Hub(_settings(args.transport, args.where))
        await hub.start()
        for i in range(args.subscribers):  # Mercure 1.0's default: exact topics
            topic = TypedSelector(f"https://example.com/users/{i}")
            hub.index.subscribe([topic], allowed=None, payload=None)
        sink = _Sink()
        if case == "matching":
            every = TypedSelector("*")
            sid = hub.index.subscribe([every], allowed=[every], payload=None)
            hub.open_streams[sid] = sink  # type: ignore[assignment]
        await asyncio.sleep(0.2)  # the tail's first read is on its way
        delivered = hub.metrics.updates
        gc.collect()
        # the loop is held while the writer stores every update: the tail finds them waiting
        seed = args.seed * 10 + round_
        writer = [sys.executable, __file__, "--write", str(args.updates)]
        writer += ["--transport", args.transport, "--where", args.where, "--seed", str(seed)]
        subprocess.run(writer, check=True, env=os.environ.copy(), timeout=300)
        profile = cProfile.Profile() if args.profile == case else None
        if profile is not None:
            profile.enable()
        started = time.process_time()
        deadline = time.monotonic() + 120
        while hub.metrics.updates - delivered < args.updates or len(hub.fanout):
            if time.monotonic() > deadline:
                raise RuntimeError(f"{hub.metrics.updates - delivered} of {args.updates} arrived")
            await asyncio.sleep(0.002)
        results[case] = (time.process_time() - started) / args.updates
        if profile is not None:
            profile.disable()
            pstats.Stats(profile, stream=sys.stderr).sort_stats("tottime").print_stats(25)
        if case == "matching" and sink.bytes == 0:
            raise RuntimeError("the matching subscriber got nothing")
        await hub.close()
    return results


def _source(variant: str, scratch: Path) -> Path:
    """Where ``variant``'s ``skipfilter`` is: this checkout, or an exported revision."""
    if variant == "new":
        return ROOT
    target = scratch / variant.replace("/", "_")
    if not target.exists():
        target.mkdir()
        archive = subprocess.run(
            ["git", "-C", str(ROOT), "archive", variant, "skipfilter"],
            check=True,
            capture_output=True,
        ).stdout
        subprocess.run(["tar", "-x", "-C", str(target)], input=archive, check=True)
    return target


def _fresh_history(transport: str, scratch: Path, server: Any, run: int) -> str:
    """An empty history for one child: a flushed Redis, or a new SQLite file."""
    if transport == "redis":
        import redis

        with redis.Redis(port=server.port) as client:
            client.flushall()
        return f"{server.url}?prefix=bench{run}"
    return str(scratch / f"history-{run}.sqlite3")


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--compare", action="append", default=[], metavar="REV")
    parser.add_argument("--transport", choices=("redis", "sqlite-shared"), default="redis")
    parser.add_argument("--subscribers", type=int, default=1000)
    parser.add_argument("--updates", type=int, default=20_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--profile", choices=CASES, help="profile one case (stderr)")
    parser.add_argument("--write", type=int, help=argparse.SUPPRESS)  # the writer child
    parser.add_argument("--measure", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--where", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.write is not None:
        asyncio.run(_write(args.transport, args.where, args.write, args.seed))
        return
    if args.measure:
        print(json.dumps(asyncio.run(_measure(args))))
        return
    variants = [*args.compare, "new"]
    best: dict[tuple[str, str], float] = {}
    with tempfile.TemporaryDirectory(prefix="tail-cost-") as scratch_name:
        scratch = Path(scratch_name)
        server = None
        if args.transport == "redis":
            sys.path.insert(0, str(ROOT))
            from tests.hub.redis_server import RedisServer

            server = RedisServer(scratch).start()
        try:
            run = 0
            for round_ in range(args.rounds):
                for variant in variants:
                    run += 1
                    where = _fresh_history(args.transport, scratch, server, run)
                    source = _source(variant, scratch)
                    child = [sys.executable, __file__, "--measure"]
                    child += ["--transport", args.transport, "--where", where]
                    child += ["--subscribers", str(args.subscribers)]
                    child += ["--updates", str(args.updates), "--seed", str(run)]
                    child += ["--profile", args.profile] if args.profile else []
                    env = {**os.environ, "PYTHONPATH": str(source)}
                    done = subprocess.run(
                        child, check=True, env=env, capture_output=True, text=True, cwd=scratch
                    )
                    out = done.stdout
                    if args.profile:
                        print(done.stderr, file=sys.stderr)
                    measured = json.loads(out.splitlines()[-1])
                    assert measured.pop("source").startswith(str(source)), measured
                    for case, seconds in measured.items():
                        key = (variant, case)
                        best[key] = min(best.get(key, float("inf")), seconds)
                    print(f"round {round_ + 1} {variant}: {out.strip()}", file=sys.stderr)
        finally:
            if server is not None:
                server.stop()
    load = os.getloadavg()[0]
    print(
        f"{args.transport}: {args.subscribers} subscribers, {args.updates} updates, "
        f"best of {args.rounds}; load average {load:.1f}"
    )
    print(f"{'variant':>12} " + " ".join(f"{c + ' us':>12} {'ratio':>6}" for c in CASES))
    base = variants[0]
    for variant in variants:
        cells = []
        for case in CASES:
            us = best[(variant, case)] * 1e6
            cells.append(f"{us:12.2f} {us / (best[(base, case)] * 1e6):6.2f}")
        print(f"{variant:>12} " + " ".join(cells))


if __name__ == "__main__":
    main()
