"""What one hostile request head or body costs a real hub process (issue 39's rows of
docs/hub.md's "What one request can cost").

On ``skipfilter hub --anonymous`` (loopback, a fresh process per row), each request three
times on fresh connections, one after the other: the time to the hub's answer (or to its
close), the hub's resident memory grown while the connection is open (the largest of the
rounds) and what it keeps 1.5 s after the last close. Rows: the largest head accepted
(1 MiB: one long header line), one byte more, the issue's flood (24 MiB of short header
lines, never ended), and a publish whose body never comes (a 0.x publisher's, in
compatibility mode: how long the hub holds the connection; capped at ``HOLD_CAP`` seconds).

From the repository root: ``.venv/bin/python benchmarks/hostile/hostile_heads.py [--before REV]``;
``--before REV`` also runs each row on the code of git revision REV (``git archive``).
"""

from __future__ import annotations

import contextlib
import socket
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, ".")  # tests.*, rigs.*, benchmarks.*: run from the repository root

from benchmarks.hostile.urlpattern_hostile import HubNode, extract
from rigs.resident import resident_bytes
from tests.hub.hubtest import PUBLISHER_KEY

ROUNDS = 3
MB = 2**20
LIMIT = 1 << 20  # the default --max-head-bytes
HOLD_CAP = 40.0  # seconds a connection is watched for the hub to close it
GET = b"GET /healthz HTTP/1.1\r\nHost: hub\r\n"


def _answer(sock: socket.socket, wait: float) -> tuple[str, float]:
    """The status line's code (or "closed", "none") and seconds until it or the close."""
    started = time.monotonic()
    sock.settimeout(wait)
    try:
        first = sock.recv(65536)
    except TimeoutError:
        return "none", time.monotonic() - started
    except OSError:
        return "reset", time.monotonic() - started
    if not first:
        return "closed", time.monotonic() - started
    return first.split(b" ", 2)[1].decode(), time.monotonic() - started


def _send_all(sock: socket.socket, data: bytes) -> None:
    with contextlib.suppress(OSError):  # refused and closed before all of it was read
        sock.sendall(data)


def largest(sock: socket.socket) -> tuple[str, float]:
    pad = LIMIT - (len(b"/healthz") + len(b"Host: hub\r\n") + len(b"X-Pad: \r\n"))
    _send_all(sock, GET + b"X-Pad: " + b"p" * pad + b"\r\n\r\n")
    return _answer(sock, 30)


def one_past(sock: socket.socket) -> tuple[str, float]:
    pad = LIMIT - (len(b"/healthz") + len(b"Host: hub\r\n") + len(b"X-Pad: \r\n")) + 1
    _send_all(sock, GET + b"X-Pad: " + b"p" * pad + b"\r\n\r\n")
    return _answer(sock, 30)


def flood(sock: socket.socket) -> tuple[str, float]:
    sock.sendall(GET)
    chunk = b"X-A: b\r\n" * 8192
    started = time.monotonic()
    for _ in range((24 * MB) // len(chunk)):
        try:
            sock.sendall(chunk)
        except OSError:
            break
    status, _ = _answer(sock, 2)
    return status, time.monotonic() - started


def endless_body(sock: socket.socket) -> tuple[str, float]:
    """A publisher's form announced at 1 MiB, 10 bytes sent: the answer (if any) and how
    long the hub holds the connection (until it closes it, or ``HOLD_CAP``)."""
    from tests.hub.hubtest import pub_token  # PUBLISHER_KEY's, publishing anything

    sock.sendall(
        f"POST /.well-known/mercure HTTP/1.1\r\nHost: hub\r\nAuthorization: Bearer "
        f"{pub_token()}\r\nContent-Type: application/x-www-form-urlencoded\r\n"
        f"Content-Length: 1048576\r\n\r\ntopic=x&da".encode()
    )
    started = time.monotonic()
    status, _ = _answer(sock, HOLD_CAP)
    with contextlib.suppress(OSError):
        while time.monotonic() - started < HOLD_CAP and sock.recv(65536):
            pass
    return status, time.monotonic() - started


ROWS: list[tuple[str, Callable[[socket.socket], tuple[str, float]]]] = [
    ("the largest head accepted: 1 MiB, one header line", largest),
    ("one byte more", one_past),
    ("24 MiB of short header lines, never ended (the issue's)", flood),
    ("a publish body that never comes (1 MiB announced, 10 bytes sent)", endless_body),
]


def _row(tree: Path, request: Callable[[socket.socket], tuple[str, float]]) -> str:
    with tempfile.TemporaryDirectory() as tmp:
        node = HubNode(
            tree,
            tmp,
            ["--protocol-version-compatibility", "8"],  # the tests' 0.x tokens publish
            {"MERCURE_PUBLISHER_JWT_KEY": PUBLISHER_KEY},
        )
        try:
            pid = node.proc.pid
            time.sleep(1.0)
            before = resident_bytes(pid)
            peak, statuses, times = 0, set(), []
            for _ in range(ROUNDS):
                with socket.create_connection(("127.0.0.1", node.port), timeout=60) as sock:
                    status, seconds = request(sock)
                    peak = max(peak, resident_bytes(pid) - before)
                statuses.add(status)
                times.append(seconds)
                time.sleep(0.3)
            time.sleep(1.5)
            kept = resident_bytes(pid) - before
        finally:
            node.stop()
    return (
        f"{'/'.join(sorted(statuses))} | {min(times) * 1e3:,.0f}-{max(times) * 1e3:,.0f} ms "
        f"| {peak / MB:,.1f} MB | {kept / MB:,.1f} MB |"
    )


def main(before: str | None) -> None:
    print(
        f"| request (one connection, {ROUNDS} rounds) | code | answer | its time "
        "| hub growth while connected | kept after close |"
    )
    print("|---|---|---|---:|---:|---:|")
    with tempfile.TemporaryDirectory() as old:
        if before is not None:
            extract(before, old)
        for name, request in ROWS:
            if before is not None:
                print(f"| {name} | before ({before}) | {_row(Path(old), request)}", flush=True)
            print(f"| {name} | after | {_row(Path.cwd(), request)}", flush=True)


if __name__ == "__main__":
    args = sys.argv[1:]
    main(args[args.index("--before") + 1] if "--before" in args else None)
