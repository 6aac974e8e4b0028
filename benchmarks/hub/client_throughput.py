"""The Python client's throughput beside httpx-sse's and plain httpx's, in one run.

    python -m benchmarks.hub.client_throughput [--updates 50000] [--publishes 2000] [--rounds 5]

Three measurements, each client taking turns in every round (medians reported, and the
ratio to the baseline measured in the same round):

- parse: one subscriber reading ``--updates`` events (ids, JSON data) that a loopback
  server writes as fast as the socket takes them: the client's own cost per update.
- replay: one subscriber receiving the same number of updates from a real hub's history
  (``skipfilter hub`` in another process, ``Last-Event-ID: earliest``): end to end.
- publish: one publisher, one keep-alive connection, publishing ``--publishes`` updates to
  the hub one after another; the baseline is a hand-written httpx form POST with a fixed
  token (the least a Python publisher can do), ours mints and renews its own.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from urllib.parse import urlencode

import httpx
from httpx_sse import EventSource

from rigs.ports import restartable_port
from skipfilter.client import Publisher, TokenMinter, subscribe

KEY = "benchmark-secret-of-at-least-32-bytes-long"
ISSUER = "https://issuer.example"
TOPIC = "https://example.com/books/1"


def event_stream(count: int) -> bytes:
    """``count`` events as the hub writes them: an id line, one JSON data line."""
    return b"".join(
        f'id: urn:uuid:00000000-0000-0000-0000-{i:012d}\ndata: {{"id": {i}, "title": '
        f'"book {i}", "price": {i % 97}.5}}\n\n'.encode()
        for i in range(count)
    )


class Blaster:
    """A loopback HTTP server answering every request with the same event stream."""

    def __init__(self, body: bytes) -> None:
        head = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
        self.response = head + f"Content-Length: {len(body)}\r\n\r\n".encode() + body
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self.listener.getsockname()[1]}/.well-known/mercure"
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.listener.accept()
            except OSError:
                return
            threading.Thread(target=self._answer, args=(conn,), daemon=True).start()

    def _answer(self, conn: socket.socket) -> None:
        with conn:
            request = b""
            while b"\r\n\r\n" not in request:
                chunk = conn.recv(65536)
                if not chunk:
                    return
                request += chunk
            try:
                conn.sendall(self.response)
            except OSError:
                return


def ours(url: str, count: int, **kw: object) -> float:
    """Seconds for :func:`skipfilter.client.subscribe` to yield ``count`` updates."""
    started = time.perf_counter()
    seen = 0
    with subscribe(url, [TOPIC], reconnect_delay=60, **kw) as subscription:  # type: ignore[arg-type]
        for _ in subscription:
            seen += 1
            if seen == count:
                break
    return time.perf_counter() - started


def httpx_sse(url: str, count: int, headers: dict[str, str] | None = None) -> float:
    """Seconds for httpx-sse's ``EventSource.iter_sse`` to yield ``count`` events."""
    started = time.perf_counter()
    seen = 0
    with (
        httpx.Client(timeout=httpx.Timeout(10, read=None)) as client,
        client.stream("GET", url, params={"match": TOPIC}, headers=headers or {}) as response,
    ):
        for _ in EventSource(response).iter_sse():
            seen += 1
            if seen == count:
                break
    assert seen == count, seen
    return time.perf_counter() - started


def start_hub(history: str) -> tuple[subprocess.Popen[bytes], str]:
    port = restartable_port()
    command = [sys.executable, "-m", "skipfilter.cli", "hub", "--addr", f"127.0.0.1:{port}"]
    command += ["--issuer", ISSUER, "--anonymous", "--history", history, "--heartbeat", "0"]
    command += ["--log-level", "warning"]
    env = {**os.environ, "MERCURE_PUBLISHER_JWT_KEY": KEY}
    hub = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL)
    for _ in range(400):
        try:
            httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=1).raise_for_status()
            return hub, f"http://127.0.0.1:{port}/.well-known/mercure"
        except httpx.HTTPError:
            time.sleep(0.05)
    hub.kill()
    raise SystemExit("the hub did not start")


def publish_ours(url: str, count: int) -> float:
    with Publisher(url, key=KEY, issuer=ISSUER) as publisher:
        publisher.publish(TOPIC, "warm-up")  # the connection, the first token
        started = time.perf_counter()
        for i in range(count):
            publisher.publish(TOPIC, f'{{"id": {i}}}')
        return time.perf_counter() - started


def publish_plain(url: str, count: int) -> float:
    token = TokenMinter(KEY, issuer=ISSUER, audience=url, publish=["*"])()
    headers = {
        "Authorization": f"Bearer {token}",
        "Content-Type": "application/x-www-form-urlencoded",
    }
    with httpx.Client(timeout=30) as client:
        client.post(url, content=urlencode({"topic": TOPIC, "data": "w"}), headers=headers)
        started = time.perf_counter()
        for i in range(count):
            body = urlencode([("topic", TOPIC), ("data", f'{{"id": {i}}}')]).encode()
            response = client.post(url, content=body, headers=headers)
            assert response.status_code == 200, response.text
        return time.perf_counter() - started


def rounds(measures: dict[str, Callable[[], float]], count: int, n: int) -> dict[str, float]:
    """Median rate (per second) of each measure over ``n`` rounds, taking turns."""
    times: dict[str, list[float]] = {name: [] for name in measures}
    for _ in range(n):
        for name, measure in measures.items():
            times[name].append(measure())
    return {name: count / statistics.median(values) for name, values in times.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--updates", type=int, default=50_000)
    parser.add_argument("--publishes", type=int, default=2_000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--json", action="store_true", help="print the results as JSON")
    args = parser.parse_args()
    n, count = args.rounds, args.updates
    results: dict[str, dict[str, float]] = {}

    blaster = Blaster(event_stream(count))
    results["parse"] = rounds(
        {
            "httpx-sse": lambda: httpx_sse(blaster.url, count),
            "skipfilter.client": lambda: ours(blaster.url, count),
        },
        count,
        n,
    )
    history = os.path.join(tempfile.mkdtemp(), "history.sqlite3")
    hub, url = start_hub(history)
    try:
        results["publish"] = rounds(
            {
                "httpx (fixed token)": lambda: publish_plain(url, args.publishes),
                "skipfilter.client": lambda: publish_ours(url, args.publishes),
            },
            args.publishes,
            n,
        )
        with Publisher(url, key=KEY, issuer=ISSUER) as publisher:
            stored = 2 * (args.publishes + 1) * n
            for i in range(max(0, count - stored)):
                publisher.publish(TOPIC, f'{{"id": {i}, "title": "book {i}"}}')
        earliest = {"Last-Event-ID": "earliest"}
        results["replay"] = rounds(
            {
                "httpx-sse": lambda: httpx_sse(url, count, earliest),
                "skipfilter.client": lambda: ours(url, count, last_event_id="earliest"),
            },
            count,
            n,
        )
    finally:
        hub.terminate()
        hub.wait(10)
    if args.json:
        print(json.dumps(results, indent=2))
        return
    print(f"{count:,} updates, {args.publishes:,} publishes, median of {n} rounds (per second)")
    for test, rates in results.items():
        base = next(iter(rates.values()))
        for name, rate in rates.items():
            print(f"  {test:8} {name:20} {rate:>12,.0f}   {rate / base:5.2f}x")


if __name__ == "__main__":
    main()
