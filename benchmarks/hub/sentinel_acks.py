"""What replicated acknowledgements cost: publish latency and rate over a Sentinel set.

One Sentinel set (a primary, two replicas, three sentinels; real processes on loopback) and
one hub node at a time, started with ``?replicas=0`` (acknowledged once the primary has the
update) or ``?replicas=1`` (once a replica has it too: the append's pipeline ends with a
WAIT, the tail delivers after a WAIT of its own). ``--concurrency`` publishers post as fast
as they are answered for ``--seconds``; the settings take turns (0, 1, 0, 1...) so a burst
of load on the machine hits both. Reports each setting's acknowledgement latency p50/p99
and publishes/s (all rounds pooled), and the ratios of replicas=1 to replicas=0 (pooled, and
the median of each round's pair).

    .venv/bin/python -m benchmarks.hub.sentinel_acks --seconds 5 --rounds 2 --concurrency 16
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

from rigs.ports import restartable_port
from rigs.sentinel_set import SentinelSet

KEY = "sentinel-acks-publisher-key-0123456789abcdef"
HUB = "/.well-known/mercure"


def _token() -> str:
    import jwt

    return jwt.encode({"mercure": {"publish": ["*"]}}, KEY, algorithm="HS256")


def _start_hub(url: str, log: Path) -> tuple[subprocess.Popen[bytes], int]:
    port = restartable_port()
    argv = [sys.executable, "-m", "skipfilter.cli", "hub", "--anonymous", "--transport", url]
    argv += ["--addr", f"127.0.0.1:{port}", "--log-level", "warning", "--heartbeat", "0"]
    argv += ["--protocol-version-compatibility", "8"]  # its tokens name no issuer
    with log.open("ab") as out:
        process = subprocess.Popen(
            argv,
            stdout=out,
            stderr=subprocess.STDOUT,
            env={**os.environ, "MERCURE_PUBLISHER_JWT_KEY": KEY},
        )
    deadline = time.monotonic() + 30
    while True:
        try:
            if httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=1).status_code == 200:
                return process, port
        except httpx.TransportError:
            pass
        if time.monotonic() > deadline or process.poll() is not None:
            process.kill()
            raise RuntimeError(f"the hub did not start (log: {log})")
        time.sleep(0.1)


async def _load(port: int, seconds: float, concurrency: int) -> tuple[list[float], int]:
    """Publish from ``concurrency`` keep-alive clients; latencies of the 200s, and errors."""
    headers = {"Authorization": f"Bearer {_token()}"}
    latencies: list[float] = []
    errors = 0
    deadline = time.monotonic() + seconds

    async def one() -> None:
        nonlocal errors
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=10) as client:
            while time.monotonic() < deadline:
                data = {"topic": "https://example.com/t", "data": "x" * 100}
                started = time.perf_counter()
                response = await client.post(HUB, data=data, headers=headers)
                if response.status_code == 200:
                    latencies.append(time.perf_counter() - started)
                else:
                    errors += 1

    await asyncio.gather(*(one() for _ in range(concurrency)))
    return latencies, errors


def _quantile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] if ordered else 0.0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=5, help="per round and setting")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    workdir = Path(tempfile.mkdtemp(prefix="sentinel-acks-"))
    results: dict[int, dict[str, list[float]]] = {
        n: {"latency": [], "rate": [], "errors": [], "p50": []} for n in (0, 1)
    }
    with SentinelSet(workdir) as servers:
        for _ in range(args.rounds):
            for replicas in (0, 1):
                url = servers.url(replicas=replicas)
                hub, port = _start_hub(url, workdir / f"hub-{replicas}.log")
                try:
                    asyncio.run(_load(port, 0.5, args.concurrency))  # warm up
                    latencies, errors = asyncio.run(_load(port, args.seconds, args.concurrency))
                finally:
                    hub.terminate()
                    hub.wait(20)
                results[replicas]["latency"] += latencies
                results[replicas]["p50"].append(_quantile(latencies, 0.5))
                results[replicas]["rate"].append(len(latencies) / args.seconds)
                results[replicas]["errors"].append(errors)
    report = {}
    for replicas, got in results.items():
        report[f"replicas={replicas}"] = {
            "p50_ms": round(1000 * _quantile(got["latency"], 0.5), 2),
            "p99_ms": round(1000 * _quantile(got["latency"], 0.99), 2),
            "publishes_per_s": round(statistics.mean(got["rate"]), 1),
            "errors": int(sum(got["errors"])),
        }
    zero, one = report["replicas=0"], report["replicas=1"]
    pairs = zip(results[0]["p50"], results[1]["p50"], strict=True)
    rates = zip(results[0]["rate"], results[1]["rate"], strict=True)
    report["ratio_1_to_0"] = {
        "p50": round(one["p50_ms"] / zero["p50_ms"], 2),
        "p99": round(one["p99_ms"] / zero["p99_ms"], 2),
        "publishes_per_s": round(one["publishes_per_s"] / zero["publishes_per_s"], 2),
        # each round's pair ran back to back: the median of their ratios resists a burst
        "p50_median_of_rounds": round(statistics.median(b / a for a, b in pairs), 2),
        "rate_median_of_rounds": round(statistics.median(b / a for a, b in rates), 2),
    }
    print(json.dumps(report, indent=2))
    if args.json:
        args.json.write_text(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
