"""Load test of the skipfilter Mercure hub on loopback (a script, not a unit test).

Starts ``skipfilter hub`` as a subprocess, connects N SSE subscribers from separate fleet
processes (``hub_load_clients.py``), publishes at a steady rate from a publisher process,
then reports deliveries/s, publish-to-receive latency, the hub's and the clients' CPU, hub
memory per connection, and checks that every subscriber got exactly the updates it should
have, in order, once. Several hub variants run one after the other in one invocation and
are printed side by side:

* ``new``: this checkout, streams written straight to sockets (``--streams native``);
* ``asgi``: this checkout, streams through ASGI (``--streams asgi``);
* ``old``: the hub at ``--old-rev`` (a temporary git worktree), as it shipped: uvicorn
  with h11 on the asyncio loop;
* ``new@REV``, ``asgi@REV``: the new hub at another revision, for A/B runs of a change;
* ``new/w2``: the new hub as two worker processes over a Redis transport (a redis-server
  is started for the run);
* ``new/l2``: the new hub as two worker processes sharing its SQLite history, nothing
  beside it (the local mode: ``--workers 2`` without ``--transport``);
* a ``~nginx`` or ``~caddy`` suffix puts that proxy in front of the hub, run with its
  shipped file (deploy/) and a self-signed certificate; the clients connect to it over TLS
  (HTTP/1.1, as the fleets speak) and it to the hub over keep-alive HTTP/1.1; ``~tls``
  has the hub serve TLS itself (``--tls-cert``);
* a ``+KIND`` suffix picks the clients' protocol (``hub_load_clients.py``): ``+v0`` (the
  default: ``topic=`` and 0.x JWTs; a hub that speaks 1.0 then runs in compatibility mode,
  ``--protocol-version-compatibility 8``), ``+v1`` (``match=``/``match_urlpattern=`` and a
  1.0 access token, against a hub in its default 1.0-only mode), ``+v1p`` (``+v1`` with every
  matcher a URL Pattern), ``+v1c`` (1.0 clients against a hub in compatibility mode). E.g.
  ``--variants new+v0,new+v1,new+v1p``: 0.x and 1.0 clients side by side in one run.

Scenarios: ``broadcast`` (every subscriber follows one topic; every update goes to all) and
``targeted`` (each subscriber follows its user topic, one of 20 feeds, 10% a book template:
~N/20 recipients per update).

    .venv/bin/python benchmarks/hub/hub_load.py --scenario broadcast --subscribers 10000 \\
        --rate 10 --seconds 20 --variants new,asgi,old
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import math
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
CLIENTS = HERE / "hub_load_clients.py"
KEY = "load-test-publisher-key-0123456789abcdef"
#: The 1.0 publisher token's issuer: ``hub_load_clients.ISSUER`` (a script: not imported).
ISSUER = "https://load-test.invalid"
PER_FLEET = 5000
BUCKET = 1e-4

#: Runs the old hub as it shipped (no httptools/uvloop then): h11 on the asyncio loop.
_OLD_LAUNCHER = """
import sys, uvicorn
init = uvicorn.Config.__init__
def config(self, *a, **k):
    k.setdefault("http", "h11"); k.setdefault("loop", "asyncio"); init(self, *a, **k)
uvicorn.Config.__init__ = config
from skipfilter.cli import main
sys.exit(main(sys.argv[1:]))
"""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def cpu_seconds(pid: int) -> float:
    """utime + stime of a process, from /proc (Linux)."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def rss_bytes(pid: int) -> int:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    return 0


def process_tree(pid: int) -> list[int]:
    """``pid`` and its descendants (a supervisor and its workers)."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            with contextlib.suppress(OSError, IndexError, ValueError):
                with open(f"/proc/{entry}/stat") as f:
                    parent = int(f.read().rsplit(")", 1)[1].split()[1])
                children.setdefault(parent, []).append(int(entry))
    found, todo = [], [pid]
    while todo:
        current = todo.pop()
        found.append(current)
        todo.extend(children.get(current, []))
    return found


def tree_cpu(pid: int) -> float:
    return sum(cpu_seconds(p) for p in process_tree(pid) if os.path.exists(f"/proc/{p}"))


def tree_rss(pid: int) -> int:
    return sum(rss_bytes(p) for p in process_tree(pid) if os.path.exists(f"/proc/{p}"))


class RedisProcess:
    """A redis-server for a run, on a free port in the run's directory (AOF on)."""

    def __init__(self, directory: str) -> None:
        self.port = free_port()
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self.process = subprocess.Popen(
            [
                "redis-server",
                "--port",
                str(self.port),
                "--bind",
                "127.0.0.1",
                "--dir",
                directory,
                "--appendonly",
                "yes",
                "--appendfsync",
                "always",
                "--save",
                "",
            ],
            stdout=subprocess.DEVNULL,
        )

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait(10)


def old_checkout(rev: str) -> Path:
    """A detached worktree of ``rev`` (made once, reused)."""
    path = Path(tempfile.gettempdir()) / f"skipfilter-hub-{rev}"
    if not (path / "skipfilter").is_dir():
        subprocess.run(
            ["git", "-C", str(ROOT), "worktree", "add", "--detach", "--force", str(path), rev],
            check=True,
            capture_output=True,
        )
    return path


#: The hub flag that opts into serving 0.x clients beside 1.0 ones (hubs that have it).
COMPAT_FLAG = "--protocol-version-compatibility"


def split_variant(variant: str) -> tuple[str, str]:
    """``new+v1`` -> (``new``, ``v1``): the hub variant and the clients' kind (``v0`` when
    not given); ``v1c`` is 1.0 clients against a hub in compatibility mode."""
    hub, _, clients = variant.partition("+")
    clients = clients or "v0"
    if clients not in ("v0", "v1", "v1p", "v1c"):
        raise ValueError(f"unknown clients {clients!r} in variant {variant!r}")
    return hub, clients


def speaks_v1(checkout: Path) -> bool:
    """Whether the hub in ``checkout`` has Mercure 1.0 (and so a compatibility mode); its
    CLI is hub/server/cli.py since the hub's layers are folders, hub/cli.py before."""
    hub = checkout / "skipfilter" / "hub"
    clis = (hub / "server" / "cli.py", hub / "cli.py")
    return any(cli.is_file() and COMPAT_FLAG in cli.read_text() for cli in clis)


def protocol_flags(checkout: Path, clients: str) -> list[str]:
    """The flags a hub in ``checkout`` needs for ``clients``: a 1.0 hub trusts the 1.0
    publisher token's issuer, and serves 0.x clients only in compatibility mode."""
    if not speaks_v1(checkout):
        if clients != "v0":
            raise ValueError(f"the hub in {checkout} does not speak Mercure 1.0")
        return []
    flags = ["--issuer", ISSUER]
    if clients in ("v0", "v1c"):
        flags += [COMPAT_FLAG, "8"]
    return flags


def hub_command(
    variant: str, port: int, metrics: int, history: str, args: Any, transport: str | None
) -> tuple[list[str], str, dict[str, str]]:
    """(argv, cwd, env) of the hub process for ``variant``."""
    variant, clients = split_variant(variant)
    common = [
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
    ]
    env = {**os.environ, "MERCURE_PUBLISHER_JWT_KEY": KEY}
    if variant == "old":
        checkout = old_checkout(args.old_rev)
        env["PYTHONPATH"] = str(checkout)
        common += protocol_flags(checkout, clients)
        return [sys.executable, "-c", _OLD_LAUNCHER, *common], str(checkout), env
    name, _, workers = variant.partition("/w")  # e.g. new/w2: two workers over Redis
    name, _, local = name.partition("/l")  # e.g. new/l2: two workers on the SQLite file
    name, _, rev = name.partition("@")  # e.g. new@abc123: another revision of this hub
    cwd = str(ROOT)
    if rev:
        cwd = str(old_checkout(rev))
        env["PYTHONPATH"] = cwd
    streams = "native" if name == "new" else "asgi"
    argv = [sys.executable, "-m", "skipfilter.cli", *common]
    argv += ["--metrics-addr", f"127.0.0.1:{metrics}", "--streams", streams]
    argv += protocol_flags(Path(cwd), clients)
    if transport:
        argv += ["--transport", transport, "--workers", workers or "1"]
    elif local:
        argv += ["--workers", local]
    return argv, cwd, env


async def _wait_http(port: int, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            _, writer = await asyncio.open_connection("127.0.0.1", port)
            writer.close()
            return
        except OSError:
            await asyncio.sleep(0.1)
    raise RuntimeError("the hub did not start")


async def _http_get(port: int, path: str) -> str:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(f"GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n".encode())
    data = await reader.read()
    writer.close()
    return data.split(b"\r\n\r\n", 1)[1].decode(errors="replace")


def _match_mean_us(metrics_text: str) -> float:
    total = count = 0.0
    for line in metrics_text.splitlines():
        if line.startswith("skipfilter_hub_match_seconds_sum"):
            total = float(line.split()[1])
        elif line.startswith("skipfilter_hub_match_seconds_count"):
            count = float(line.split()[1])
    return 1e6 * total / count if count else 0.0


def _quantile(histogram: Counter[int], q: float) -> float:
    total = sum(histogram.values())
    if not total:
        return 0.0
    rank, seen = q * total, 0
    for bucket in sorted(histogram):
        seen += histogram[bucket]
        if seen >= rank:
            return (bucket + 0.5) * BUCKET
    return max(histogram) * BUCKET


async def _spawn_client(role: str, argv: list[str]) -> asyncio.subprocess.Process:
    return await asyncio.create_subprocess_exec(
        sys.executable,
        str(CLIENTS),
        role,
        *argv,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        limit=1 << 26,
    )


async def _line(process: asyncio.subprocess.Process, timeout: float) -> dict[str, Any]:
    assert process.stdout is not None
    raw = await asyncio.wait_for(process.stdout.readline(), timeout)
    if not raw:
        raise RuntimeError(f"client process {process.pid} ended early")
    result: dict[str, Any] = json.loads(raw)
    return result


async def run_variant(variant: str, args: argparse.Namespace) -> dict[str, Any]:
    """One hub (behind a proxy for ``~nginx``/``~caddy``), one load; returns the figures."""
    sys.path.insert(0, str(ROOT))
    from rigs.proxies import front, hub_tls, split_proxy

    shown, (variant, proxy_name) = variant, split_proxy(variant)
    port, metrics_port = free_port(), free_port()
    workdir = tempfile.mkdtemp(prefix="hub-load-")
    proxy = None
    redis = RedisProcess(workdir) if args.transport == "redis" or "/w" in variant else None
    transport = redis.url if redis is not None else None
    history = f"{workdir}/history.sqlite3"
    argv, cwd, env = hub_command(variant, port, metrics_port, history, args, transport)
    tls, client_tls = hub_tls(Path(workdir)) if proxy_name == "tls" else ([], [])
    hub = subprocess.Popen([*argv, *tls], cwd=cwd, env=env, stdout=sys.stderr)
    fleets: list[asyncio.subprocess.Process] = []
    try:
        await _wait_http(port)
        target = ["--port", str(port), *client_tls]
        if proxy_name in ("nginx", "caddy"):
            proxy, target = front(proxy_name, Path(workdir), port, args.subscribers + 64)
        await asyncio.sleep(0.5)
        rss_empty = tree_rss(hub.pid)
        updates = int(args.rate * args.seconds)
        shared = [*target, "--scenario", args.scenario]
        shared += ["--subscribers", str(args.subscribers), "--updates", str(updates)]
        shared += ["--seed", str(args.seed), "--connections", str(args.publishers)]
        shared += ["--clients", split_variant(variant)[1].removesuffix("c")]
        count = math.ceil(args.subscribers / args.fleets)
        started = time.perf_counter()
        for k in range(args.fleets):
            first = k * count
            size = min(count, args.subscribers - first)
            source = f"127.0.0.{10 + k}"
            fleets.append(
                await _spawn_client(
                    "subscribers",
                    [*shared, "--first", str(first), "--count", str(size), "--source", source],
                )
            )
        for fleet in fleets:
            await _line(fleet, args.connect_timeout)
        connect_seconds = time.perf_counter() - started
        await asyncio.sleep(1.0)  # let the hub settle before reading its memory
        rss_idle = tree_rss(hub.pid)
        hub_cpu0 = tree_cpu(hub.pid)
        proxy_cpu0 = tree_cpu(proxy.process.pid) if proxy else 0.0
        client_cpu0 = sum(cpu_seconds(f.pid) for f in fleets)
        wall0 = time.perf_counter()
        publish_started = time.time()
        publisher = await _spawn_client(
            "publisher",
            [*shared, "--rate", str(args.rate), "--max-seconds", str(args.seconds * 3)],
        )
        published = await _line(publisher, args.seconds * 3 + 60)
        await publisher.wait()
        completes = 0
        deadline = time.monotonic() + args.drain
        for fleet in fleets:  # each says "complete" once it has everything it expects
            left = deadline - time.monotonic()
            with contextlib.suppress(TimeoutError):
                await _line(fleet, max(0.1, left))
                completes += 1
        drained = time.perf_counter() - wall0
        hub_cpu = tree_cpu(hub.pid) - hub_cpu0
        proxy_cpu = tree_cpu(proxy.process.pid) - proxy_cpu0 if proxy else 0.0
        client_cpu = sum(cpu_seconds(f.pid) for f in fleets) - client_cpu0
        client_cpu += published["cpu_seconds"]
        rss_end = tree_rss(hub.pid)
        metrics_text = ""
        with contextlib.suppress(Exception):
            hub_variant = split_variant(variant)[0]
            metrics_text = await _http_get(
                metrics_port if hub_variant != "old" else port, "/metrics"
            )
        reports = []
        for fleet in fleets:
            assert fleet.stdin is not None
            fleet.stdin.write(json.dumps(published["numbers"]).encode() + b"\n")
            await fleet.stdin.drain()
            while True:
                line = await _line(fleet, 120)
                if "received" in line:
                    reports.append(line)
                    break
    finally:
        for fleet in fleets:
            with contextlib.suppress(ProcessLookupError):
                fleet.kill()
        hub.send_signal(signal.SIGTERM)
        try:
            hub.wait(20)
        except subprocess.TimeoutExpired:
            for pid in process_tree(hub.pid):
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
        if redis is not None:
            redis.stop()
        if proxy is not None:
            proxy.stop()
        shutil.rmtree(workdir, ignore_errors=True)
    histogram: Counter[int] = Counter()
    for report in reports:
        histogram.update({int(k): v for k, v in report["histogram"].items()})
    received = sum(r["received"] for r in reports)
    last = max((r["last_received"] for r in reports), default=publish_started)
    window = max(1e-3, last - publish_started - 0.2)  # the publisher starts 0.2 s in
    return {
        "variant": shown,
        "scenario": args.scenario,
        "connections": sum(r["connections"] for r in reports),
        "connect_seconds": round(connect_seconds, 1),
        "updates": published["published"],
        "target_rate": args.rate,
        "publishes_per_second": round(published["published"] / published["seconds"], 1),
        "publish_failures": published["failures"],
        "ack_p50_ms": round(published["ack_p50"] * 1e3, 2),
        "ack_p99_ms": round(published["ack_p99"] * 1e3, 2),
        "deliveries": received,
        "expected_deliveries": sum(r["expected"] for r in reports),
        "deliveries_per_second": round(received / window),
        "latency_p50_ms": round(_quantile(histogram, 0.50) * 1e3, 1),
        "latency_p99_ms": round(_quantile(histogram, 0.99) * 1e3, 1),
        "latency_max_ms": round((max(histogram) + 1) * BUCKET * 1e3, 1) if histogram else 0,
        "lost": sum(r["lost"] for r in reports),
        "duplicated": sum(r["duplicated"] for r in reports),
        "reordered_subscribers": sum(r["reordered_subscribers"] for r in reports),
        "closed_early": sum(r["closed_early"] for r in reports),
        "connect_retries": sum(r["connect_retries"] for r in reports),
        "connect_failures": dict(
            sum((Counter(r["connect_failures"]) for r in reports), Counter[str]())
        ),
        "fleets_complete": f"{completes}/{len(fleets)}",
        "delivery_window_seconds": round(window, 1),
        "seconds": round(drained, 1),
        "hub_cpu_percent": round(100 * hub_cpu / drained, 1),
        "client_cpu_percent": round(100 * client_cpu / drained, 1),
        "proxy_cpu_percent": round(100 * proxy_cpu / drained, 1),
        "hub_cpu_us_per_delivery": round(1e6 * hub_cpu / max(1, received), 2),
        "hub_rss_mb": round(rss_end / 2**20, 1),
        "hub_rss_per_idle_connection_kb": round(
            (rss_idle - rss_empty) / max(1, args.subscribers) / 1024, 2
        ),
        "match_us_mean": round(_match_mean_us(metrics_text), 1),
    }


def table(results: list[dict[str, Any]]) -> str:
    """The results side by side, as a markdown table."""
    names = [r["variant"] for r in results]
    lines = ["| | " + " | ".join(names) + " |", "|---" * (len(names) + 1) + "|"]
    for key in results[0]:
        if key == "variant":
            continue
        lines.append(f"| {key} | " + " | ".join(str(r[key]) for r in results) + " |")
    return "\n".join(lines)


async def main_async(args: argparse.Namespace) -> list[dict[str, Any]]:
    results = []
    for variant in args.variants.split(","):
        print(f"-- {variant}: {args.scenario}, {args.subscribers} subscribers", file=sys.stderr)
        results.append(await run_variant(variant, args))
        print(json.dumps(results[-1]), file=sys.stderr, flush=True)
    return results


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scenario", choices=("broadcast", "targeted"), default="broadcast")
    parser.add_argument("--subscribers", type=int, default=10_000)
    parser.add_argument("--rate", type=float, default=10.0, help="updates per second")
    parser.add_argument("--seconds", type=float, default=20.0, help="seconds of publishing")
    parser.add_argument(
        "--variants",
        default="new",
        help="comma-separated: new, asgi, old, new@REV, new/w2 (Redis), new/l2 (workers on "
        "the SQLite history), each with +v0 (default), "
        "+v1, +v1p or +v1c for the clients' protocol, and ~nginx or ~caddy for clients "
        "going through that proxy's shipped configuration (deploy/) over TLS, ~tls for the "
        "hub serving TLS itself",
    )
    parser.add_argument("--old-rev", default="da85f09", help="git revision of the old hub")
    parser.add_argument(
        "--transport",
        choices=("sqlite", "redis"),
        default="sqlite",
        help="history of the new hub (a variant new/wN always runs N workers over Redis)",
    )
    parser.add_argument("--fleets", type=int, default=0, help=f"default: one per {PER_FLEET}")
    parser.add_argument("--publishers", type=int, default=1, help="publisher connections")
    parser.add_argument("--ring-size", type=int, default=4096)
    parser.add_argument("--drain", type=float, default=30.0, help="seconds to wait after")
    parser.add_argument("--connect-timeout", type=float, default=300.0)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--json", action="store_true", help="print JSON, not a table")
    args = parser.parse_args()
    args.fleets = args.fleets or math.ceil(args.subscribers / PER_FLEET)
    results = asyncio.run(main_async(args))
    print(json.dumps(results, indent=2) if args.json else table(results))
    return 0 if all(r["lost"] == 0 and r["duplicated"] == 0 for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
