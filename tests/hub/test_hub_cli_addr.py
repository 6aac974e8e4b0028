"""``skipfilter hub``'s listen address and extras: every mistake one line before the banner
(exit 2), and a banner that says exactly what was bound."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from tests.hub.cli_run import refusal, skipfilter
from tests.hub.hubtest import HUB, HubProcess, free_port


@pytest.mark.parametrize(
    ("addr", "says"),
    [
        ("127.0.0.1:99999", "port 99999 is out of range (0 to 65535)"),
        ("127.0.0.1:-1", "is not a number"),
        ("127.0.0.1:", "is not a number"),
        ("::1:3911", "an IPv6 address goes in brackets: [::1]:3911"),
        ("[::1]", "[::1]:3000"),
        ("[nonsense]:3911", "is not an IPv6 address"),
        ("localhost", "no port: write HOST:PORT"),
        ("a b:3911", "neither an IP address nor a host name"),
        ("203.0.113.7:3911", "this machine has no such address"),  # TEST-NET-3: not ours
    ],
)
def test_an_address_mistake_is_one_line_naming_addr_before_the_banner(
    addr: str, says: str, tmp_path: Path
) -> None:
    """Was: 127.0.0.1:99999 an OverflowError traceback after the banner; an address this
    machine does not have an OSError traceback; ::1:3911 taken as host ::1."""
    line = refusal(skipfilter("hub", "--anonymous", "--addr", addr, cwd=tmp_path))
    assert line.startswith(f"skipfilter hub: --addr {addr}") or f"--addr {addr!r}" in line
    assert says in line


def test_a_port_in_use_is_one_line_before_the_banner(tmp_path: Path) -> None:
    """Was: the banner (open files, subscribe at ...) printed, then the bind failed."""
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        line = refusal(skipfilter("hub", "--anonymous", "--addr", f"127.0.0.1:{port}"))
    assert f"--addr 127.0.0.1:{port}" in line and "in use" in line


def test_a_metrics_port_in_use_is_one_line_before_the_banner() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        line = refusal(
            skipfilter(
                "hub",
                "--anonymous",
                "--addr",
                f"127.0.0.1:{free_port()}",
                "--metrics-addr",
                f"127.0.0.1:{port}",
            )
        )
    assert f"--metrics-addr 127.0.0.1:{port}" in line and "in use" in line


def test_the_redis_transport_without_its_extra_is_one_line_naming_the_extra() -> None:
    """Was: an ImportError traceback. The line names the flag (its password hidden), the
    extra and an install command."""
    found = skipfilter(
        "hub",
        "--anonymous",
        "--addr",
        f"127.0.0.1:{free_port()}",
        "--transport",
        "redis://user:s3cret@localhost:6379/0",
        without="redis",
    )
    line = refusal(found)
    assert "--transport redis://" in line and "s3cret" not in line
    assert "redis" in line.split(": ", 2)[-1] and "install" in line


def test_the_hub_command_without_its_extra_names_it_whatever_the_flags() -> None:
    """Was: 'unrecognized arguments' for any flag, as the hub's flags were never declared."""
    line = refusal(skipfilter("hub", "--addr", "127.0.0.1:1", without="starlette"))
    assert "hub extra" in line and "pip install" in line


def _banner(proc: subprocess.Popen[str], lines: int) -> list[str]:
    """The first ``lines`` lines the hub printed (its banner), read with a deadline."""
    assert proc.stdout is not None
    got: list[str] = []
    deadline = time.monotonic() + 20
    while len(got) < lines and time.monotonic() < deadline:
        line = proc.stdout.readline()
        if not line:
            break
        got.append(line.rstrip("\n"))
    return got


def test_a_bare_port_binds_every_interface_and_the_banner_says_so(
    processes: list[HubProcess],
) -> None:
    """A bare PORT is :PORT (Caddy's every-interface site address); the banner said
    'localhost' while it listened on every interface."""
    port = free_port()
    hub = HubProcess("--anonymous", "--history", ":memory:", "--addr", str(port), port=port)
    processes.append(hub)
    out = hub.output()
    assert f"listening on http://0.0.0.0:{port} (every IPv4 interface" in out
    assert f"subscribe at http://localhost:{port}{HUB}" in out
    assert httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=5).status_code == 200


def test_an_ipv6_address_is_printed_in_brackets(tmp_path: Path) -> None:
    """Was: http://::1:3911, which no client parses."""
    if not socket.has_ipv6:
        pytest.skip("no IPv6 on this machine")
    port = free_port()
    argv = ["hub", "--anonymous", "--history", ":memory:", "--log-level", "warning"]
    proc = subprocess.Popen(
        [sys.executable, "-m", "skipfilter.cli", *argv, "--addr", f"[::1]:{port}"],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        banner = "\n".join(_banner(proc, 3))
        assert f"listening on http://[::1]:{port} (loopback: this machine only)" in banner
        assert f"subscribe at http://[::1]:{port}{HUB}" in banner
        answer = httpx.get(f"http://[::1]:{port}/healthz", timeout=5)
        assert answer.status_code == 200
    finally:
        proc.terminate()
        proc.wait(10)
