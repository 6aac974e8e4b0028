"""The chaos soak over a Redis Sentinel set: the ``failover`` fault, and Redis restarts.

``failover``: the primary is SIGKILLed or SIGSTOPped, a third of the time after both
replicas were frozen with ``DEBUG SLEEP``, a third after they were paused (SIGSTOP) and
cut off (the primary closes their connections: a partition), so the primary alone holds
the newest appends (in the replicas' socket buffers when frozen; nowhere else when cut); once
the sentinels have promoted a replica, the old primary comes back (restarted, or SIGCONT)
and Sentinel makes it a replica of the new one. ``redis``: a replica is stopped (SIGTERM
or SIGKILL) for 1-4 s and restarted. The set's processes live in ``SentinelSet``; the
blocking calls run in threads so the soak's clients keep going.
"""

from __future__ import annotations

import asyncio
import random
import signal
import time
from pathlib import Path

import redis.asyncio as aioredis

from rigs.sentinel_set import SentinelSet

#: Seconds the replicas sleep when they are frozen before a failover.
FREEZE = 2
#: How long a node waits for replicas before answering 503 (the soak's ``replica_timeout``).
REPLICA_TIMEOUT_MS = 500


class SentinelRedis:
    """A Sentinel set for the soak: its URL, its faults, and where the truth is read."""

    #: Sets not stopped yet: stopped if the soak ends early, so none outlives it.
    live: list[SentinelSet] = []

    def __init__(self, workdir: Path, replicas: int = 1, min_replicas: int = 1) -> None:
        self.servers = SentinelSet(workdir, min_replicas=min_replicas)
        self.url = self.servers.url(replicas=replicas, replica_timeout=REPLICA_TIMEOUT_MS)
        SentinelRedis.live.append(self.servers)

    @classmethod
    def stop_all(cls) -> None:
        for servers in cls.live:
            servers.stop()
        cls.live.clear()

    async def start(self) -> None:
        await asyncio.to_thread(self.servers.start)

    async def stop(self) -> None:
        await asyncio.to_thread(self.servers.stop)

    async def client(self) -> aioredis.Redis:
        """A client of the current primary (for reading the store at the end)."""
        port = await asyncio.to_thread(self.servers.primary)
        return aioredis.Redis(port=port, decode_responses=True, socket_timeout=30)

    async def failover(self, rng: random.Random) -> tuple[float, float, str]:
        """Take the primary away and bring it back as a replica. Returns when it was
        taken away, how long the promotion took, and what was done."""
        servers = self.servers
        old = await asyncio.to_thread(servers.primary)
        how = rng.choice(["SIGKILL", "SIGSTOP"])
        replicas = servers.replicas()
        first = rng.choice(["", " (replicas frozen)", " (replicas cut off)"])
        if first == " (replicas frozen)":
            for replica in replicas:
                await asyncio.to_thread(servers.freeze, replica, FREEZE)
        elif first:
            for replica in replicas:
                servers.pause(replica)
            await asyncio.to_thread(servers.cut, old)
        if first:
            await asyncio.sleep(rng.uniform(0.3, 1.0))  # appends reach the primary alone
        lost_at = time.monotonic()
        if how == "SIGKILL":
            await asyncio.to_thread(servers.kill, old)
        else:
            servers.pause(old)
        if first == " (replicas cut off)":
            await asyncio.sleep(0.5)
            for replica in replicas:
                servers.resume(replica)
        new = await asyncio.to_thread(servers.wait_for_failover, old, 60)
        promoted = time.monotonic() - lost_at
        await asyncio.sleep(rng.uniform(0.2, 2))
        if how == "SIGKILL":
            await asyncio.to_thread(servers.start_server, old, new)
        else:
            servers.resume(old)
        await asyncio.to_thread(servers.wait_replica, old, 60)
        detail = f"{how}{first} {old} -> {new}"
        return lost_at, promoted, detail

    async def restart_replica(self, rng: random.Random) -> str:
        """Stop a replica for 1-4 s (SIGTERM or SIGKILL), restart it; what was done."""
        servers = self.servers
        primary = await asyncio.to_thread(servers.primary)
        port = rng.choice([p for p in servers.servers if p != primary])
        how = rng.choice(["SIGTERM", "SIGKILL"])
        process = servers.processes[port]
        process.send_signal(getattr(signal, how))
        await asyncio.to_thread(process.wait, 20)
        await asyncio.sleep(rng.uniform(1, 4))
        await asyncio.to_thread(servers.start_server, port, primary)
        await asyncio.to_thread(servers.wait_replica, port, 60)
        return f"{how} replica {port}"
