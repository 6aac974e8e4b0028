"""Replay over large updates on a Redis hub node: Redis traffic and hub memory (a script).

Starts a redis-server and one ``skipfilter hub --transport`` node per variant (a small
ring, so replays read Redis), publishes ``--entries`` updates of ``--size`` bytes, then
opens ``--subscribers`` streams with ``lastEventID=earliest`` at once and reads them to the
end. Reports the bytes Redis sent (``INFO stats``), the time, and the hub's peak RSS.
Variants: ``new`` (this checkout) and ``REV`` (any git revision, exported to a temporary
directory with ``git archive``), run one after the other in one invocation:

    .venv/bin/python benchmarks/hub_redis_replay.py --entries 200 --size 500000 \\
        --subscribers 2 --variants main,new
"""

from __future__ import annotations

import argparse
import os
import shutil
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
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))

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


def _rss(pid: int) -> int:
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    return 0


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def run(variant: str, source: Path, args: argparse.Namespace, scratch: Path) -> dict[str, float]:
    directory = scratch / f"redis-{variant.replace('/', '_')}"
    directory.mkdir()
    with RedisServer(directory) as server:
        port = _free_port()
        hub = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "skipfilter.cli",
                "hub",
                "--addr",
                f"127.0.0.1:{port}",
                "--transport",
                server.url,
                "--anonymous",
                "--heartbeat",
                "0",
                "--ring-bytes",
                str(1 << 20),
                "--log-level",
                "warning",
            ],
            cwd=source,
            env={**os.environ, "PYTHONPATH": str(source), "MERCURE_PUBLISHER_JWT_KEY": KEY},
            stdout=subprocess.DEVNULL,
            stderr=subprocess.STDOUT,
        )
        url = f"http://127.0.0.1:{port}"
        try:
            deadline = time.monotonic() + 30
            while True:
                try:
                    httpx.get(url + "/healthz", timeout=1)
                    break
                except httpx.TransportError:
                    assert time.monotonic() < deadline, "hub did not start"
                    time.sleep(0.1)
            token = jwt.encode({"mercure": {"publish": ["*"]}}, KEY, algorithm="HS256")
            payload = "x" * args.size
            with httpx.Client(base_url=url, timeout=60) as client:
                for i in range(args.entries):
                    response = client.post(
                        "/.well-known/mercure",
                        data={"topic": TOPIC, "data": payload, "id": f"big-{i}"},
                        headers={"Authorization": f"Bearer {token}"},
                    )
                    response.raise_for_status()
            watcher = redis.Redis.from_url(server.url)
            sent_before = int(watcher.info("stats")["total_net_output_bytes"])
            rss_before = peak = _rss(hub.pid)
            done = threading.Event()

            def sample() -> None:
                nonlocal peak
                while not done.is_set():
                    peak = max(peak, _rss(hub.pid))
                    time.sleep(0.02)

            sampler = threading.Thread(target=sample, daemon=True)
            sampler.start()
            started = time.monotonic()
            readers = [
                threading.Thread(target=_read_all, args=(url, args.entries))
                for _ in range(args.subscribers)
            ]
            for reader in readers:
                reader.start()
            for reader in readers:
                reader.join()
            seconds = time.monotonic() - started
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
            hub.terminate()
            hub.wait(10)


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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--entries", type=int, default=200)
    parser.add_argument("--size", type=int, default=500_000)
    parser.add_argument("--subscribers", type=int, default=2)
    parser.add_argument("--variants", default="main,new")
    args = parser.parse_args()
    scratch = Path(tempfile.mkdtemp(prefix="replay-bench-"))
    try:
        results = {}
        for variant in args.variants.split(","):
            results[variant] = run(variant, _source(variant, scratch), args, scratch)
            print(variant, results[variant], flush=True)
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
