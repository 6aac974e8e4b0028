"""Real Spark servers for the tests, from the pyspark wheel: a Connect server, a standalone cluster.

Each runs in its own process group on loopback, logs and scratch files in a temporary
directory, and is stopped by its group id (the JVMs and the Python workers they start).
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

from pyspark.find_spark_home import _find_spark_home

LOOPBACK = "127.0.0.1"
CONNECT_SERVER = "org.apache.spark.sql.connect.service.SparkConnectServer"
MASTER = "org.apache.spark.deploy.master.Master"
WORKER = "org.apache.spark.deploy.worker.Worker"
START_TIMEOUT = 180.0  # seconds; a JVM start on a loaded 2-core machine can take a minute


def free_port() -> int:
    """A TCP port free on loopback now (the server binds it a moment later)."""
    with socket.socket() as probe:
        probe.bind((LOOPBACK, 0))
        return int(probe.getsockname()[1])


def _environment(scratch: Path) -> dict[str, str]:
    """Loopback only, logs in ``scratch``, and no PATH entry holding this venv's Python.

    Executors must get their Python from the job (the CLI's setting), never by accident
    from a PATH that happens to start with this virtualenv.
    """
    venv_bin = os.path.dirname(sys.executable)
    path = os.pathsep.join(p for p in os.environ.get("PATH", "").split(os.pathsep) if p != venv_bin)
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(("PYSPARK_", "SPARK_")) and key != "VIRTUAL_ENV"
    }
    env.update(
        PATH=path,
        SPARK_HOME=_find_spark_home(),
        SPARK_LOCAL_IP=LOOPBACK,
        SPARK_LOG_DIR=str(scratch),
        SPARK_DAEMON_MEMORY="512m",
    )
    return env


class Server:
    """One started server process: its group is stopped on :meth:`stop`."""

    def __init__(self, name: str, command: Sequence[str], env: dict[str, str], cwd: Path) -> None:
        self.name = name
        self.log = cwd / f"{name}.log"
        with self.log.open("wb") as out:
            self.process = subprocess.Popen(
                command,
                env=env,
                cwd=cwd,
                stdout=out,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,  # its own process group, stopped as one below
            )

    def wait_for(self, line: str) -> None:
        """Block until ``line`` appears in the log; fail with the log's tail otherwise."""
        deadline = time.monotonic() + START_TIMEOUT
        while line not in self.log.read_text(errors="replace"):
            if self.process.poll() is not None or time.monotonic() > deadline:
                tail = self.log.read_text(errors="replace")[-3000:]
                self.stop()
                raise RuntimeError(f"{self.name} did not start ({line!r} never logged):\n{tail}")
            time.sleep(0.2)

    def stop(self) -> None:
        """SIGTERM to the group this process leads, SIGKILL if it lingers."""
        if self.process.poll() is None:
            for sig, grace in ((signal.SIGTERM, 30), (signal.SIGKILL, 10)):
                try:
                    os.killpg(self.process.pid, sig)
                except ProcessLookupError:
                    break
                try:
                    self.process.wait(grace)
                    break
                except subprocess.TimeoutExpired:
                    continue
        with contextlib.suppress(ProcessLookupError):  # workers may outlive their leader
            os.killpg(self.process.pid, signal.SIGKILL)


def _bin(name: str) -> str:
    return os.path.join(_find_spark_home(), "bin", name)


@contextmanager
def connect_server(scratch: Path, python: str = sys.executable) -> Iterator[str]:
    """A Spark Connect server (local[2] behind it) on a free loopback port; yields its URL.

    Started as ``sbin/start-connect-server.sh`` does, but in the foreground: spark-submit
    with the server class, whose jar the wheel ships. Its Python workers run ``python``.
    """
    port = free_port()
    env = {**_environment(scratch), "PYSPARK_PYTHON": python}
    command = [
        _bin("spark-submit"),
        "--class",
        CONNECT_SERVER,
        "--master",
        "local[2]",
        "--driver-memory",
        "1g",
        "--conf",
        f"spark.connect.grpc.binding.address={LOOPBACK}",
        "--conf",
        f"spark.connect.grpc.binding.port={port}",
        "--conf",
        "spark.ui.enabled=false",
        "--conf",
        "spark.sql.shuffle.partitions=4",
        "--conf",
        f"spark.sql.warehouse.dir={scratch / 'warehouse'}",
        "--conf",
        f"spark.driver.extraJavaOptions=-Dderby.system.home={scratch}",
    ]
    server = Server("connect-server", command, env, scratch)
    try:
        server.wait_for(f"Spark Connect server started at: {LOOPBACK}:{port}")
        yield f"sc://{LOOPBACK}:{port}"
    finally:
        server.stop()


def python_without_skipfilter(folder: Path) -> Path:
    """A virtualenv in ``folder`` with every package of this one but skipfilter; its bin/.

    What a cluster image with skipfilter's dependencies (not skipfilter) gives executors:
    its ``python3`` imports pyroaring, pyarrow... and fails on ``import skipfilter``.
    """
    base = getattr(sys, "_base_executable", sys.executable)
    subprocess.run([base, "-m", "venv", "--without-pip", str(folder)], check=True, timeout=120)
    ours = Path(next(p for p in sys.path if p.endswith("site-packages")))
    (theirs,) = folder.glob("lib/python*/site-packages")
    for entry in ours.iterdir():
        # no skipfilter, no editable-install hooks, no .pth that could lead back here
        if "skipfilter" not in entry.name and entry.suffix != ".pth":
            (theirs / entry.name).symlink_to(entry)
    return folder / "bin"


@contextmanager
def standalone_cluster(
    scratch: Path, cores: int = 2, *, worker_path: Sequence[str] = ()
) -> Iterator[str]:
    """A standalone master and one worker (``cores`` cores) on loopback; yields the master URL.

    ``worker_path``: folders put first on the worker's PATH (where executors find ``python3``
    unless the job names a Python).
    """
    env = _environment(scratch)
    port = free_port()
    url = f"spark://{LOOPBACK}:{port}"
    master = Server(
        "master",
        [_bin("spark-class"), MASTER, *f"--host {LOOPBACK} --port {port} --webui-port 0".split()],
        env,
        scratch,
    )
    servers = [master]
    try:
        master.wait_for("I have been elected leader")
        work = scratch / "work"
        work.mkdir()
        options = f"--host {LOOPBACK} --cores {cores} --memory 2g --webui-port 0"
        path = os.pathsep.join([*worker_path, env["PATH"]])
        worker = Server(
            "worker",
            [_bin("spark-class"), WORKER, url, *options.split(), "--work-dir", str(work)],
            {**env, "PATH": path},
            scratch,
        )
        servers.append(worker)
        worker.wait_for("Successfully registered with master")
        yield url
    finally:
        for server in reversed(servers):
            server.stop()
