"""A real ``redis-server`` (Debian's) on a free loopback port in a temporary directory."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import time
from pathlib import Path

import redis

from rigs.ports import restartable_port


def redis_available() -> bool:
    """Whether the Redis tests run: when Debian's redis-server is installed (``make test``
    installs it as root), and always under CI, where its absence is a failure, not a skip
    (as for the browser test)."""
    return bool(os.environ.get("CI")) or shutil.which("redis-server") is not None


class RedisServer:
    """``redis-server`` with the append-only file on; ``stop``/``start`` keep its data."""

    def __init__(self, directory: Path, port: int | None = None) -> None:
        self.directory = directory / "redis"
        self.directory.mkdir(exist_ok=True)
        self.port = port or restartable_port()
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self.process: subprocess.Popen[bytes] | None = None

    def start(self) -> RedisServer:
        if shutil.which("redis-server") is None:
            raise RuntimeError(
                "redis-server is not installed (make test installs it as root); under CI "
                "the Redis tests fail without it"
            )
        self.process = subprocess.Popen(
            [
                "redis-server",
                "--port",
                str(self.port),
                "--bind",
                "127.0.0.1",
                "--dir",
                str(self.directory),
                "--appendonly",
                "yes",
                "--appendfsync",
                "always",
                "--save",
                "",
                "--protected-mode",
                "no",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.STDOUT,
        )
        client = redis.Redis(port=self.port)
        deadline = time.monotonic() + 10
        while True:
            try:
                if client.ping():
                    break
            except redis.exceptions.RedisError:
                if time.monotonic() > deadline or self.process.poll() is not None:
                    raise RuntimeError("redis-server did not start") from None
                time.sleep(0.05)
        client.close()
        return self

    def stop(self) -> None:
        """Shut down cleanly (SIGTERM: the append-only file is flushed)."""
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            self.process.wait(10)
        self.process = None

    def __enter__(self) -> RedisServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait(10)


def stream_fields(client: redis.Redis, stream: str = "skipfilter:updates") -> list[dict[str, str]]:
    """The fields of every entry in ``stream``, decoded. redis-py types XRANGE's answer, and
    each entry's fields, as possibly None: a synchronous XRANGE never gives either."""
    entries = client.xrange(stream)
    assert entries is not None
    decoded: list[dict[str, str]] = []
    for _, fields in entries:
        assert fields is not None
        decoded.append({text(name): text(value) for name, value in fields.items()})
    return decoded


def text(value: bytes | str) -> str:
    """A Redis answer as text (redis-py types each as bytes or str, whichever decoding)."""
    return value.decode() if isinstance(value, bytes) else value
