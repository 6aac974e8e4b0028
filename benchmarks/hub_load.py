"""Load test of the skipfilter Mercure hub on loopback (a script, not a unit test).

Starts ``skipfilter hub`` as a subprocess, connects N SSE subscribers (raw asyncio sockets,
so the client stays cheap), publishes at a steady rate for a fixed time, then reports
delivery latency p50/p99, updates/s, deliveries/s, the hub's CPU, and checks that every
subscriber got exactly the updates it should have, in order, once.

    .venv/bin/python benchmarks/hub_load.py --subscribers 2000 --rate 100 --seconds 15
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from urllib.parse import quote, urlencode

import httpx
import jwt

KEY = "load-test-publisher-key-0123456789abcdef"
FEEDS = 20  # every subscriber follows one of FEEDS feeds: a feed update has N/FEEDS recipients


@dataclass
class Sub:
    """One subscriber: what it selects and what it received."""

    index: int
    feed: int
    books: bool  # 10% also subscribe to the template https://example.com/books/{id}
    got: list[int] = field(default_factory=list)
    latencies: list[float] = field(default_factory=list)

    @property
    def topics(self) -> list[str]:
        topics = [
            f"https://example.com/users/{self.index}",
            f"https://example.com/feeds/{self.feed}",
        ]
        if self.books:
            topics.append("https://example.com/books/{id}")
        return topics

    def wants(self, update: dict[str, int]) -> bool:
        return (
            update["user"] == self.index
            or update["feed"] == self.feed
            or (self.books and update["book"] >= 0)
        )


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def cpu_seconds(pid: int) -> float:
    """utime + stime of a process, from /proc (Linux)."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def subscribe(port: int, sub: Sub, ready: asyncio.Event, counter: list[int], n: int) -> None:
    """Open the stream, then pull ``data: <n> <publish time>`` lines out of raw reads."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port, limit=1 << 20)
    query = urlencode([("topic", t) for t in sub.topics])
    writer.write(
        f"GET /.well-known/mercure?{query} HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        "Accept: text/event-stream\r\n\r\n".encode()
    )
    await writer.drain()
    head = await reader.readuntil(b"\r\n\r\n")
    if b" 200 " not in head.split(b"\r\n", 1)[0]:
        raise RuntimeError(f"subscriber {sub.index}: {head!r}")
    counter[0] += 1
    if counter[0] == n:
        ready.set()
    pending = b""
    while True:
        chunk = await reader.read(1 << 16)
        if not chunk:
            return
        now = time.time()
        # chunked transfer encoding never splits an event: each write is whole events
        pending += chunk
        lines = pending.split(b"\n")
        pending = lines.pop()
        for line in lines:
            if line.startswith(b"data: "):
                number, sent = line[6:].split()
                sub.got.append(int(number))
                sub.latencies.append(now - float(sent))


def plan(args: argparse.Namespace) -> list[dict[str, int]]:
    """The updates to publish, the same in the publisher and in the checker (seeded)."""
    rng = random.Random(args.seed)
    total = int(args.rate * args.seconds)
    return [
        {
            "n": n,
            "user": rng.randrange(args.subscribers),
            "feed": n % FEEDS,
            "book": n if n % 10 == 0 else -1,
        }
        for n in range(total)
    ]


async def publish(args: argparse.Namespace) -> None:
    """Publisher process: ``--publishers`` connections share the planned updates round-robin,
    each POSTing its share in order at the steady overall rate; prints a JSON summary."""
    token = jwt.encode({"mercure": {"publish": ["*"]}}, KEY, algorithm="HS256")
    headers = {
        "Authorization": f"Bearer {token}",
        "Content-Type": "application/x-www-form-urlencoded",
    }
    updates = plan(args)
    timings: list[float] = []
    start = time.perf_counter() + 0.1

    async def publisher(share: list[dict[str, int]]) -> None:
        base = f"http://127.0.0.1:{args.port}"
        async with httpx.AsyncClient(base_url=base, timeout=30) as client:
            for update in share:
                delay = start + update["n"] / args.rate - time.perf_counter()
                if delay > 0:
                    await asyncio.sleep(delay)
                topics = [
                    f"https://example.com/users/{update['user']}",
                    f"https://example.com/feeds/{update['feed']}",
                ]
                if update["book"] >= 0:
                    topics.append(f"https://example.com/books/{update['book']}")
                data = f"{update['n']} {time.time()}"
                form = [("topic", t) for t in topics] + [("data", data)]
                t0 = time.perf_counter()
                response = await client.post(
                    "/.well-known/mercure",
                    content=urlencode(form, quote_via=quote).encode(),
                    headers=headers,
                )
                timings.append(time.perf_counter() - t0)
                response.raise_for_status()

    k = args.publishers
    await asyncio.gather(*(publisher(updates[j::k]) for j in range(k)))
    elapsed = time.perf_counter() - start
    summary = {
        "seconds": elapsed,
        "publish_p50": statistics.median(timings),
        "publish_p99": statistics.quantiles(timings, n=100)[98],
    }
    print(json.dumps(summary))


async def run(args: argparse.Namespace) -> dict[str, object]:
    """Start the hub, connect the subscribers, run the publisher process, check and measure."""
    port = free_port()
    history = tempfile.mkdtemp(prefix="hub-load-") + "/history.sqlite3"
    hub = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "skipfilter.cli",
            "hub",
            "--addr",
            f"127.0.0.1:{port}",
            "--anonymous",
            "--history",
            history,
            "--heartbeat",
            "0",
            "--log-level",
            "warning",
            "--ring-size",
            str(args.ring_size),
        ],
        env={**os.environ, "MERCURE_PUBLISHER_JWT_KEY": KEY},
    )
    try:
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=30) as client:
            for _ in range(200):
                try:
                    await client.get("/metrics")
                    break
                except httpx.TransportError:
                    await asyncio.sleep(0.1)
            rng = random.Random(args.seed + 1)
            subs = [Sub(i, i % FEEDS, rng.random() < 0.1) for i in range(args.subscribers)]
            ready, counter = asyncio.Event(), [0]
            start_connect = time.perf_counter()
            tasks = []
            for sub in subs:
                tasks.append(asyncio.create_task(subscribe(port, sub, ready, counter, len(subs))))
                if len(tasks) % 100 == 0:
                    await asyncio.sleep(0.01)
            await asyncio.wait_for(ready.wait(), 120)
            connect_seconds = time.perf_counter() - start_connect

            updates = plan(args)
            expected = {s.index: [u["n"] for u in updates if s.wants(u)] for s in subs}
            cpu_before, wall_before = cpu_seconds(hub.pid), time.perf_counter()
            publisher = await asyncio.create_subprocess_exec(
                sys.executable,
                __file__,
                "--publish-to",
                str(port),
                "--subscribers",
                str(args.subscribers),
                "--rate",
                str(args.rate),
                "--seconds",
                str(args.seconds),
                "--seed",
                str(args.seed),
                "--publishers",
                str(args.publishers),
                stdout=asyncio.subprocess.PIPE,
            )
            out, _ = await publisher.communicate()
            if publisher.returncode != 0:
                raise RuntimeError("publisher failed")
            published = json.loads(out)
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline:
                if all(len(s.got) >= len(expected[s.index]) for s in subs):
                    break
                await asyncio.sleep(0.05)
            drained_seconds = time.perf_counter() - wall_before
            cpu = cpu_seconds(hub.pid) - cpu_before
            metrics = (await client.get("/metrics")).text
            for task in tasks:
                task.cancel()
    finally:
        hub.send_signal(signal.SIGTERM)
        try:
            hub.wait(10)
        except subprocess.TimeoutExpired:
            hub.kill()
    lost = sum(len(set(expected[s.index]) - set(s.got)) for s in subs)
    # each publisher connection's updates must arrive in its order, every one exactly once
    k = args.publishers
    wrong = sum(
        len(s.got) != len(set(s.got))
        or any(
            [n for n in s.got if n % k == j] != [n for n in expected[s.index] if n % k == j]
            for j in range(k)
        )
        for s in subs
    )
    latencies = sorted(x for s in subs for x in s.latencies)
    q = statistics.quantiles(latencies, n=100) if len(latencies) > 1 else [0.0] * 99
    match_count = match_sum = 0.0
    for line in metrics.splitlines():
        if line.startswith("skipfilter_hub_match_seconds_sum"):
            match_sum = float(line.split()[1])
        elif line.startswith("skipfilter_hub_match_seconds_count"):
            match_count = float(line.split()[1])
    return {
        "subscribers": args.subscribers,
        "connect_seconds": round(connect_seconds, 2),
        "updates": len(updates),
        "target_rate": args.rate,
        "updates_per_second": round(len(updates) / published["seconds"], 1),
        "deliveries": len(latencies),
        "expected_deliveries": sum(len(v) for v in expected.values()),
        "deliveries_per_second": round(len(latencies) / drained_seconds, 1),
        "latency_p50_ms": round(q[49] * 1e3, 2),
        "latency_p99_ms": round(q[98] * 1e3, 2),
        "latency_max_ms": round(latencies[-1] * 1e3, 2) if latencies else 0.0,
        "publish_p50_ms": round(published["publish_p50"] * 1e3, 2),
        "publish_p99_ms": round(published["publish_p99"] * 1e3, 2),
        "hub_cpu_percent": round(100 * cpu / drained_seconds, 1),
        "match_us_mean": round(1e6 * match_sum / match_count, 2) if match_count else 0.0,
        "lost": lost,
        "subscribers_with_wrong_sequence": wrong,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--subscribers", type=int, default=2000)
    parser.add_argument("--rate", type=float, default=100.0, help="updates per second")
    parser.add_argument("--seconds", type=float, default=15.0)
    parser.add_argument("--ring-size", type=int, default=4096)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--publishers", type=int, default=4, help="concurrent connections")
    parser.add_argument("--publish-to", type=int, dest="port", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.port is not None:
        asyncio.run(publish(args))
        return 0
    report = asyncio.run(run(args))
    width = max(map(len, report))
    for name, value in report.items():
        print(f"{name:<{width}}  {value}")
    return 0 if report["lost"] == 0 and report["subscribers_with_wrong_sequence"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
