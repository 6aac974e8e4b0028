"""Chaos soak of the hub with an end-to-end oracle (a script; a 60-second run is a test).

Runs hub nodes as real processes on loopback (N nodes over one redis-server, and then a
single node on SQLite), publishers on every node, a few hundred subscribers (some read
slowly) that resume with ``Last-Event-ID`` on a random node whenever their stream ends, and
injects faults at random times, each kind in turn from a shuffled bag:

* ``kill``: SIGKILL a node, restart it after 0.5-3 s;
* ``drain``: SIGTERM a node (it drains), restart it after 0.2-2 s; its drain must end
  within ``--shutdown-timeout``;
* ``redis``: stop redis-server (SIGTERM or SIGKILL; append-only, fsync always) for 1-4 s;
* ``stall``: a subscriber stops reading while 5.2 MB are published to its topic, past the
  hubs' dispatch timeout: its hub must reset that socket, and it resumes;
* on the local multi-worker mode (``--local-seconds``: one ``skipfilter hub --workers N`` on
  a SQLite file, no other server), ``kill`` and ``drain`` hit one worker (the supervisor
  restarts it) and ``roll`` (SIGHUP) replaces them all, one at a time (``chaos_local``);
* over a Sentinel set (``--sentinel-seconds``: a primary, two replicas, three sentinels),
  ``failover``: SIGKILL or SIGSTOP the primary, sometimes with its replicas frozen first;
  the old primary comes back as a replica (``chaos_failover``); ``redis`` there restarts a
  replica. The report gives each failover's promotion time and how long no publish was
  acknowledged after the primary was lost.

At the end the store is read and ``chaos_oracle.check`` judges every publish and every
delivery (see there for the rules). The report gives the faults by kind, updates,
deliveries checked, violations (must be 0), how long subscribers waited for their updates
around each kind of fault, and the CPU of the clients, the hubs and Redis.

    .venv/bin/python -m benchmarks.chaos --seed 1 --seconds 600 --sqlite-seconds 300
    .venv/bin/python -m benchmarks.chaos --seconds 0 --sqlite-seconds 0 --sentinel-seconds 600
    .venv/bin/python -m benchmarks.chaos --seconds 0 --sqlite-seconds 0 --local-seconds 600

``--plant drop`` makes the clients forget one delivery they received: the check must then
report it missing and the soak exit 1 (a check that cannot fail proves nothing).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import faulthandler
import json
import os
import random
import resource
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

from benchmarks.chaos.chaos_clients import (
    ACKED,
    LAG_BUCKET,
    Ledger,
    Publisher,
    Subscriber,
    Subscribers,
)
from benchmarks.chaos.chaos_failover import SentinelRedis
from benchmarks.chaos.chaos_local import LocalWorkers
from benchmarks.chaos.chaos_oracle import BULK, Plan, Verdict, check
from rigs.ports import restartable_port

KEY = "chaos-soak-publisher-key-0123456789abcdef"
DISPATCH_TIMEOUT = 2.0
SHUTDOWN_TIMEOUT = 5.0
BULK_UPDATES, BULK_BYTES = 80, 64 * 1024  # 5.2 MB: more than a socket's buffers (4 MB)
SETUP_BUDGET = 240.0  # seconds a run may take beyond its faults and settling


def _token() -> str:
    import jwt

    return jwt.encode({"mercure": {"publish": ["*"]}}, KEY, algorithm="HS256")


class Child:
    """A child process whose CPU time is summed when it is reaped (``wait4``)."""

    cpu: defaultdict[str, float] = defaultdict(float)  # seconds, by group
    #: Every child not reaped yet: killed if the soak ends early, so none outlives it.
    running: set[Child] = set()

    def __init__(self, group: str, argv: list[str], log: Path, env: dict[str, str]) -> None:
        self.group = group
        with log.open("a") as out:
            self.proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, env=env)
        self.code: int | None = None
        Child.running.add(self)

    @classmethod
    def kill_all(cls) -> None:
        for child in list(cls.running):
            child.signal(signal.SIGKILL)
            child.reap(block=True)

    def reap(self, block: bool = False) -> bool:
        """Whether it has exited (reaping it, and counting its CPU, once)."""
        if self.code is not None:
            return True
        pid, status, usage = os.wait4(self.proc.pid, 0 if block else os.WNOHANG)
        if pid == 0:
            return False
        self.code = os.waitstatus_to_exitcode(status)
        self.proc.returncode = self.code
        Child.cpu[self.group] += usage.ru_utime + usage.ru_stime
        Child.running.discard(self)
        return True

    async def wait(self, timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        while not self.reap():
            if time.monotonic() > deadline:
                return False
            await asyncio.sleep(0.02)
        return True

    def signal(self, sig: int) -> None:
        if self.code is None:
            with contextlib.suppress(ProcessLookupError):
                self.proc.send_signal(sig)


@dataclass
class Fault:
    kind: str
    target: str
    start: float
    end: float = 0.0
    effective: bool = False
    detail: str = ""


@dataclass
class Cluster:
    """The hub nodes (fixed ports) and, for the shared transport, redis-server."""

    transport: str
    workdir: Path
    count: int
    ports: list[int] = field(default_factory=list)
    nodes: list[Child | None] = field(default_factory=list)
    redis: Child | None = None
    redis_port: int = 0
    overruns: list[str] = field(default_factory=list)
    sentinel: SentinelRedis | None = None
    replicas: int = 1  # the Sentinel URL's ?replicas= (0: acknowledged by the primary alone)
    workers: int = 0  # the local mode's --workers (one node, its supervisor)
    min_replicas: int = 1  # the Sentinel set's min-replicas-to-write

    def __post_init__(self) -> None:
        self.ports = [restartable_port() for _ in range(self.count)]
        self.nodes = [None] * self.count
        self.redis_port = restartable_port()
        if self.transport == "sentinel":
            self.sentinel = SentinelRedis(self.workdir, self.replicas, self.min_replicas)

    async def start_redis(self) -> None:
        if self.sentinel is not None:
            await self.sentinel.start()
            return
        argv = ["redis-server", "--port", str(self.redis_port), "--bind", "127.0.0.1"]
        argv += ["--dir", str(self.workdir), "--appendonly", "yes", "--appendfsync", "always"]
        argv += ["--save", "", "--protected-mode", "no"]
        self.redis = Child("redis", argv, self.workdir / "redis.log", dict(os.environ))
        import redis.asyncio as aioredis

        client = aioredis.Redis(port=self.redis_port, socket_timeout=5, socket_connect_timeout=5)
        deadline = time.monotonic() + 20
        while True:
            try:
                await client.ping()
                break
            except Exception:
                if time.monotonic() > deadline:
                    raise RuntimeError("redis-server did not start") from None
                await asyncio.sleep(0.05)
        await client.aclose()

    def start_node(self, index: int) -> None:
        argv = [sys.executable, "-m", "skipfilter.cli", "hub", "--anonymous"]
        argv += ["--protocol-version-compatibility", "8"]  # its clients speak Mercure 0.x
        argv += ["--addr", f"127.0.0.1:{self.ports[index]}", "--log-level", "warning"]
        argv += ["--dispatch-timeout", str(DISPATCH_TIMEOUT), "--history-size", "1000000"]
        argv += ["--shutdown-timeout", str(SHUTDOWN_TIMEOUT), "--heartbeat", "0"]
        if self.transport == "redis":
            argv += ["--transport", f"redis://127.0.0.1:{self.redis_port}/0"]
        elif self.sentinel is not None:
            argv += ["--transport", self.sentinel.url]
        else:
            argv += ["--history", str(self.workdir / "history.sqlite3")]
        if self.transport == "local":
            argv += ["--workers", str(self.workers)]
        env = {**os.environ, "MERCURE_PUBLISHER_JWT_KEY": KEY}
        self.nodes[index] = Child("hubs", argv, self.workdir / f"node{index}.log", env)

    def up(self) -> list[int]:
        return [i for i, node in enumerate(self.nodes) if node is not None and not node.reap()]

    async def ready(self, index: int, timeout: float = 60) -> None:
        deadline = time.monotonic() + timeout
        while not await _healthy(self.ports[index]):
            if time.monotonic() > deadline:
                raise RuntimeError(f"node {index} did not come up")
            await asyncio.sleep(0.1)

    async def kill(self, index: int) -> tuple[float, float]:
        """SIGKILL a node; returns when the signal went and when the process was gone."""
        node = self.nodes[index]
        assert node is not None
        at = time.monotonic()
        node.signal(signal.SIGKILL)
        await node.wait(10)
        self.nodes[index] = None
        return at, time.monotonic()

    async def drain(self, index: int) -> float:
        """SIGTERM a node; returns how long it took to exit."""
        node = self.nodes[index]
        assert node is not None
        started = time.monotonic()
        node.signal(signal.SIGTERM)
        if not await node.wait(SHUTDOWN_TIMEOUT + 10):
            node.signal(signal.SIGKILL)
            await node.wait(10)
            self.overruns.append(
                f"node {index} still running {SHUTDOWN_TIMEOUT + 10} s after SIGTERM"
            )
        took = time.monotonic() - started
        if took > SHUTDOWN_TIMEOUT + 1 or node.code not in (0, -signal.SIGTERM):
            self.overruns.append(f"node {index} drained in {took:.1f} s, exit {node.code}")
        self.nodes[index] = None
        return took

    async def stored(self) -> tuple[list[int], int]:
        """The serials in the store, in its order, and how many entries are not ours."""
        ids: list[str] = []
        if self.transport not in ("sqlite", "local"):
            import redis.asyncio as aioredis

            if self.sentinel is not None:
                client = await self.sentinel.client()
            else:
                client = aioredis.Redis(
                    port=self.redis_port, decode_responses=True, socket_timeout=30
                )
            low = "-"
            while True:
                # decode_responses: ids and fields come back as text
                page = cast(
                    list[tuple[str, dict[str, str]]],
                    await client.xrange("skipfilter:updates", low, "+", count=5000),
                )
                if not page:
                    break
                for _sid, fields in page:
                    ids.append(fields.get("i") or json.loads(fields.get("u", '[""]'))[0])
                low = "(" + page[-1][0]
            await client.aclose()
        else:
            with sqlite3.connect(self.workdir / "history.sqlite3") as db:
                query = "SELECT id FROM updates WHERE event = 0 ORDER BY seq"
                ids = [row[0] for row in db.execute(query)]
        serials = [int(i[1:]) for i in ids if i[:1] == "u" and i[1:].isdigit()]
        return serials, len(ids) - len(serials)

    async def stop(self) -> None:
        for node in self.nodes:
            if node is not None:
                node.signal(signal.SIGTERM)
        for node in self.nodes:
            if node is not None and not await node.wait(SHUTDOWN_TIMEOUT + 5):
                node.signal(signal.SIGKILL)
                await node.wait(5)
        if self.redis is not None:
            self.redis.signal(signal.SIGTERM)
            await self.redis.wait(10)
        if self.sentinel is not None:
            await self.sentinel.stop()


async def _healthy(port: int) -> bool:
    try:
        async with asyncio.timeout(5):
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
    except (OSError, TimeoutError):
        return False
    try:
        writer.write(b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        async with asyncio.timeout(5):
            line = await reader.readline()
        return line.startswith(b"HTTP/1.1 200")
    except (OSError, TimeoutError):
        return False
    finally:
        writer.close()


class Soak:
    """One run: a cluster, its clients, the faults, the verdict."""

    def __init__(self, args: argparse.Namespace, transport: str, seconds: float) -> None:
        self.args = args
        self.transport = transport
        self.seconds = seconds
        self.rng = random.Random(f"{args.seed}-{transport}")
        self.plan = Plan(args.seed)
        self.workdir = Path(tempfile.mkdtemp(prefix=f"chaos-{transport}-"))
        nodes = 1 if transport in ("sqlite", "local") else args.nodes
        workers = args.local_workers if transport == "local" else 0
        self.cluster = Cluster(
            transport,
            self.workdir,
            nodes,
            replicas=args.replicas,
            min_replicas=args.min_replicas,
            workers=workers,
        )
        self.local = LocalWorkers(workers, self.rng) if workers else None
        self.ledger = Ledger()
        self.faults: list[Fault] = []
        self.killed: dict[int, list[tuple[float, float]]] = {}
        self.failovers: list[tuple[float, float]] = []  # (primary lost at, promotion s)
        self.stopping = False
        self.token = _token()

    async def run(self) -> dict[str, Any]:
        loop = asyncio.get_running_loop()
        cluster = self.cluster
        started, cpu_before = time.monotonic(), _own_cpu()
        if self.transport in ("redis", "sentinel"):
            await cluster.start_redis()
        for index in range(cluster.count):
            cluster.start_node(index)
        for index in range(cluster.count):
            await cluster.ready(index)
        await self._workers_up()
        genesis = await self._genesis()
        self.subs = Subscribers(loop, self.ledger, lambda: cluster.ports, self.rng)
        if self.args.plant == "drop":
            self.subs.plant_drop(after=200)
        args = self.args
        for index in range(args.subscribers):
            bulk = index < args.bulk
            slow = not bulk and self.rng.random() < args.slow
            selectors = self.plan.selectors(bulk, slow)
            subscriber = Subscriber(index, selectors, slow=slow, bulk=bulk)
            subscriber.last_id = f"u{genesis}".encode()
            self.subs.add(subscriber)
        # the local mode: one port, a publisher per worker (the kernel spreads them)
        nodes = [0] * cluster.workers or list(range(cluster.count))
        publishers = [loop.create_task(self._publish(i)) for i in nodes]
        soak_start = time.monotonic()
        await self._inject(soak_start + self.seconds)
        self.stopping = True
        await asyncio.gather(*publishers)
        for index in range(cluster.count):
            if cluster.nodes[index] is None or cluster.nodes[index].reap():  # type: ignore[union-attr]
                cluster.start_node(index)
        for index in range(cluster.count):
            await cluster.ready(index)
        await self._workers_up()
        stored, foreign = await cluster.stored()
        await self._settle(stored, genesis)
        verdict = check(
            self.ledger, stored, self.subs.subscribers, genesis, self.killed, foreign, soak_start
        )
        for overrun in cluster.overruns + (self.local.overruns if self.local else []):
            verdict.flag("drain past its deadline", 1, overrun)
        self.subs.close()
        await cluster.stop()
        wall = time.monotonic() - started
        report = self._report(verdict, wall, _own_cpu() - cpu_before, time.monotonic() - soak_start)
        report["timeline"] = [
            f"+{f.start - soak_start:.2f}..{(f.end or f.start) - soak_start:.2f} s "
            f"{f.kind} {f.target} {f.detail}".strip()
            for f in self.faults
        ]
        if verdict.violations == 0 and not self.args.keep:
            shutil.rmtree(self.workdir, ignore_errors=True)
        else:
            report["workdir"] = str(self.workdir)
        return report

    async def _workers_up(self) -> None:
        """The local mode: wait until the supervisor runs all its workers."""
        if self.local is not None:
            node = self.cluster.nodes[0]
            assert node is not None
            self.local.supervisor = node.proc.pid
            await self.local.restored()

    async def _genesis(self) -> int:
        """The first update, acknowledged: every subscriber starts right after it."""
        publisher = Publisher(self.ledger, 0, self.cluster.ports[0], self.token)
        for _ in range(100):
            serial, outcome = await publisher.publish((f"{self.plan.topics()[0]}",))
            if outcome == ACKED:
                await publisher.disconnect()
                return serial
            await asyncio.sleep(0.2)
        raise RuntimeError("the genesis update was never acknowledged")

    async def _publish(self, node: int) -> None:
        publisher = Publisher(self.ledger, node, self.cluster.ports[node], self.token)
        pause = 1 / self.args.rate
        while not self.stopping:
            _, outcome = await publisher.publish(self.plan.topics())
            await asyncio.sleep(pause * self.rng.uniform(0.5, 1.5) if outcome == ACKED else 0.2)
        await publisher.disconnect()

    async def _inject(self, until: float) -> None:
        kinds = ["kill", "drain", "stall"]
        kinds += ["redis"] if self.transport in ("redis", "sentinel") else []
        kinds += ["failover"] if self.transport == "sentinel" else []
        kinds += ["roll"] if self.transport == "local" else []
        kinds = [k for k in kinds if k in self.args.kinds.split(",")]
        bag: list[str] = []
        running: set[asyncio.Task[None]] = set()
        while time.monotonic() < until:
            await asyncio.sleep(self.args.fault_every * self.rng.uniform(0.5, 1.5))
            if time.monotonic() >= until:
                break
            if not bag:
                bag = self.rng.sample(kinds, len(kinds))
            kind = bag.pop()
            if not self._possible(kind):  # its target is busy with another fault: later
                bag.insert(0, kind)
                continue
            task = asyncio.get_running_loop().create_task(getattr(self, f"_{kind}")())
            running.add(task)
            task.add_done_callback(running.discard)
        await asyncio.gather(*running)

    def _possible(self, kind: str) -> bool:
        """Whether a fault of ``kind`` has a target right now."""
        if self.local is not None and kind in ("kill", "drain"):
            return self.local.pick() is not None
        if kind == "roll":
            return self.local is not None and not self.local.rolling and not self.local.busy
        if kind in ("kill", "drain"):
            return self._pick_node() is not None
        running = any(f.kind == kind and not f.end for f in self.faults)
        if kind in ("redis", "failover"):  # one Redis server down at a time
            return not any(f.kind in ("redis", "failover") and not f.end for f in self.faults)
        bulk = any(s.bulk and s.connection is not None for s in self.subs.subscribers)
        return not running and bulk and bool(self.cluster.up())

    def _pick_node(self) -> int | None:
        busy = {int(f.target) for f in self.faults if f.kind in ("kill", "drain") and not f.end}
        up = [i for i in self.cluster.up() if i not in busy]
        return self.rng.choice(up) if up else None

    async def _kill(self) -> None:
        if self.local is not None:
            await self._worker_fault("kill")
        else:
            await self._node_fault("kill", (0.5, 3))

    async def _drain(self) -> None:
        if self.local is not None:
            await self._worker_fault("drain")
        else:
            await self._node_fault("drain", (0.2, 2))

    async def _worker_fault(self, kind: str) -> None:
        """SIGKILL or drain (SIGTERM) one local worker; its supervisor restarts it."""
        local = self.local
        assert local is not None
        pid = local.pick()
        if pid is None:
            return
        local.busy.add(pid)
        fault = Fault(kind, f"pid {pid}", time.monotonic())
        self.faults.append(fault)
        if kind == "kill":  # every publisher is on node 0: any worker's death explains
            self.killed.setdefault(0, []).append(await local.kill(pid))
        else:
            fault.detail = f"{await local.drain(pid, SHUTDOWN_TIMEOUT):.2f}"
        fault.effective = True
        await local.restored()
        local.busy.discard(pid)
        fault.end = time.monotonic()

    async def _roll(self) -> None:
        """SIGHUP the local supervisor: every worker replaced, one at a time."""
        local = self.local
        assert local is not None
        if local.rolling or local.busy:
            return
        local.rolling = True
        fault = Fault("roll", "all workers", time.monotonic())
        self.faults.append(fault)
        fault.detail = f"{await local.roll():.2f}"
        fault.effective = True
        local.rolling = False
        fault.end = time.monotonic()

    async def _node_fault(self, kind: str, down: tuple[float, float]) -> None:
        """SIGKILL or drain (SIGTERM) a node, and restart it after ``down`` seconds."""
        index = self._pick_node()
        if index is None:
            return
        fault = Fault(kind, str(index), time.monotonic())
        self.faults.append(fault)
        if kind == "kill":
            self.killed.setdefault(index, []).append(await self.cluster.kill(index))
        else:
            fault.detail = f"{await self.cluster.drain(index):.2f}"
        fault.effective = True
        await asyncio.sleep(self.rng.uniform(*down))
        self.cluster.start_node(index)
        fault.end = time.monotonic()

    async def _failover(self) -> None:
        assert self.cluster.sentinel is not None
        fault = Fault("failover", "primary", time.monotonic())
        self.faults.append(fault)
        lost_at, promoted, fault.detail = await self.cluster.sentinel.failover(self.rng)
        self.failovers.append((lost_at, promoted))
        fault.effective = True
        fault.end = time.monotonic()

    async def _redis(self) -> None:
        cluster = self.cluster
        if cluster.sentinel is not None:
            fault = Fault("redis", "replica", time.monotonic())
            self.faults.append(fault)
            fault.detail = await cluster.sentinel.restart_replica(self.rng)
            fault.effective = True
            fault.end = time.monotonic()
            return
        if cluster.redis is None or any(f.kind == "redis" and not f.end for f in self.faults):
            return
        how = self.rng.choice(["SIGTERM", "SIGKILL"])
        fault = Fault("redis", how, time.monotonic())
        self.faults.append(fault)
        cluster.redis.signal(getattr(signal, how))
        await cluster.redis.wait(20)
        fault.effective = True
        await asyncio.sleep(self.rng.uniform(1, 4))
        await cluster.start_redis()
        fault.end = time.monotonic()

    async def _stall(self) -> None:
        if any(f.kind == "stall" and not f.end for f in self.faults):
            return
        candidates = [s for s in self.subs.subscribers if s.bulk and s.connection is not None]
        up = self.cluster.up()
        if not candidates or not up:
            return
        subscriber = self.rng.choice(candidates)
        connection = self.subs.stall(subscriber)
        if connection is None:
            return
        fault = Fault("stall", str(subscriber.index), time.monotonic())
        self.faults.append(fault)
        node = self.rng.choice(up)
        pump = Publisher(self.ledger, node, self.cluster.ports[node], self.token)
        data = "x" * BULK_BYTES
        pump_outcomes: Counter[str] = Counter()
        # a failover under way acknowledges nothing for up to ~14 s (see docs/hub.md): the
        # pump outlasts one, so the stall overflows the reader whatever it overlaps
        deadline = time.monotonic() + 30
        while pump_outcomes[ACKED] < BULK_UPDATES and time.monotonic() < deadline:
            outcome = (await pump.publish((BULK,), data))[1]
            pump_outcomes[outcome] += 1
            if outcome != ACKED:
                await asyncio.sleep(0.2)
        await pump.disconnect()
        await asyncio.sleep(DISPATCH_TIMEOUT + 1.5)
        self.subs.unstall(subscriber, connection)
        await asyncio.sleep(0.5)
        fault.effective = connection.reset
        fault.detail = f"node {node}, {pump_outcomes}"
        fault.end = time.monotonic()

    async def _settle(self, stored: list[int], genesis: int) -> None:
        """Wait (bounded) until every subscriber has received what it is owed."""
        from benchmarks.chaos.chaos_oracle import matches

        after = stored[stored.index(genesis) + 1 :] if genesis in stored else []
        topics = self.ledger.topics
        owed = [
            sum(1 for s in after if any(matches(x, t) for x in sub.selectors for t in topics[s]))
            for sub in self.subs.subscribers
        ]
        deadline = time.monotonic() + self.args.settle
        while time.monotonic() < deadline:
            behind = [
                s for s, n in zip(self.subs.subscribers, owed, strict=True) if len(s.received) < n
            ]
            if not behind:
                break
            await asyncio.sleep(0.2)
        await asyncio.sleep(1)  # anything more (a duplicate) would arrive now

    def _report(
        self, verdict: Verdict, wall: float, client_cpu: float, soak: float
    ) -> dict[str, Any]:
        faults: dict[str, dict[str, Any]] = {}
        worst = self.subs.worst
        for fault in self.faults:
            entry = faults.setdefault(
                fault.kind, {"injected": 0, "effective": 0, "recovery_s": 0.0}
            )
            entry["injected"] += 1
            entry["effective"] += int(fault.effective)
            window = range(int(fault.start) - 1, int(fault.end or fault.start) + 2)
            recovery = max((worst.get(second, 0.0) for second in window), default=0.0)
            entry["recovery_s"] = round(max(entry["recovery_s"], recovery), 3)
            if fault.kind in ("drain", "roll"):
                entry[f"longest_{fault.kind}_s"] = max(
                    entry.get(f"longest_{fault.kind}_s", 0.0), float(fault.detail)
                )
        if self.failovers:
            faults["failover"].update(self._failover_costs())
        lags = self.subs.lag
        total = sum(lags.values())

        def quantile(q: float) -> float:
            seen = 0
            for bucket in sorted(lags):
                seen += lags[bucket]
                if seen >= q * total:
                    return round((bucket + 1) * LAG_BUCKET, 3)
            return 0.0

        subs = self.subs.subscribers
        return {
            "transport": self.transport,
            "seed": self.args.seed,
            "seconds": round(soak, 1),
            "nodes": self.cluster.count,
            "workers": self.cluster.workers,
            "planted": self.subs.dropped,
            "subscribers": len(subs),
            "slow": sum(s.slow for s in subs),
            "faults": faults,
            "publishes": verdict.publishes,
            "maybe_stored": verdict.maybe_stored,
            "unanswered_explained": verdict.unanswered_explained,
            "updates_stored": verdict.updates_stored,
            "deliveries_checked": verdict.deliveries_checked,
            "deliveries_received": verdict.deliveries_received,
            "reconnections": sum(max(0, s.connections - 1) for s in subs),
            "violations": verdict.violations,
            "problems": verdict.problems,
            "examples": verdict.examples,
            "lag_s": {"p50": quantile(0.5), "p99": quantile(0.99), "max": quantile(1.0)},
            "slow_max_lag_s": round(self.subs.slow_lag, 3),
            "bulk_max_lag_s": round(self.subs.bulk_lag, 3),
            "cpu_percent": {
                "clients": round(100 * client_cpu / wall, 1),
                "hubs": round(100 * Child.cpu["hubs"] / wall, 1),
                "redis": round(100 * Child.cpu["redis"] / wall, 1),
            },
            "wall_s": round(wall, 1),
            "stuck_publisher_closes": Publisher.stuck_closes,
        }

    def _failover_costs(self) -> dict[str, Any]:
        """Per failover: seconds to the promotion, and seconds from losing the primary to
        the first acknowledgement of a publish sent after that (any node)."""
        ledger = self.ledger
        acked = [
            (ledger.sent[i], ledger.answered[i])
            for i in range(len(ledger))
            if ledger.outcome[i] == ACKED
        ]
        gaps = []
        for lost_at, _ in self.failovers:
            after = min((answered for sent, answered in acked if sent > lost_at), default=0.0)
            gaps.append(round(after - lost_at, 2) if after else -1.0)
        return {
            "promotion_s": [round(p, 2) for _, p in self.failovers],
            "unacknowledged_s": gaps,
            "max_unacknowledged_s": max(gaps),
        }


def _own_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _print(report: dict[str, Any]) -> None:
    workers = f" ({report['workers']} workers)" if report["workers"] else ""
    print(
        f"\n== chaos soak: {report['transport']}{workers}, seed {report['seed']}, "
        f"{report['seconds']} s"
    )
    for kind, entry in sorted(report["faults"].items()):
        print(f"  fault {kind:6} {entry}")
    for key in (
        "planted",
        "publishes",
        "maybe_stored",
        "unanswered_explained",
        "updates_stored",
        "deliveries_checked",
        "deliveries_received",
        "reconnections",
        "lag_s",
        "slow_max_lag_s",
        "bulk_max_lag_s",
        "cpu_percent",
        "stuck_publisher_closes",
        "violations",
        "problems",
        "examples",
    ):
        print(f"  {key:22} {report[key]}")
    if report["violations"]:
        for line in report["timeline"]:
            print(f"  {line}")
        print(f"  logs and stores in {report.get('workdir')}")


async def main_async(args: argparse.Namespace) -> list[dict[str, Any]]:
    runs = []
    if args.seconds > 0:
        runs.append(("redis", args.seconds))
    if args.sqlite_seconds > 0:
        runs.append(("sqlite", args.sqlite_seconds))
    if args.sentinel_seconds > 0:
        runs.append(("sentinel", args.sentinel_seconds))
    if args.local_seconds > 0:
        runs.append(("local", args.local_seconds))
    reports = []
    for transport, seconds in runs:
        Child.cpu.clear()
        soak = Soak(args, transport, seconds)
        report = await _bounded(soak, seconds + args.settle + SETUP_BUDGET)
        _print(report)
        reports.append(report)
    return reports


async def _bounded(soak: Soak, budget: float) -> dict[str, Any]:
    """Run a soak; past ``budget`` seconds, say where each task waits, and fail.

    A soak that hangs is a finding (a hub that never answers, a wait with no bound): its
    stacks and the nodes' logs are what shows which."""
    task = asyncio.get_running_loop().create_task(soak.run())
    done, _ = await asyncio.wait({task}, timeout=budget)
    if task in done:
        return task.result()
    print(f"\n== chaos soak: {soak.transport} still running after {budget:.0f} s", file=sys.stderr)
    for other in asyncio.all_tasks():
        if other is not asyncio.current_task():
            other.print_stack(limit=12, file=sys.stderr)
    for log in sorted(soak.workdir.glob("*.log")):
        tail = log.read_text(errors="replace").splitlines()[-20:]
        print(f"-- {log.name} (last {len(tail)} lines)", *tail, sep="\n", file=sys.stderr)
    task.cancel()
    await asyncio.wait({task}, timeout=30)  # a task that swallows the cancel is left behind
    raise SystemExit(f"chaos soak over {soak.transport} hung (logs in {soak.workdir})")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--seconds", type=float, default=60, help="faults over Redis (0: skip)")
    parser.add_argument(
        "--sqlite-seconds", type=float, default=30, help="faults on SQLite (0: skip)"
    )
    parser.add_argument(
        "--sentinel-seconds", type=float, default=0, help="faults over a Sentinel set (0: skip)"
    )
    parser.add_argument(
        "--local-seconds",
        type=float,
        default=0,
        help="faults on one hub with --workers on SQLite, no other server (0: skip)",
    )
    parser.add_argument("--local-workers", type=int, default=2, help="the local run's --workers")
    parser.add_argument(
        "--plant",
        choices=["drop"],
        help="drop: the clients forget one delivery (the soak must then fail)",
    )
    parser.add_argument(
        "--replicas", type=int, default=1, help="Sentinel runs: replicas holding what is acked"
    )
    parser.add_argument(
        "--min-replicas", type=int, default=1, help="Sentinel runs: min-replicas-to-write"
    )
    parser.add_argument("--nodes", type=int, default=3)
    parser.add_argument("--subscribers", type=int, default=300)
    parser.add_argument("--bulk", type=int, default=4, help="subscribers a stall may target")
    parser.add_argument("--slow", type=float, default=0.1, help="fraction that read slowly")
    parser.add_argument("--rate", type=float, default=10, help="publishes/s per publisher")
    parser.add_argument("--fault-every", type=float, default=4, help="mean seconds between faults")
    parser.add_argument(
        "--settle", type=float, default=90, help="seconds to wait for the last deliveries"
    )
    parser.add_argument(
        "--kinds", default="kill,drain,redis,stall,failover,roll", help="faults to inject"
    )
    parser.add_argument("--json", type=Path, help="write the reports here")
    parser.add_argument("--keep", action="store_true", help="keep the logs and stores")
    args = parser.parse_args(argv)
    with contextlib.suppress(ImportError):
        import uvloop

        asyncio.set_event_loop_policy(uvloop.EventLoopPolicy())
    faulthandler.enable()  # a crash of the soak itself (SIGSEGV, SIGABRT) prints its stacks
    try:
        reports = asyncio.run(main_async(args))
    finally:
        Child.kill_all()
        SentinelRedis.stop_all()
    if args.json:
        args.json.write_text(json.dumps(reports, indent=2))
    return 0 if all(r["violations"] == 0 for r in reports) else 1


if __name__ == "__main__":
    sys.exit(main())
