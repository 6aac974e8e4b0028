"""What hostile URL Patterns cost: per pattern, and per attacker's request on a real hub.

1. Per pattern (``tests/selectors/urlhostile.py``, the worst patterns known): compile time
   and resident memory, each pattern compiled ``COPIES`` times (distinct texts) in a fresh
   process, kept alive, then dropped. "raw" is the ``urlpattern`` package as the hub called
   it before (Unicode classes, no limit): the before figure; "ours" is
   ``compile_selector(text, "urlpattern")`` (ASCII classes, the cost limit).
2. Per request, on a real hub process on loopback (``skipfilter hub --anonymous``): for
   each attacker's request, in three rounds of fresh patterns (each connection closed
   before the next), the subscribe's answer time, the longest ``/healthz`` wait while it
   is processed (time on the event loop), the hub's resident memory while connected and
   what it keeps after the last close.

Bounded: a few hundred compiles and a dozen connections, loopback only. From the
repository root: ``.venv/bin/python benchmarks/urlpattern_hostile.py`` (``--patterns`` or
``--hub`` for one part; ``--hub --before REV`` also runs the requests the code of git
revision REV survives on it, extracted to a temporary directory: the issue's request there
grows the hub by about 330 MB a round). Figures: docs/hub.md, "What one request can cost".
"""

from __future__ import annotations

import json
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from urllib.parse import urlencode

sys.path.insert(0, ".")  # tests.* and benchmarks.*: run from the repository root

from benchmarks.resident import resident_bytes

COPIES = 8  # distinct copies of a pattern compiled per measurement
ROUNDS = 3  # requests of fresh patterns per row, each connection closed before the next
MB = 2**20


def _variant(text: str, k: int) -> str:
    """``text`` with a literal path segment ``v<k>`` first: a distinct pattern, same cost."""
    slash = text.index("/", text.index("://") + 3)
    return f"{text[: slash + 1]}v{k}/{text[slash + 1 :]}"


def measure_one(mode: str, text: str) -> dict[str, object]:
    """In this (fresh) process: ``COPIES`` compiles of ``text``'s variants the ``mode`` way."""
    import gc

    from urlpattern import URLPattern

    from skipfilter.errors import PatternTooCostly
    from skipfilter.selectors import compile_selector

    def compile_(pattern: str) -> object:
        if mode == "raw":
            return URLPattern(pattern)
        return compile_selector(pattern, "urlpattern")

    compile_(_variant("https://e.com/warm/:id(a)", 0))  # the library loaded, its caches made
    gc.collect()
    before = resident_bytes()
    held, times = [], []
    for k in range(COPIES):
        start = time.perf_counter()
        try:
            held.append(compile_(_variant(text, k)))
        except PatternTooCostly:
            return {"refused": True, "ms": (time.perf_counter() - start) * 1e3}
        except ValueError as exc:
            return {"error": str(exc)[:80], "ms": (time.perf_counter() - start) * 1e3}
        times.append(time.perf_counter() - start)
    connected = resident_bytes()
    held.clear()
    gc.collect()
    kept = resident_bytes()
    return {
        "ms": statistics.median(times) * 1e3,
        "max_ms": max(times) * 1e3,
        "kb": (connected - before) / COPIES / 1024,
        "kept_kb": (kept - before) / COPIES / 1024,
    }


def _in_child(mode: str, text: str) -> dict[str, object]:
    code = (
        "import json, sys; sys.path.insert(0, '.');"
        "from benchmarks.urlpattern_hostile import measure_one;"
        "print(json.dumps(measure_one(sys.argv[1], sys.argv[2])))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code, mode, text], capture_output=True, text=True, timeout=600
    )
    if out.returncode:
        return {"error": out.stderr.strip().splitlines()[-1][:80]}
    result: dict[str, object] = json.loads(out.stdout)
    return result


def _cell(result: dict[str, object]) -> str:
    if result.get("refused"):
        return f"refused in {result['ms']:.2f} ms"
    if "error" in result:
        return f"error ({result['error']})"
    return f"{result['ms']:.2f} ms, {result['kb']:,.0f} kB (kept {result['kept_kb']:,.0f})"


def patterns() -> None:
    from skipfilter.selectors.urlpattern import pattern_cost
    from tests.selectors.urlhostile import HOSTILE

    print(f"# per pattern: median compile time, resident memory per copy ({COPIES} copies)")
    print("| pattern | estimate (units) | raw `urlpattern` (before) | ours (after) |")
    print("|---|---:|---|---|")
    for name, text in HOSTILE:
        raw, ours = _in_child("raw", text), _in_child("ours", text)
        name_cell = name.replace("|", "\\|")
        print(f"| `{name_cell}` | {pattern_cost(text):,} | {_cell(raw)} | {_cell(ours)} |")


# -- per request, on a real hub ---------------------------------------------------------------


def _subscribe(port: int, query: str) -> tuple[socket.socket, float, bytes]:
    """Open a subscription: the socket, seconds to the response head, the head."""
    sock = socket.create_connection(("127.0.0.1", port), timeout=60)
    start = time.perf_counter()
    sock.sendall(f"GET /.well-known/mercure?{query} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n".encode())
    head = b""
    while b"\r\n\r\n" not in head:
        chunk = sock.recv(65536)
        if not chunk:
            break
        head += chunk
    return sock, time.perf_counter() - start, head


class _Probe(threading.Thread):
    """``GET /healthz`` over one keep-alive connection, every 5 ms; the longest wait."""

    def __init__(self, port: int) -> None:
        super().__init__(daemon=True)
        self.port, self.longest, self.stop = port, 0.0, threading.Event()

    def run(self) -> None:
        import httpx

        with httpx.Client(base_url=f"http://127.0.0.1:{self.port}", timeout=60) as client:
            while not self.stop.is_set():
                start = time.perf_counter()
                client.get("/healthz")
                self.longest = max(self.longest, time.perf_counter() - start)
                time.sleep(0.005)


def _requests() -> list[tuple[str, Callable[[int], list[str]], bool]]:
    """(row, patterns of round r, whether to run it on the code before) per request."""

    def issue(r: int) -> list[str]:
        return [rf"https://e.com/{r}{i}/:id(\w{{150}})" for i in range(10)]

    def issue_100(r: int) -> list[str]:
        return [rf"https://e.com/{r}{i}/:id(\w{{150}})" for i in range(100)]

    def at_budget(r: int) -> list[str]:
        """The costliest patterns one request may hold: up to the subscription's limit."""
        from skipfilter.selectors.urlpattern import BASE_COST, SUBSCRIPTION_COST_LIMIT
        from skipfilter.selectors.urlpattern import pattern_cost as cost

        found = [rf"https://e.com/{r}h{i}/:id(\p{{L}}{{7}})" for i in range(3)]
        found += [rf"https://e.com/{r}p{i}/:id" for i in range(97)]
        left = SUBSCRIPTION_COST_LIMIT - sum(cost(p) - BASE_COST for p in found)
        for i in range(3, 100):  # plain groups made wide while the budget lasts
            wider = found[i].replace("/:id", "/:id(.{40})")
            if cost(wider) - cost(found[i]) > left:
                break
            left -= cost(wider) - cost(found[i])
            found[i] = wider
        return found

    def plain(r: int) -> list[str]:
        return [f"https://example.com/{r}/books{i}/:id" for i in range(100)]

    def refused(r: int) -> list[str]:
        return [rf"https://e.com/{r}/:id(\p{{L}}{{150}})"]

    return [
        ("the issue's request: 10 x `\\w{150}` (679 bytes)", issue, True),
        ("100 x `\\w{150}`", issue_100, False),
        ("at the budget: 3 x `\\p{L}{7}`, `.{40}` groups, plain groups", at_budget, False),
        ("100 typical patterns (`https://example.com/books/:id`)", plain, True),
        ("past the limit: `\\p{L}{150}`", refused, True),
    ]


class _Node:
    """``skipfilter hub --anonymous`` (Mercure 1.0) on a free loopback port, run from
    ``tree`` (this checkout, or the code before, extracted by ``git archive``)."""

    def __init__(self, tree: Path, tmp: str) -> None:
        import httpx

        from tests.hub.hubtest import free_port

        self.port = free_port()
        command = [sys.executable, "-m", "skipfilter.cli", "hub", "--anonymous", "--addr"]
        command += [f"127.0.0.1:{self.port}", "--history", str(Path(tmp) / "h.sqlite3")]
        command += ["--heartbeat", "0", "--log-level", "warning"]
        self.proc = subprocess.Popen(
            command, cwd=tree, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        deadline = time.monotonic() + 30
        while True:
            try:
                httpx.get(f"http://127.0.0.1:{self.port}/healthz", timeout=1).raise_for_status()
                return
            except httpx.TransportError:
                if time.monotonic() > deadline or self.proc.poll() is not None:
                    self.proc.kill()
                    raise RuntimeError("the hub did not start") from None
                time.sleep(0.1)

    def stop(self) -> None:
        self.proc.kill()
        self.proc.wait(30)


def _request_row(tree: Path, make: Callable[[int], list[str]], rounds: int) -> str:
    with tempfile.TemporaryDirectory() as tmp:
        node = _Node(tree, tmp)
        try:
            pid = node.proc.pid
            warm, _, _ = _subscribe(node.port, "match_urlpattern=https://w.example/:id")
            warm.close()
            time.sleep(1.5)
            before = resident_bytes(pid)
            probe = _Probe(node.port)
            probe.start()
            time.sleep(0.05)
            answers, peak, status = [], 0, ""
            for r in range(rounds):
                query = urlencode([("match_urlpattern", p) for p in make(r)])
                sock, seconds, head = _subscribe(node.port, query)
                status = head.split(b"\r\n", 1)[0].decode().split(" ", 1)[1]
                answers.append(seconds)
                time.sleep(0.05)
                peak = max(peak, resident_bytes(pid) - before)
                sock.close()
                time.sleep(0.3)
            time.sleep(1.5)  # the hub trims its heap a second after closes
            probe.stop.set()
            probe.join(60)
            kept = resident_bytes(pid) - before
        finally:
            node.stop()
    return (
        f"{status} | {max(answers) * 1e3:,.0f} ms | {probe.longest * 1e3:,.0f} ms "
        f"| {peak / MB:,.1f} MB | {kept / MB:,.1f} MB |"
    )


def hub(before: str | None) -> None:
    print(f"\n# per request, on a real hub process ({ROUNDS} rounds of fresh patterns)")
    print(
        "| request | code | status | its slowest answer | longest /healthz wait "
        "| hub growth while connected | kept after the last close |"
    )
    print("|---|---|---|---:|---:|---:|---:|")
    with tempfile.TemporaryDirectory() as old:
        if before is not None:
            archive = subprocess.run(
                ["git", "archive", before, "skipfilter"], capture_output=True, check=True
            )
            subprocess.run(["tar", "-x", "-C", old], input=archive.stdout, check=True)
        for row, make, run_before in _requests():
            if before is not None and run_before:
                print(f"| {row} | before ({before}) | {_request_row(Path(old), make, ROUNDS)}")
            print(f"| {row} | after | {_request_row(Path.cwd(), make, ROUNDS)}")


if __name__ == "__main__":
    which = sys.argv[1:] or ["--patterns", "--hub"]
    if "--patterns" in which:
        patterns()
    if "--hub" in which:
        revision = which[which.index("--before") + 1] if "--before" in which else None
        hub(revision)
