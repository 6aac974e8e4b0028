"""What a wave of resumes costs a SQLite hub, from its ring and after a restart (a script).

Stores one small update, 100 updates of 64 KB on a topic nobody here follows, then 200 small
ones; then N clients resume at once from the first, following the small topic only. Timed
twice in one run: on the running hub (the ring holds everything) and on the same hub
restarted (an empty ring: every replay reads SQLite). Reports wall time and hub CPU.

    .venv/bin/python -m benchmarks.hub.hub_resume_cost --clients 300
"""

from __future__ import annotations

import argparse
import asyncio
import os
import tempfile
import time
from pathlib import Path

import httpx

from tests.hub.hubtest import HUB, PUBLISHER_KEY, HubProcess, pub_token


def _cpu(pid: int) -> float:
    with open(f"/proc/{pid}/stat") as stat:
        fields = stat.read().split()
    return (int(fields[13]) + int(fields[14])) / os.sysconf("SC_CLK_TCK")


async def _resume(port: int, last: str) -> None:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(f"GET {HUB}?topic=t HTTP/1.1\r\nHost: x\r\nLast-Event-ID: {last}\r\n\r\n".encode())
    seen = b""
    while b"id: s199\n" not in seen:
        chunk = await reader.read(1 << 16)
        if not chunk:
            raise RuntimeError("stream closed early")
        seen = seen[-64:] + chunk
    writer.close()


def _wave(node: HubProcess, clients: int) -> tuple[float, float]:
    cpu, started = _cpu(node.proc.pid), time.monotonic()

    async def run() -> None:
        await asyncio.gather(*(_resume(node.port, "start") for _ in range(clients)))

    asyncio.run(run())
    return time.monotonic() - started, _cpu(node.proc.pid) - cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--clients", type=int, default=300)
    args = parser.parse_args()
    history = str(Path(tempfile.mkdtemp()) / "resume.sqlite3")
    env = {"MERCURE_PUBLISHER_JWT_KEY": PUBLISHER_KEY}
    node = HubProcess("--anonymous", "--history", history, env=env)
    headers = {"Authorization": f"Bearer {pub_token()}"}
    with httpx.Client(base_url=node.url, timeout=30) as client:
        client.post(HUB, data={"topic": "t", "id": "start"}, headers=headers)
        for i in range(100):
            data = {"topic": "bulk", "id": f"b{i}", "data": "x" * 65536}
            client.post(HUB, data=data, headers=headers)
        for i in range(200):
            client.post(HUB, data={"topic": "t", "id": f"s{i}"}, headers=headers)
    ring = _wave(node, args.clients)
    node.kill()
    node = HubProcess("--anonymous", "--history", history, env=env)
    restarted = _wave(node, args.clients)
    node.kill()
    print(f"{args.clients} resumes across 6.5 MB of updates they do not follow:")
    print(f"  from the ring:      {ring[0]:6.2f} s, hub CPU {ring[1]:6.2f} s")
    print(f"  after a restart:    {restarted[0]:6.2f} s, hub CPU {restarted[1]:6.2f} s")


if __name__ == "__main__":
    main()
