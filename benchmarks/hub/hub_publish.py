"""How fast one hub process acknowledges publishes, against a bare web app (a script).

``wrk`` (one thread, keep-alive connections, a Lua script POSTing one topic and five bytes of
data with a bearer token) drives, in one run: a bare Starlette app on the same uvicorn
(httptools, uvloop) that parses the same form and answers 200 (the floor of the web stack),
then ``skipfilter hub`` on each transport (SQLite, ``--history :memory:``, Redis with a
redis-server of its own on a free port). Each row reports publishes/s, its ratio to the bare
app, wrk's ack latency p50/p99, the hub's CPU (its process tree, from /proc) beside wrk's,
and for runs with subscribers (a fleet process holding N SSE streams of the topic and
counting the events) whether every acknowledged publish reached every subscriber.

Latency at a given load: the ``--latency-load`` rows pace wrk (its Lua ``delay`` gives every
request a slot on one schedule) at 50% and 80% of the bare app's rate just measured, with
32 connections, and report the rate reached with the ack latency p50/p99 at it, the bare
app's own included. Last, the apps are
called in process (ASGI, no sockets, ``inprocess``): CPU per publish that a loaded machine
does not blur.

    .venv/bin/python benchmarks/hub/hub_publish.py              # the whole table (~6 minutes)
    .venv/bin/python benchmarks/hub/hub_publish.py --quick      # 3 s a run
    .venv/bin/python benchmarks/hub/hub_publish.py --only sqlite,memory --seconds 5
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import functools
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(ROOT))  # run by path: the repository root for benchmarks.*
from benchmarks.hub.hub_load import RedisProcess, free_port, process_tree, tree_cpu  # noqa: E402

KEY = "publish-bench-key-0123456789abcdef0123"
ISSUER = "https://publish-bench.invalid"
TOPIC = "https://example.com/books/1"
DATA = "hello"
#: Distinct tokens minted for fresh-token runs (cycled: more than the hub's token cache).
FRESH_TOKENS = 20_000

_LUA = """
-- args: token file, Host, body, publishes/s to pace at (0: as fast as answers come)
local ffi = require("ffi")
ffi.cdef[[
typedef struct { long tv_sec; long tv_nsec; } hub_bench_timespec;
int clock_gettime(int clock, hub_bench_timespec *now);
]]
local clock = ffi.new("hub_bench_timespec")
local function now_ms()
  ffi.C.clock_gettime(1, clock)  -- CLOCK_MONOTONIC
  return tonumber(clock.tv_sec) * 1000 + tonumber(clock.tv_nsec) / 1e6
end
local reqs = {}
local n, i = 0, 0
local interval, slot = 0, nil
init = function(args)
  for line in io.lines(args[1]) do
    n = n + 1
    reqs[n] = wrk.format("POST", "/.well-known/mercure", {
      ["Host"] = args[2],
      ["Authorization"] = "Bearer " .. line,
      ["Content-Type"] = "application/x-www-form-urlencoded",
    }, args[3])
  end
  local rate = tonumber(args[4] or "0")
  if rate > 0 then interval = 1000 / rate end
end
request = function()
  i = i % n + 1
  return reqs[i]
end
-- paced: every request has a slot on one schedule (all connections share this state);
-- a connection waits for the next free slot, so the server sees the rate asked for
delay = function()
  if interval == 0 then return 0 end
  local t = now_ms()
  if slot == nil or slot < t - 100 then slot = t end  -- fell behind: no catch-up burst
  slot = slot + interval
  if slot <= t then return 0 end
  return math.floor(slot - t)
end
done = function(summary, latency, requests)
  io.write(string.format("JSON {\\"requests\\": %d, \\"status\\": %d, \\"connect\\": %d, "
    .. "\\"read\\": %d, \\"write\\": %d, \\"timeout\\": %d}\\n", summary.requests,
    summary.errors.status, summary.errors.connect, summary.errors.read,
    summary.errors.write, summary.errors.timeout))
end
"""

# -- the bare app (this script, run as ``bare``) ---------------------------------------------


def bare_app() -> Any:
    """A Starlette app that reads the publish form and answers 200: the web stack's floor."""
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import PlainTextResponse
    from starlette.routing import Route

    async def publish(request: Request) -> PlainTextResponse:
        form = await request.form()
        if not form.getlist("topic") or request.headers.get("authorization") is None:
            return PlainTextResponse("bad\n", status_code=400)
        return PlainTextResponse("urn:uuid:00000000-0000-0000-0000-000000000000")

    return Starlette(routes=[Route("/.well-known/mercure", publish, methods=["POST"])])


def serve_bare(port: int) -> None:
    import uvicorn

    uvicorn.run(
        bare_app(),
        host="127.0.0.1",
        port=port,
        http="httptools",
        loop="uvloop",
        log_level="warning",
        access_log=False,
    )


# -- subscribers (this script, run as ``subscribers``) --------------------------------------


class _Counter(asyncio.Protocol):
    """One SSE stream counting the events whose data is ``DATA``."""

    MARK = f"data: {DATA}\n".encode()

    def __init__(self, request: bytes, ready: asyncio.Future[None]) -> None:
        self.request = request
        self.ready = ready
        self.events = 0
        self.tail = b""
        self.headers = False

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        transport.write(self.request)  # type: ignore[attr-defined]

    def data_received(self, data: bytes) -> None:
        text = self.tail + data
        if not self.headers and b"\r\n\r\n" in text:
            self.headers = True
            if not self.ready.done():
                self.ready.set_result(None)
        self.events += text.count(self.MARK)
        keep = len(self.MARK) - 1
        self.tail = text[-keep:] if not text.endswith(self.MARK) else b""

    def connection_lost(self, exc: Exception | None) -> None:
        if not self.ready.done():
            self.ready.set_exception(ConnectionError("stream closed before its headers"))


async def run_subscribers(port: int, count: int) -> None:
    """Open ``count`` streams; say ``ready``; on a line on stdin, print the event counts."""
    from urllib.parse import quote

    loop = asyncio.get_running_loop()
    request = (
        f"GET /.well-known/mercure?match={quote(TOPIC, safe='')} HTTP/1.1\r\n"
        f"Host: 127.0.0.1:{port}\r\nAccept: text/event-stream\r\n\r\n"
    ).encode()
    streams = []
    for _ in range(count):
        ready = loop.create_future()
        _, protocol = await loop.create_connection(
            functools.partial(_Counter, request, ready), "127.0.0.1", port
        )
        await asyncio.wait_for(ready, 30)
        streams.append(protocol)
    print("ready", flush=True)
    await loop.run_in_executor(None, sys.stdin.readline)
    await asyncio.sleep(0)
    print(json.dumps([s.events for s in streams]), flush=True)


# -- in process (this script, run as ``inprocess``) ------------------------------------------


def in_memory_hub_app() -> Any:
    """The hub app the in-process measurements call: anonymous, an in-memory history, the
    benchmark's publisher key and issuer, no heartbeats."""
    os.environ["MERCURE_PUBLISHER_JWT_KEY"] = KEY
    from skipfilter.hub.http.app import create_app
    from skipfilter.hub.settings import HubSettings

    settings = HubSettings(
        anonymous=True,
        history_path=":memory:",
        publisher_key=KEY,
        trusted_issuers=(ISSUER,),
        heartbeat=0,
    )
    return create_app(settings)


async def run_in_process(what: str, publishes: int) -> float:
    """CPU seconds per publish of ``what`` (``bare``, ``hub``: the app as routed, ``lean``:
    the publish endpoint the fast path runs) called as ASGI, without sockets, 16 at a time,
    against an in-memory history: the hub's own cost, steady whatever the machine's load."""
    from skipfilter.hub.http.runtime import runtime_of

    app = in_memory_hub_app()
    async with app.router.lifespan_context(app):
        target = app
        if what == "lean":
            target = runtime_of(app).publish_app
        elif what == "bare":
            target = bare_app()
        token = tokens("v1", 1, 1)[0]
        body = f"topic={TOPIC.replace(':', '%3A').replace('/', '%2F')}&data={DATA}".encode()
        headers = [
            (b"host", b"127.0.0.1:1"),
            (b"authorization", f"Bearer {token}".encode()),
            (b"content-type", b"application/x-www-form-urlencoded"),
            (b"content-length", str(len(body)).encode()),
        ]

        async def receive() -> dict[str, Any]:
            return {"type": "http.request", "body": body, "more_body": False}

        async def one() -> None:
            scope = {
                "type": "http",
                "method": "POST",
                "path": "/.well-known/mercure",
                "raw_path": b"/.well-known/mercure",
                "headers": headers,
                "query_string": b"",
                "scheme": "http",
                "server": ("127.0.0.1", 1),
                "client": ("127.0.0.1", 2),
                "http_version": "1.1",
                "root_path": "",
                "app": app,
            }
            status = []

            async def send(message: dict[str, Any]) -> None:
                if message["type"] == "http.response.start":
                    status.append(message["status"])

            await target(scope, receive, send)
            if status != [200]:
                raise RuntimeError(f"{what}: answered {status}")

        for _ in range(500):
            await one()
        started = time.process_time()
        for _ in range(publishes // 16):
            await asyncio.gather(*(one() for _ in range(16)))
        return (time.process_time() - started) / (publishes // 16 * 16)


def in_process_rows(baseline: str, publishes: int = 20_000) -> list[dict[str, Any]]:
    """``run_in_process`` for the bare app, the hub (and the hub at ``baseline``), each in a
    process of its own, twice, alternating."""
    runs = [("bare", ""), ("hub", ""), ("lean", "")]
    if baseline:
        runs.insert(1, ("hub", baseline))
    found: dict[str, list[float]] = {}
    for _ in range(2):
        for what, rev in runs:
            env = dict(os.environ)
            if rev:
                env["PYTHONPATH"] = str(checkout(rev))
            argv = [sys.executable, __file__, "inprocess", "--what", what]
            argv += ["--count", str(publishes)]
            out = subprocess.run(argv, env=env, capture_output=True, text=True, check=True)
            name = f"{what}@{rev}" if rev else what
            found.setdefault(name, []).append(float(out.stdout.split()[-1]))
    return [
        {"name": name, "us_per_publish": [round(1e6 * t, 1) for t in times]}
        for name, times in found.items()
    ]


# -- tokens ----------------------------------------------------------------------------------


def tokens(kind: str, port: int, count: int) -> list[str]:
    """``count`` distinct publisher tokens: ``v1`` access tokens, or ``v0`` 0.x tokens."""
    import jwt

    sys.path.insert(0, str(ROOT))
    from skipfilter.hub.frontends.v1.access_tokens import mint_access_token

    audience = f"http://127.0.0.1:{port}/.well-known/mercure"
    found = []
    for n in range(count):
        if kind == "v1":
            found.append(
                mint_access_token(ISSUER, audience, KEY, publish=[("*", "exact")], ttl=7200)
            )
        else:
            claims = {"mercure": {"publish": ["*"]}, "jti": str(n)}
            found.append(jwt.encode(claims, KEY, algorithm="HS256"))
    return found


def checkout(rev: str) -> Path:
    """The tree of ``rev`` exported to a temporary directory (made once; ``git archive``,
    so the repository's worktrees are left alone)."""
    commit = subprocess.run(
        ["git", "-C", str(ROOT), "rev-parse", "--short", rev], check=True, capture_output=True
    )
    path = Path(tempfile.gettempdir()) / f"skipfilter-publish-{commit.stdout.decode().strip()}"
    if not (path / "skipfilter").is_dir():
        path.mkdir(parents=True, exist_ok=True)
        tree = subprocess.run(
            ["git", "-C", str(ROOT), "archive", rev], check=True, capture_output=True
        )
        subprocess.run(["tar", "-x", "-C", str(path)], input=tree.stdout, check=True)
    return path


# -- one run ---------------------------------------------------------------------------------


@dataclass
class Config:
    """One row: the server, its subscribers, its tokens and wrk's connections."""

    name: str
    server: str  # bare, sqlite, memory, redis
    subscribers: int = 0
    token: str = "v1"  # v1, or v0 against a hub in compatibility mode
    fresh: bool = False
    connections: int = 16
    workers: int = 1
    rev: str = ""  # another revision of the hub (a temporary git worktree), for A/B runs


def _wait_port(port: int, timeout: float = 30.0) -> None:
    import socket

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with socket.socket() as probe:
            if probe.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.1)
    raise RuntimeError(f"nothing listens on port {port}")


def _server(config: Config, port: int, workdir: str) -> tuple[subprocess.Popen[bytes], Any]:
    """Start the server of ``config`` (and its redis-server); return both."""
    env = {**os.environ, "MERCURE_PUBLISHER_JWT_KEY": KEY}
    if config.server == "bare":
        argv = [sys.executable, __file__, "bare", "--port", str(port)]
        return subprocess.Popen(argv, cwd=ROOT, stdout=sys.stderr), None
    redis = RedisProcess(workdir) if config.server == "redis" else None
    history = ":memory:" if config.server == "memory" else f"{workdir}/history.sqlite3"
    cwd = ROOT
    if config.rev:
        cwd = checkout(config.rev)
        env["PYTHONPATH"] = str(cwd)
    argv = [sys.executable, "-m", "skipfilter.cli", "hub", "--addr", f"127.0.0.1:{port}"]
    argv += ["--anonymous", "--history", history, "--heartbeat", "0", "--log-level", "warning"]
    argv += ["--issuer", ISSUER]
    if config.token == "v0":
        argv += ["--protocol-version-compatibility", "8"]
    if redis is not None:
        _wait_port(redis.port)
        argv += ["--transport", redis.url]
    if config.workers > 1:  # without --transport: the workers share the SQLite history
        argv += ["--workers", str(config.workers)]
    return subprocess.Popen(argv, cwd=cwd, env=env, stdout=sys.stderr), redis


def _wrk(
    port: int, script: Path, token_file: Path, seconds: float, connections: int, rate: float = 0
) -> dict[str, Any]:
    """Run wrk (one thread) and return its figures; paced at ``rate`` publishes/s (0: as
    fast as the answers come)."""
    body = f"topic={TOPIC.replace(':', '%3A').replace('/', '%2F')}&data={DATA}"
    argv = ["wrk", "-t1", f"-c{connections}", f"-d{seconds:g}s", "--latency", "-s", str(script)]
    argv += [f"http://127.0.0.1:{port}/.well-known/mercure"]
    argv += ["--", str(token_file), f"127.0.0.1:{port}", body, f"{rate:.0f}"]
    wrk = subprocess.Popen(argv, stdout=subprocess.PIPE, text=True)
    out, _ = wrk.communicate(timeout=seconds + 60)
    return _parse_wrk(out)


def _parse_wrk(out: str) -> dict[str, Any]:
    found: dict[str, Any] = {}
    for line in out.splitlines():
        if line.startswith("JSON "):
            found.update(json.loads(line[5:]))
    rate = re.search(r"Requests/sec:\s+([\d.]+)", out)
    found["rate"] = float(rate[1]) if rate else 0.0
    for pct in ("50", "99"):
        m = re.search(rf"^\s+{pct}%\s+([\d.]+)(us|ms|s)\s*$", out, re.M)
        if m:
            scale = {"us": 1e-3, "ms": 1.0, "s": 1e3}[m[2]]
            found[f"p{pct}_ms"] = round(float(m[1]) * scale, 3)
    non2xx = re.search(r"Non-2xx or 3xx responses:\s+(\d+)", out)
    found["non2xx"] = int(non2xx[1]) if non2xx else 0
    return found


def _children_cpu() -> float:
    """CPU of waited-for children: wrk's, once it has ended (the server and the
    subscribers are still running, so not counted)."""
    import resource

    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


#: A wrk run's connections and pace (publishes/s; 0: closed loop, as fast as answered).
Load = tuple[int, float]


def run(config: Config, seconds: float, workdir: str, loads: list[Load]) -> list[dict[str, Any]]:
    """Start the server, its subscribers, then wrk (once per load)."""
    port = free_port()
    server, redis = _server(config, port, workdir)
    fleet = None
    rows = []
    try:
        _wait_port(port)
        time.sleep(0.5)
        minted = tokens(config.token, port, FRESH_TOKENS if config.fresh else 1)
        token_file = Path(workdir) / f"tokens-{config.name}.txt"
        token_file.write_text("\n".join(minted) + "\n")
        script = Path(workdir) / "publish.lua"
        script.write_text(_LUA)
        if config.subscribers:
            argv = [sys.executable, __file__, "subscribers", "--port", str(port)]
            argv += ["--count", str(config.subscribers)]
            fleet = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
            assert fleet.stdout is not None
            if fleet.stdout.readline().strip() != "ready":
                raise RuntimeError("the subscribers could not connect")
        for count, rate in loads:
            hub0 = tree_cpu(server.pid)
            fleet0 = tree_cpu(fleet.pid) if fleet else 0.0
            wrk0 = _children_cpu()
            started = time.perf_counter()
            found = _wrk(port, script, token_file, seconds, count, rate)
            wall = time.perf_counter() - started
            hub_cpu = tree_cpu(server.pid) - hub0
            wrk_cpu = _children_cpu() - wrk0
            fleet_cpu = tree_cpu(fleet.pid) - fleet0 if fleet else 0.0
            row = {
                "name": f"{config.name} at {rate:.0f}/s" if rate else config.name,
                "server": config.server,
                "connections": count,
                "paced_at": round(rate),
                "publishes_per_s": round(found["rate"]),
                "acked": found["requests"] - found["non2xx"] - found["status"],
                "refused": found["non2xx"],
                "socket_errors": found["connect"] + found["read"] + found["write"],
                "p50_ms": found.get("p50_ms"),
                "p99_ms": found.get("p99_ms"),
                "server_cpu_percent": round(100 * hub_cpu / wall),
                "wrk_cpu_percent": round(100 * wrk_cpu / wall),
                "subscribers_cpu_percent": round(100 * fleet_cpu / wall),
                "server_cpu_us_per_publish": round(1e6 * hub_cpu / max(1, found["requests"]), 1),
            }
            rows.append(row)
        if fleet is not None:
            time.sleep(1.0)  # in-flight publishes wrk stopped waiting for
            assert fleet.stdin is not None and fleet.stdout is not None
            fleet.stdin.write("report\n")
            fleet.stdin.flush()
            counts = json.loads(fleet.stdout.readline())
            acked = sum(r["acked"] for r in rows)
            slack = sum(r["connections"] for r in rows)  # publishes in flight when wrk stopped
            short = sum(1 for c in counts if c < acked)
            rows[-1]["subscribers"] = len(counts)
            rows[-1]["events_min_max"] = f"{min(counts)}..{max(counts)}"
            rows[-1]["lost"] = "none" if not short else f"{short} subscribers short"
            rows[-1]["extra_at_most_in_flight"] = all(c <= acked + slack for c in counts)
            for r in rows:
                r.setdefault("subscribers", config.subscribers)
    finally:
        if fleet is not None:
            fleet.kill()
            fleet.wait()
        for pid in reversed(process_tree(server.pid)):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGTERM)
        try:
            server.wait(20)
        except subprocess.TimeoutExpired:
            for pid in process_tree(server.pid):
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
            server.wait()
        if redis is not None:
            redis.stop()
    return rows


CONFIGS = [
    Config("bare", "bare"),
    Config("sqlite", "sqlite"),
    Config("memory", "memory"),
    Config("redis", "redis"),
    Config("sqlite fresh", "sqlite", fresh=True),
    Config("sqlite v0", "sqlite", token="v0"),
    Config("sqlite v0 fresh", "sqlite", token="v0", fresh=True),
    Config("sqlite 1 sub", "sqlite", subscribers=1),
    Config("sqlite 100 subs", "sqlite", subscribers=100),
    Config("redis 100 subs", "redis", subscribers=100),
    Config("redis fresh", "redis", fresh=True),
    Config("redis w2", "redis", workers=2),
    Config("sqlite w2", "sqlite", workers=2),
    Config("sqlite w2 100 subs", "sqlite", subscribers=100, workers=2),
]
#: Rows run paced at these shares of the bare app's rate, with enough connections that
#: the answers' latency does not hold the pace back.
LATENCY = ["bare", "sqlite", "memory", "redis"]
PACES = (0.5, 0.8)
PACED_CONNECTIONS = 32


def table(rows: list[dict[str, Any]], bare: float) -> str:
    keys = [
        "name",
        "paced_at",
        "publishes_per_s",
        "ratio",
        "p50_ms",
        "p99_ms",
        "server_cpu_percent",
        "wrk_cpu_percent",
        "server_cpu_us_per_publish",
        "refused",
        "socket_errors",
        "subscribers",
        "lost",
        "events_min_max",
    ]
    lines = ["| " + " | ".join(keys) + " |", "|---" * len(keys) + "|"]
    for row in rows:
        row["ratio"] = f"{row['publishes_per_s'] / bare:.2f}" if bare else "-"
        lines.append("| " + " | ".join(str(row.get(k, "")) for k in keys) + " |")
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "role", nargs="?", default="bench", choices=("bench", "bare", "subscribers", "inprocess")
    )
    parser.add_argument("--what", default="lean", choices=("bare", "hub", "lean"))
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--count", type=int, default=0)
    parser.add_argument("--seconds", type=float, default=10.0, help="seconds of each wrk run")
    parser.add_argument("--quick", action="store_true", help="3 s runs")
    parser.add_argument("--only", default="", help="comma-separated row names (bare always runs)")
    parser.add_argument(
        "--latency-load",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="the rows paced at 50%% and 80%% of the bare rate (ack p50/p99 at that rate)",
    )
    parser.add_argument(
        "--in-process",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="also the CPU per publish of the apps called in process (steady under load)",
    )
    parser.add_argument(
        "--baseline",
        default="",
        help="a git revision: each hub row also runs against the hub at it, just before",
    )
    parser.add_argument("--json", default="", help="also write the rows to this file")
    args = parser.parse_args()
    if args.role == "bare":
        serve_bare(args.port)
        return 0
    if args.role == "inprocess":
        import uvloop

        print(uvloop.run(run_in_process(args.what, args.count or 20_000)))
        return 0
    if args.role == "subscribers":
        import uvloop

        uvloop.run(run_subscribers(args.port, args.count))
        return 0
    if shutil.which("wrk") is None:
        print("wrk is not installed: run `make system-deps`", file=sys.stderr)
        return 2
    seconds = 3.0 if args.quick else args.seconds
    only = {n.strip() for n in args.only.split(",") if n.strip()}
    configs = [c for c in CONFIGS if c.name == "bare" or not only or c.name in only]
    if args.baseline:
        configs = [
            variant
            for c in configs
            for variant in (
                [c]
                if c.server == "bare"
                else [replace(c, name=f"{c.name}@{args.baseline}", rev=args.baseline), c]
            )
        ]
    workdir = tempfile.mkdtemp(prefix="hub-publish-")
    rows: list[dict[str, Any]] = []
    try:
        for config in configs:
            print(f"-- {config.name}", file=sys.stderr, flush=True)
            rows += run(config, seconds, workdir, [(config.connections, 0)])
            print(json.dumps(rows[-1]), file=sys.stderr, flush=True)
        bare = rows[0]["publishes_per_s"]
        print(table(rows, bare))
        if args.latency_load:
            load_rows: list[dict[str, Any]] = []
            for name in LATENCY:
                if only and name not in only and name != "bare":
                    continue
                config = next(c for c in CONFIGS if c.name == name)
                paces = [(PACED_CONNECTIONS, share * bare) for share in PACES]
                load_rows += run(config, seconds, workdir, paces)
            print(f"\nack latency paced at {', '.join(f'{p:.0%}' for p in PACES)} of bare:\n")
            print(table(load_rows, bare))
            rows += load_rows
        if args.in_process:
            found = in_process_rows(args.baseline)
            print("\nCPU per publish in process (ASGI calls, no sockets; two runs each):\n")
            print("| app | µs per publish |\n|---|---|")
            for row in found:
                print(f"| {row['name']} | {' / '.join(map(str, row['us_per_publish']))} |")
            rows += found
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
