"""A Redis Sentinel set of real Debian processes on loopback: a primary, replicas, sentinels.

Used by the Sentinel tests (tests/hub/redis_sentinel.py) and the chaos soak's ``failover``
fault. Sentinel timeouts are short (down after 1 s) so a failover takes about 2-3 s. Each
server keeps an append-only file (fsync every second) in a directory of its own, refuses
writes while fewer than one replica is within 2 s of it (``min-replicas-to-write``: an
old primary cut off from its replicas stops taking writes), and allows ``DEBUG SLEEP`` (the
tests freeze replicas with it). ``min_replicas=0`` lets a primary cut off from its
replicas take writes (to show what the hub's own rules protect against).
"""

from __future__ import annotations

import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path

import redis

from rigs.ports import restartable_port

SERVICE = "hub"
DOWN_AFTER_MS, FAILOVER_TIMEOUT_MS = 1000, 2000


class SentinelSet:
    """``1 + replicas`` redis-server processes and ``sentinels`` redis-sentinel processes."""

    def __init__(
        self, directory: Path, replicas: int = 2, sentinels: int = 3, min_replicas: int = 1
    ) -> None:
        self.directory = directory / "sentinel-set"
        self.directory.mkdir(parents=True, exist_ok=True)
        ports = _distinct_ports(1 + replicas + sentinels)
        self.servers, self.sentinels = ports[: 1 + replicas], ports[1 + replicas :]
        self.processes: dict[int, subprocess.Popen[bytes]] = {}
        self.min_replicas = min_replicas  # min-replicas-to-write (0: a lone primary writes)

    def url(self, **query: object) -> str:
        """The hub's ``--transport`` for this set (``query``: replicas, replica_timeout...)."""
        hosts = ",".join(f"127.0.0.1:{port}" for port in self.sentinels)
        tail = "&".join(f"{key}={value}" for key, value in query.items())
        return f"redis+sentinel://{hosts}/{SERVICE}/0" + (f"?{tail}" if tail else "")

    # -- processes ----------------------------------------------------------------------

    def start(self) -> SentinelSet:
        for name in ("redis-server", "redis-sentinel"):
            if shutil.which(name) is None:
                raise RuntimeError(f"{name} is not installed (make system-deps installs it)")
        primary = self.servers[0]
        for port in self.servers:
            self.start_server(port, None if port == primary else primary)
        deadline = time.monotonic() + 20
        while _client(primary).info("replication").get("connected_slaves", 0) < len(
            self.servers
        ) - 1 or any(
            _client(p).info("replication")["master_link_status"] != "up" for p in self.servers[1:]
        ):
            if time.monotonic() > deadline:
                raise RuntimeError("the replicas did not connect to the primary")
            time.sleep(0.05)
        for port in self.sentinels:
            self.start_sentinel(port, primary)
        deadline = time.monotonic() + 60  # hellos every 2 s, replica INFO every 10 s
        while not self._settled(primary):
            if time.monotonic() > deadline:
                raise RuntimeError(
                    "the sentinels did not find each other and the replicas within 60 s: "
                    + self._views()
                )
            time.sleep(0.1)
        return self

    def start_server(self, port: int, replicaof: int | None = None) -> None:
        """Start (or restart, with its data) the server on ``port``."""
        directory = self.directory / str(port)
        directory.mkdir(exist_ok=True)
        argv = ["redis-server", "--port", str(port), "--bind", "127.0.0.1"]
        argv += ["--dir", str(directory), "--appendonly", "yes", "--appendfsync", "everysec"]
        argv += ["--save", "", "--protected-mode", "no", "--enable-debug-command", "yes"]
        argv += ["--min-replicas-to-write", str(self.min_replicas), "--min-replicas-max-lag", "2"]
        argv += ["--repl-ping-replica-period", "1"]
        if replicaof is not None:
            argv += ["--replicaof", "127.0.0.1", str(replicaof)]
        self._spawn(port, argv, directory / "redis.log")
        _wait_ping(port, self.processes[port])

    def start_sentinel(self, port: int, primary: int) -> None:
        directory = self.directory / f"sentinel-{port}"
        directory.mkdir(exist_ok=True)
        config = directory / "sentinel.conf"
        config.write_text(
            f"port {port}\nbind 127.0.0.1\nprotected-mode no\ndir {directory}\n"
            f"sentinel monitor {SERVICE} 127.0.0.1 {primary} 2\n"
            f"sentinel down-after-milliseconds {SERVICE} {DOWN_AFTER_MS}\n"
            f"sentinel failover-timeout {SERVICE} {FAILOVER_TIMEOUT_MS}\n"
            f"sentinel parallel-syncs {SERVICE} 2\n"
        )
        self._spawn(port, ["redis-sentinel", str(config)], directory / "sentinel.log")
        _wait_ping(port, self.processes[port])

    def _spawn(self, port: int, argv: list[str], log: Path) -> None:
        with log.open("ab") as out:
            self.processes[port] = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT)

    def _settled(self, primary: int) -> bool:
        """Whether every sentinel names ``primary``, knows every other sentinel and sees
        every server that is up as a healthy replica."""
        up = [p for p in self.servers if p != primary and self.alive(p)]
        for port in self.sentinels:
            try:
                with _client(port) as client:
                    master = client.sentinel_master(SERVICE)
                    replicas = client.sentinel_slaves(SERVICE)
            except redis.RedisError:
                return False
            if int(master["port"]) != primary or master["is_sdown"] or master["is_odown"]:
                return False
            if master["num-other-sentinels"] < len(self.sentinels) - 1:
                return False
            healthy = {int(r["port"]) for r in replicas if not r["is_sdown"]}
            if not set(up) <= healthy:
                return False
        return True

    def _views(self) -> str:
        """What each sentinel sees (for a set-up that does not settle)."""
        views = []
        for port in self.sentinels:
            try:
                with _client(port) as client:
                    master = client.sentinel_master(SERVICE)
                    replicas = client.sentinel_slaves(SERVICE)
                seen = sorted((int(r["port"]), bool(r["is_sdown"])) for r in replicas)
                views.append(
                    f"{port}: primary {master['port']} sdown={master['is_sdown']} "
                    f"others={master['num-other-sentinels']} replicas={seen}"
                )
            except redis.RedisError as exc:
                views.append(f"{port}: {exc}")
        alive = [p for p in self.servers if self.alive(p)]
        return f"servers {self.servers} (alive {alive}); " + "; ".join(views)

    def alive(self, port: int) -> bool:
        process = self.processes.get(port)
        return process is not None and process.poll() is None

    # -- faults -------------------------------------------------------------------------

    def primary(self) -> int:
        """The port the sentinels name as primary (the first that answers)."""
        for port in self.sentinels:
            try:
                with _client(port) as client:
                    return int(client.sentinel_get_master_addr_by_name(SERVICE)[1])
            except (redis.RedisError, TypeError):
                continue
        raise RuntimeError("no sentinel answers")

    def replicas(self) -> list[int]:
        primary = self.primary()
        return [port for port in self.servers if port != primary]

    def kill(self, port: int) -> None:
        process = self.processes[port]
        process.send_signal(signal.SIGKILL)
        process.wait(10)

    def pause(self, port: int) -> None:
        self.processes[port].send_signal(signal.SIGSTOP)

    def resume(self, port: int) -> None:
        self.processes[port].send_signal(signal.SIGCONT)

    def freeze(self, port: int, seconds: float) -> None:
        """``DEBUG SLEEP`` on ``port``, not waiting for it to end."""
        with socket.create_connection(("127.0.0.1", port), timeout=2) as sock:
            sock.sendall(f"DEBUG SLEEP {seconds}\r\n".encode())
            time.sleep(0.05)  # let it arrive before the connection closes

    def cut(self, port: int) -> None:
        """Close the primary's connections to its replicas (with the replicas paused, they
        stay cut: what the primary takes from then on, it alone holds)."""
        with _client(port) as client:
            client.execute_command("CLIENT", "KILL", "TYPE", "replica")

    def wait_for_failover(self, old: int, timeout: float = 30) -> int:
        """The new primary once every sentinel names one other than ``old`` and it answers
        as primary; the seconds it took go to ``self.failover_s``."""
        started = time.monotonic()
        deadline = started + timeout
        while True:
            named = set()
            for port in self.sentinels:
                try:
                    with _client(port) as client:
                        named.add(int(client.sentinel_get_master_addr_by_name(SERVICE)[1]))
                except (redis.RedisError, TypeError):
                    named.add(-1)
            if len(named) == 1 and old not in named and -1 not in named:
                new = named.pop()
                try:
                    with _client(new) as client:
                        if client.role()[0] == b"master":
                            return new
                except redis.RedisError:
                    pass
            if time.monotonic() > deadline:
                raise RuntimeError(f"no failover from {old} within {timeout} s: {named}")
            time.sleep(0.05)

    def wait_replica(self, port: int, timeout: float = 30) -> None:
        """Wait until ``port`` is a replica of the current primary, in sync."""
        deadline = time.monotonic() + timeout
        while True:
            try:
                with _client(port) as client:
                    info = client.info("replication")
                if info.get("role") == "slave" and info.get("master_link_status") == "up":
                    return
            except redis.RedisError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError(f"{port} did not become a replica within {timeout} s")
            time.sleep(0.1)

    def stop(self) -> None:
        for process in self.processes.values():
            if process.poll() is None:
                process.send_signal(signal.SIGCONT)
                process.kill()
        for process in self.processes.values():
            process.wait(10)

    def __enter__(self) -> SentinelSet:
        try:
            return self.start()
        except BaseException:
            self.stop()
            raise

    def __exit__(self, *exc: object) -> None:
        self.stop()


def _distinct_ports(count: int) -> list[int]:
    """``count`` restartable ports, no two alike (each draw is checked alone)."""
    ports: list[int] = []
    while len(ports) < count:
        port = restartable_port()
        if port not in ports:
            ports.append(port)
    return ports


def _client(port: int) -> redis.Redis:
    return redis.Redis(port=port, socket_timeout=2, socket_connect_timeout=2)


def _wait_ping(port: int, process: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 10
    with _client(port) as client:
        while True:
            try:
                if client.ping():
                    return
            except redis.RedisError:
                if time.monotonic() > deadline or process.poll() is not None:
                    raise RuntimeError(f"redis on {port} did not start") from None
                time.sleep(0.05)
