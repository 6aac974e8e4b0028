"""What hostile load costs a Redis hub node, before and after a change (a script).

Each measurement starts a redis-server and ``skipfilter hub --transport`` nodes for each
variant: ``new`` (this checkout) or any git revision (exported with ``git archive``), run
one after the other in one invocation, and prints a table side by side.

* ``replay``: ``--entries`` updates of ``--size`` bytes, then ``--subscribers`` streams
  with ``lastEventID=earliest`` at once (a small ring, so they read Redis): bytes Redis
  sent (``INFO stats``), seconds, the hub's peak RSS.
* ``api``: ``--subscribers`` anonymous subscribers of 64 selectors each, spread over two
  nodes with ``--subscriptions``: one full listing of the subscriptions API (following its
  pages), and ``/healthz`` latency while five listings run at once.
* ``ack``: ``--entries`` publishes in a row from one client, ``--subscribers`` streams on
  the node: acknowledgement latency (a publish is acknowledged once the node's tail has
  read it back from Redis and handed it to fan-out).
* ``trim``: a node keeping 100,000 and ``--entries`` stored updates; a node with
  ``--history-size 4096`` joins and publishes; then the size is lowered to 4096 (on
  versions that record it in Redis): the longest script call (``SLOWLOG``), the stream's
  length after the first publish, publishes until 4096 are left.

    .venv/bin/python benchmarks/hub/hub_redis_costs.py replay --entries 200 --size 500000 \\
        --subscribers 2 --variants main,new
    .venv/bin/python benchmarks/hub/hub_redis_costs.py trim --entries 60000 --variants main,new
    .venv/bin/python benchmarks/hub/hub_redis_costs.py api --subscribers 1000 --variants main,new
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import httpx
import jwt
import redis

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.hub.hub_load import rss_bytes  # noqa: E402
from tests.hub.redis_server import RedisServer  # noqa: E402

KEY = "replay-bench-publisher-key-0123456789abcdef"
TOPIC = "https://example.com/big"


def _source(variant: str, scratch: Path) -> Path:
    if variant == "new":
        return ROOT
    target = scratch / variant.replace("/", "_")
    target.mkdir()
    archive = subprocess.run(
        ["git", "-C", str(ROOT), "archive", variant, "skipfilter"],
        check=True,
        capture_output=True,
    ).stdout
    subprocess.run(["tar", "-x", "-C", str(target)], input=archive, check=True)
    return target


def _together(threads: list[threading.Thread]) -> float:
    """Start ``threads`` at once and wait for them all: the seconds it took."""
    started = time.monotonic()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return time.monotonic() - started


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Node:
    """``skipfilter hub`` from ``source`` on a free port, over the Redis at ``redis_url``."""

    def __init__(self, source: Path, redis_url: str, *flags: str) -> None:
        self.port = _free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        command = [sys.executable, "-m", "skipfilter.cli", "hub"]
        command += ["--addr", self.url[7:], "--transport", redis_url, "--anonymous"]
        command += ["--heartbeat", "0", "--protocol-version-compatibility", "8"]  # 0.x clients
        self.process = subprocess.Popen(
            [*command, "--log-level", "warning", *flags],
            cwd=source,
            env={**os.environ, "PYTHONPATH": str(source), "MERCURE_PUBLISHER_JWT_KEY": KEY},
            stdout=subprocess.DEVNULL,
            stderr=subprocess.STDOUT,
        )
        deadline = time.monotonic() + 30
        while True:
            try:
                httpx.get(self.url + "/healthz", timeout=1)
                break
            except httpx.TransportError:
                assert time.monotonic() < deadline, "hub did not start"
                time.sleep(0.1)
        self.client = httpx.Client(base_url=self.url, timeout=60)
        token = jwt.encode({"mercure": {"publish": ["*"]}}, KEY, algorithm="HS256")
        self.headers = {"Authorization": f"Bearer {token}"}

    def publish(self, data: str = "d", **fields: str) -> None:
        form = {"topic": TOPIC, "data": data, **fields}
        self.client.post("/.well-known/mercure", data=form, headers=self.headers).raise_for_status()

    def stop(self) -> None:
        self.client.close()
        self.process.terminate()
        try:
            self.process.wait(15)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(10)


def replay(source: Path, args: argparse.Namespace, directory: Path) -> dict[str, float]:
    """Redis traffic, time and hub memory of ``--subscribers`` replays of everything."""
    with RedisServer(directory) as server:
        node = Node(source, server.url, "--ring-bytes", str(1 << 20))
        try:
            payload = "x" * args.size
            for i in range(args.entries):
                node.publish(payload, id=f"big-{i}")
            watcher = redis.Redis.from_url(server.url)
            sent_before = int(watcher.info("stats")["total_net_output_bytes"])
            rss_before = peak = rss_bytes(node.process.pid)
            done = threading.Event()

            def sample() -> None:
                nonlocal peak
                while not done.is_set():
                    peak = max(peak, rss_bytes(node.process.pid))
                    time.sleep(0.02)

            sampler = threading.Thread(target=sample, daemon=True)
            sampler.start()
            seconds = _together(
                [
                    threading.Thread(target=_read_all, args=(node.url, args.entries))
                    for _ in range(args.subscribers)
                ]
            )
            done.set()
            sampler.join()
            sent = int(watcher.info("stats")["total_net_output_bytes"]) - sent_before
            return {
                "stored MB": args.entries * args.size / 1e6,
                "Redis sent MB": sent / 1e6,
                "seconds": seconds,
                "hub RSS before MB": rss_before / 2**20,
                "hub RSS peak MB": peak / 2**20,
            }
        finally:
            node.stop()


def trim(source: Path, args: argparse.Namespace, directory: Path) -> dict[str, float]:
    """The longest script call when a node keeping 4,096 joins one keeping 100,000."""
    with RedisServer(directory) as server:
        client = redis.Redis.from_url(server.url)
        keeper = Node(source, server.url, "--history-size", "100000")
        with client.pipeline(transaction=False) as pipe:
            for i in range(args.entries):
                update = json.dumps([f"old-{i}", [TOPIC], "d", False, None, None])
                pipe.xadd("skipfilter:updates", {"u": update, "i": f"old-{i}"})
            pipe.execute()
        joiner = Node(source, server.url, "--history-size", "4096")
        try:
            client.config_set("slowlog-log-slower-than", 0)
            client.slowlog_reset()
            joiner.publish(id="first")
            first_ms = _slowest_script_us(client) / 1000
            after_first = client.xlen("skipfilter:updates")
            client.hset("skipfilter:config", "history_size", 4096)  # lowered on purpose
            client.slowlog_reset()
            publishes = 0
            while client.xlen("skipfilter:updates") > 4096 and publishes < 10_000:
                joiner.publish(id=f"more-{publishes}")
                publishes += 1
            return {
                "stored before": args.entries,
                "longest call, first publish (ms)": first_ms,
                "length after the first publish": after_first,
                "publishes to reach 4,096 once lowered": publishes,
                "longest call while lowering (ms)": _slowest_script_us(client) / 1000,
            }
        finally:
            joiner.stop()
            keeper.stop()


def _listing(url: str, failures: list[str] | None = None) -> tuple[int, int, int]:
    """Every entry of the subscriptions API (following ``next`` pages when there are
    some): (entries, bytes, pages); refusals are added to ``failures``."""
    entries = size = pages = 0
    path: str | None = "/.well-known/mercure/subscriptions"
    with httpx.Client(base_url=url, timeout=60) as client:
        while path is not None:
            response = client.get(path)
            if response.status_code != 200:
                (failures if failures is not None else []).append(response.text.strip())
                return entries, size, pages
            body = response.json()
            entries += len(body["subscriptions"])
            size += len(response.content)
            pages += 1
            path = body.get("next")
    return entries, size, pages


def api(source: Path, args: argparse.Namespace, directory: Path) -> dict[str, float]:
    """The subscriptions API over ``--subscribers`` x 64 selectors on two nodes: one full
    listing's time and size, and /healthz latency while 5 listings run at once."""
    with RedisServer(directory) as server:
        nodes = [Node(source, server.url, "--subscriptions") for _ in range(2)]
        held: list[socket.socket] = []
        try:
            for i in range(args.subscribers):
                node = nodes[i % 2]
                query = "&".join(f"topic=https://example.com/u/{i}/{j}" for j in range(64))
                sock = socket.create_connection(("127.0.0.1", node.port))
                sock.sendall(
                    f"GET /.well-known/mercure?{query} HTTP/1.1\r\nHost: h\r\n\r\n".encode()
                )
                assert sock.recv(12) == b"HTTP/1.1 200"
                held.append(sock)
            expected = args.subscribers * 64
            deadline = time.monotonic() + 120
            while _listing(nodes[0].url)[0] < expected:
                assert time.monotonic() < deadline, "the subscriptions were never all listed"
                time.sleep(0.5)
            started = time.monotonic()
            entries, size, pages = _listing(nodes[0].url)
            one = time.monotonic() - started
            samples: list[float] = []
            done = threading.Event()

            def probe() -> None:
                with httpx.Client(base_url=nodes[0].url, timeout=60) as client:
                    while not done.is_set():
                        begun = time.monotonic()
                        client.get("/healthz")
                        samples.append(time.monotonic() - begun)
                        time.sleep(0.01)

            prober = threading.Thread(target=probe)
            prober.start()
            failures: list[str] = []
            five = _together(
                [threading.Thread(target=_listing, args=(nodes[0].url, failures)) for _ in range(5)]
            )
            done.set()
            prober.join()
            samples.sort()
            for failure in sorted(set(failures)):
                print("refused:", failure[:300], flush=True)
            return {
                "entries listed": entries,
                "pages": pages,
                "MiB": size / 2**20,
                "one listing (s)": one,
                "5 listings at once (s)": five,
                "/healthz max during them (s)": samples[-1],
                "/healthz p50 during them (s)": samples[len(samples) // 2],
                "listings refused": len(failures),
            }
        finally:
            for sock in held:
                sock.close()
            for node in nodes:
                node.stop()


def ack(source: Path, args: argparse.Namespace, directory: Path) -> dict[str, float]:
    """Publish acknowledgement latency, one publisher, ``--entries`` publishes in a row,
    with ``--subscribers`` streams on the node."""
    with RedisServer(directory) as server:
        node = Node(source, server.url)
        held = []
        try:
            for _ in range(args.subscribers):
                sock = socket.create_connection(("127.0.0.1", node.port))
                sock.sendall(
                    f"GET /.well-known/mercure?topic={TOPIC} HTTP/1.1\r\nHost: h\r\n\r\n".encode()
                )
                held.append(sock)
            for i in range(50):  # warm up
                node.publish(id=f"warm-{i}")
            times = []
            for i in range(args.entries):
                started = time.perf_counter()
                node.publish(id=f"u-{i}")
                times.append(time.perf_counter() - started)
            times.sort()
            return {
                "publishes": args.entries,
                "ack p50 (ms)": times[len(times) // 2] * 1000,
                "ack p99 (ms)": times[int(len(times) * 0.99)] * 1000,
                "publishes/s": args.entries / sum(times),
            }
        finally:
            for sock in held:
                sock.close()
            node.stop()


def _slowest_script_us(client: redis.Redis) -> int:
    runs = [e for e in client.slowlog_get(100_000) if e["command"].startswith(b"EVALSHA")]
    return max((int(e["duration"]) for e in runs), default=0)


def _read_all(url: str, count: int) -> None:
    seen = 0
    params = {"topic": TOPIC, "lastEventID": "earliest"}
    timeout = httpx.Timeout(10, read=300)
    with httpx.stream("GET", url + "/.well-known/mercure", params=params, timeout=timeout) as r:
        for line in r.iter_lines():
            if line.startswith("id: "):
                seen += 1
                if seen == count:
                    return
    raise AssertionError(f"replay ended after {seen} of {count}")


MEASURES = {"ack": ack, "api": api, "replay": replay, "trim": trim}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("measure", choices=sorted(MEASURES))
    parser.add_argument("--entries", type=int, default=200)
    parser.add_argument("--size", type=int, default=500_000)
    parser.add_argument("--subscribers", type=int, default=2)
    parser.add_argument("--variants", default="main,new")
    args = parser.parse_args()
    scratch = Path(tempfile.mkdtemp(prefix="redis-costs-"))
    try:
        results = {}
        sources: dict[str, Path] = {}
        for run, variant in enumerate(args.variants.split(",")):  # repeat one to alternate
            if variant not in sources:
                sources[variant] = _source(variant, scratch)
            directory = scratch / f"redis-{run}"
            directory.mkdir()
            name = variant if variant not in results else f"{variant} ({run + 1})"
            results[name] = MEASURES[args.measure](sources[variant], args, directory)
            print(name, results[name], flush=True)
        names = list(results)
        print("| | " + " | ".join(names) + " |")
        print("|---" * (len(names) + 1) + "|")
        for metric in results[names[0]]:
            cells = " | ".join(f"{results[n][metric]:,.1f}" for n in names)
            print(f"| {metric} | {cells} |")
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main()
