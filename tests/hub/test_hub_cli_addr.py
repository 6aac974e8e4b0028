"""``skipfilter hub``'s listen address and extras: every mistake one line before the banner
(exit 2), and a banner that says exactly what was bound."""

from __future__ import annotations

import os
import random
import re
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from skipfilter.hub.server.address import parse_address
from skipfilter.hub.server.serve import bind_listeners
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


# -- the port's range, at its ends ----------------------------------------------------------

_FORMS = ["127.0.0.1:{}", "[::1]:{}", ":{}", "{}", "localhost:{}"]


@settings(max_examples=200, deadline=None)
@given(st.sampled_from(_FORMS), st.integers(0, 1 << 17))
@example("127.0.0.1:{}", 0)
@example("127.0.0.1:{}", 65535)
@example("127.0.0.1:{}", 65536)
@example("{}", 65536)
def test_every_form_takes_ports_0_to_65535_and_refuses_the_next(form: str, port: int) -> None:
    """Oracle: 0 <= port <= 65535, whichever way the address is written and whichever flag
    it is for (0: any free port)."""
    for flag in ("--addr", "--metrics-addr"):
        text = form.format(port)
        if port <= 65535:
            assert parse_address(text, flag).port == port
            continue
        with pytest.raises(ValueError, match=rf"^{flag} .*port {port} is out of range") as e:
            parse_address(text, flag)
        assert str(e.value).startswith(f"{flag} {text!r}")


def _loopback() -> str:
    """A loopback address of its own (127.x.y.z: every one is this machine's), so port
    65535 is not another test's at the same moment."""
    return "127." + ".".join(str(random.randint(1, 254)) for _ in range(3))


@pytest.mark.parametrize("entrance", ["--addr", "--metrics-addr", "SKIPFILTER_ADDR"], ids=str.lower)
def test_port_65536_is_refused_in_one_line_whichever_way_it_comes(entrance: str) -> None:
    host = _loopback()
    argv = ["hub", "--anonymous", "--history", ":memory:"]
    env = {}
    if entrance == "SKIPFILTER_ADDR":
        env[entrance] = f"{host}:65536"
    else:
        argv += [entrance, f"{host}:65536"]
        if entrance == "--metrics-addr":
            argv += ["--addr", f"{host}:0"]
    line = refusal(skipfilter(*argv, env=env))
    assert "port 65536 is out of range (0 to 65535)" in line, line


@pytest.mark.parametrize(
    ("addr", "metrics"),
    [
        ("--addr {}:65535", "{}:0"),
        ("--addr {}:0", "{}:65535"),
        ("SKIPFILTER_ADDR={}:65535", None),
        ("SKIPFILTER_ADDR={}:0", None),
    ],
    ids=["addr-65535-metrics-0", "addr-0-metrics-65535", "env-65535", "env-0"],
)
def test_ports_65535_and_0_are_served_and_the_banner_says_where(
    addr: str, metrics: str | None, tmp_path: Path
) -> None:
    """Port 65535 is listened on; port 0 is any free port, and the banner names the one
    bound (the hub and its metrics answer there)."""
    host = _loopback()
    argv = ["hub", "--anonymous", "--history", ":memory:", "--log-level", "warning"]
    env = dict(os.environ)
    if addr.startswith("SKIPFILTER_ADDR="):
        env["SKIPFILTER_ADDR"] = addr.partition("=")[2].format(host)
    else:
        argv += addr.format(host).split()
    if metrics is not None:
        argv += ["--metrics-addr", metrics.format(host)]
    with (tmp_path / "out").open("w+") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "skipfilter.cli", *argv],
            stdout=out,
            stderr=subprocess.STDOUT,
            text=True,
            env=env,
        )
        try:
            deadline = time.monotonic() + 30
            wanted = "metrics at http://" if metrics is not None else "subscribe at http://"
            while wanted not in (said := (tmp_path / "out").read_text()):
                assert proc.poll() is None and time.monotonic() < deadline, said
                time.sleep(0.05)
            listening = re.search(rf"listening on http://{re.escape(host)}:(\d+) ", said)
            assert listening is not None, said
            port = int(listening.group(1))
            assert port == 65535 if ":65535" in addr else port > 1024, said  # any free one
            _until_answers(f"http://{host}:{port}/healthz", said)
            if metrics is not None:
                found = re.search(rf"metrics at http://{re.escape(host)}:(\d+)/metrics", said)
                assert found is not None, said
                metrics_port = int(found.group(1))
                wanted_port = 65535 if metrics.endswith(":65535") else None
                assert metrics_port == wanted_port or (not wanted_port and metrics_port > 1024)
                _until_answers(f"http://{host}:{metrics_port}/metrics", said)
        finally:
            proc.terminate()
            proc.wait(20)


def _until_answers(url: str, said: str) -> None:
    """``url`` answers 200 (within 20 s: the hub may still be starting)."""
    deadline = time.monotonic() + 20
    while True:
        try:
            answer = httpx.get(url, timeout=5)
            if answer.status_code == 200:
                return
        except httpx.TransportError:
            answer = None
        assert time.monotonic() < deadline, f"{url}: {answer and answer.status_code}; {said}"
        time.sleep(0.1)


def test_metrics_port_0_gives_each_worker_a_free_port_of_its_own() -> None:
    """``--workers 3 --metrics-addr HOST:0``: worker i's port is not 0 + i (port 1 and 2,
    privileged, or another service's), but any free port, one each."""
    host = _loopback()
    listener, metrics = bind_listeners(f"{host}:0", f"{host}:0", 3)
    try:
        ports = [sock.getsockname()[1] for sock in metrics]
        assert [sock.getsockname()[0] for sock in metrics] == [host] * 3
        assert len(set(ports)) == 3 and min(ports) > 1024, ports
    finally:
        for sock in (listener, *metrics):
            sock.close()
