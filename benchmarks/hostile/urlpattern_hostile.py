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

3. Matching (``--match``, ``--limit BYTES``): a hub process per subscription, the worst
   patterns the running code's estimator accepts (and a whole subscription of them), ten
   publishes of each topic shape at the longest accepted length while ``/healthz`` is
   probed; the event loop's CPU per publish. ``--issue`` runs the rows the code before
   survives (run it with ``PYTHONPATH`` at that tree: the hub prints what it imported).

Bounded: a few hundred compiles and a dozen connections, loopback only. From the
repository root: ``.venv/bin/python benchmarks/hostile/urlpattern_hostile.py`` (``--patterns`` or
``--hub`` for one part; ``--hub --before REV`` also runs the requests the code of git
revision REV survives on it, extracted to a temporary directory: the issue's request there
grows the hub by about 330 MB a round). Figures: docs/hub.md, "What one request can cost".
"""

from __future__ import annotations

import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from urllib.parse import urlencode

sys.path.insert(0, ".")  # tests.*, rigs.*, benchmarks.*: run from the repository root

from rigs.resident import resident_bytes

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
        "from benchmarks.hostile.urlpattern_hostile import measure_one;"
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


def extract(revision: str, into: str) -> None:
    """The ``skipfilter`` package at git ``revision``, written under ``into`` (a tree
    :class:`HubNode` runs, for the "before" rows)."""
    archive = subprocess.run(
        ["git", "archive", revision, "skipfilter"], capture_output=True, check=True
    )
    subprocess.run(["tar", "-x", "-C", into], input=archive.stdout, check=True)


class HubNode:
    """``skipfilter hub --anonymous`` (Mercure 1.0) on a free loopback port, run from
    ``tree`` (this checkout, or the code before, extracted by ``git archive``), with
    ``extra`` flags and ``env`` added to its environment (``hostile_heads.py`` uses it too)."""

    def __init__(
        self, tree: Path, tmp: str, extra: Sequence[str] = (), env: Mapping[str, str] | None = None
    ) -> None:
        import httpx

        from tests.hub.hubtest import free_port

        self.port = free_port()
        command = [sys.executable, "-m", "skipfilter.cli", "hub", "--anonymous", "--addr"]
        command += [f"127.0.0.1:{self.port}", "--history", str(Path(tmp) / "h.sqlite3")]
        command += ["--heartbeat", "0", "--log-level", "warning", *extra]
        self.proc = subprocess.Popen(
            command,
            cwd=tree,
            env={**os.environ, **(env or {})},
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
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
        node = HubNode(tree, tmp)
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
            extract(before, old)
        for row, make, run_before in _requests():
            if before is not None and run_before:
                print(f"| {row} | before ({before}) | {_request_row(Path(old), make, ROUNDS)}")
            print(f"| {row} | after | {_request_row(Path.cwd(), make, ROUNDS)}")


# -- matching: a subscription's worst accepted patterns against published topics ------------

KEY = "match-benchmark-publisher-key-0123456789abcdef"
ORIGIN = "https://e.com"
PUBLISHES = 10  # per (subscription, topic)


def _most(make: Callable[[int], str], cap: int = 2000) -> int:
    """The largest n whose ``make(n)`` the running code's estimator accepts (binary search:
    the cost grows with n)."""
    from skipfilter.errors import InvalidSelector
    from skipfilter.selectors.urlpattern import PATTERN_COST_LIMIT, pattern_cost

    def ok(n: int) -> bool:
        text = make(n)
        if len(text.encode()) > 4096:
            return False
        try:
            return pattern_cost(text) <= PATTERN_COST_LIMIT
        except InvalidSelector:
            return False

    low, high = 1, cap
    while low < high:
        mid = (low + high + 1) // 2
        low, high = (mid, high) if ok(mid) else (low, mid - 1)
    return low


def _stars(n: int, tag: str = "") -> str:
    return ORIGIN + (f"/:{tag}" if tag else "") + "/*" * n


def _optional(n: int, tag: str = "") -> str:
    return ORIGIN + "".join(f"/:p{tag}{i}?" for i in range(n)) + "/x"


def _chain(n: int, tag: str = "") -> str:
    return ORIGIN + (f"/:{tag}" if tag else "") + "/" + "{a}?" * n + "aaa"


def _subscriptions(issue: bool) -> list[tuple[str, list[str]]]:
    """(row, patterns) of one subscription each: the worst shapes at the running code's
    per-pattern limit, and a whole subscription up to its limit."""
    from skipfilter.selectors.urlpattern import (
        BASE_COST,
        PATTERN_COST_LIMIT,
        SUBSCRIPTION_COST_LIMIT,
        pattern_cost,
    )

    stars, optional, chain = _most(_stars), _most(_optional), _most(_chain)
    rows = [
        (f"{stars} `*` ({pattern_cost(_stars(stars)):,} units)", [_stars(stars)]),
        (f"{optional} `/:p?` ({pattern_cost(_optional(optional)):,} units)", [_optional(optional)]),
        (f"{chain} `{{a}}?` then `aaa` ({pattern_cost(_chain(chain)):,} units)", [_chain(chain)]),
    ]
    if issue:
        rows.append(("the issue's 150 `/:a?` (old estimate 3,571)", [_optional(150)]))
    whole: list[str] = []
    spent = 0
    shapes = ((_stars, stars), (_optional, optional), (_chain, chain))
    for k in range(100):  # the costliest shapes in turn while the budget lasts, then literals
        make, n = shapes[k % 3]
        while n and (
            pattern_cost(make(n, f"z{k}")) - BASE_COST + spent > SUBSCRIPTION_COST_LIMIT
            or pattern_cost(make(n, f"z{k}")) > PATTERN_COST_LIMIT
            or len(make(n, f"z{k}")) > 4096
        ):
            n -= 1
        if n:
            spent += pattern_cost(make(n, f"z{k}")) - BASE_COST
        whole.append(make(n, f"z{k}") if n else f"{ORIGIN}/plain{k}")  # a literal: free
    rows.append((f"a whole subscription: {len(whole)} patterns, {spent:,} units", whole))
    return rows


def _topics(limit: int) -> list[tuple[str, str]]:
    """(name, topic) of ``limit`` UTF-8 bytes, same origin, shaped for the patterns."""
    room = limit - len(ORIGIN)
    return [
        ("`/a` segments", ORIGIN + "/a" * (room // 2)),
        ("40 long segments, then `/x`", ORIGIN + ("/" + "a" * (room // 40 - 2)) * 40 + "/x"),
        ("`a`s", ORIGIN + "/" + "a" * (room - 1)),
        ("`é`s (percent-encoded: 3x)", ORIGIN + "/" + "é" * ((room - 1) // 2)),
    ]


class _MatchHub:
    """A hub process (anonymous subscribers, a 0.x publisher key) run from the working
    directory with this interpreter's ``sys.path`` (PYTHONPATH picks the code); it prints
    the ``skipfilter`` it imported."""

    def __init__(self, tmp: str) -> None:
        import httpx

        from tests.hub.hubtest import free_port

        self.port = free_port()
        self.log = Path(tmp) / "hub.log"
        code = (
            "import runpy, sys, skipfilter; print('hub imports', skipfilter.__file__, flush=True);"
            "sys.argv = ['skipfilter', *sys.argv[1:]];"
            "runpy.run_module('skipfilter.cli', run_name='__main__')"
        )
        command = [sys.executable, "-c", code, "hub", "--anonymous", "--addr"]
        command += [f"127.0.0.1:{self.port}", "--history", str(Path(tmp) / "h.sqlite3")]
        command += ["--heartbeat", "0", "--log-level", "warning", "--publisher-jwt-key", KEY]
        command += ["--protocol-version-compatibility", "8"]
        with self.log.open("w") as log:
            self.proc = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 30
        while True:
            try:
                httpx.get(f"http://127.0.0.1:{self.port}/healthz", timeout=1).raise_for_status()
                break
            except httpx.HTTPError:
                if time.monotonic() > deadline or self.proc.poll() is not None:
                    self.proc.kill()
                    raise RuntimeError(f"the hub did not start: {self.log.read_text()}") from None
                time.sleep(0.1)
        print(f"# {self.log.read_text().splitlines()[0]}", flush=True)

    def cpu(self) -> tuple[float, float]:
        """Seconds of CPU the hub has used: its event loop's thread (the main one, in
        nanoseconds), and the whole process (user + system, in clock ticks)."""
        loop = Path(f"/proc/{self.proc.pid}/task/{self.proc.pid}/schedstat").read_text()
        fields = Path(f"/proc/{self.proc.pid}/stat").read_text().rsplit(")", 1)[1].split()
        ticks = int(fields[11]) + int(fields[12])
        return int(loop.split()[0]) / 1e9, ticks / os.sysconf("SC_CLK_TCK")

    def stop(self) -> None:
        self.proc.kill()
        self.proc.wait(30)


def _publish_row(node: _MatchHub, topic: str) -> str:
    """``PUBLISHES`` publishes of ``topic`` while /healthz is probed: status, median answer,
    hub CPU per publish, longest /healthz wait."""
    import httpx
    import jwt

    auth = jwt.encode({"mercure": {"publish": ["*"]}}, KEY, algorithm="HS256")
    headers = {"Authorization": f"Bearer {auth}"}
    probe = _Probe(node.port)
    probe.start()
    time.sleep(0.05)
    answers: list[float] = []
    statuses: set[int] = set()
    cpu = node.cpu()
    with httpx.Client(base_url=f"http://127.0.0.1:{node.port}", timeout=600) as client:
        for _ in range(PUBLISHES):
            start = time.perf_counter()
            answer = client.post("/.well-known/mercure", data={"topic": topic}, headers=headers)
            if answer.status_code != 200 and len(statuses) == 0:
                print(f"# {answer.status_code}: {answer.text[:200]}", flush=True)
            answers.append(time.perf_counter() - start)
            statuses.add(answer.status_code)
        time.sleep(0.05)
    after = node.cpu()
    loop, process = ((after[i] - cpu[i]) / PUBLISHES for i in (0, 1))
    probe.stop.set()
    probe.join(600)
    return (
        f"{'/'.join(map(str, sorted(statuses)))} | {statistics.median(answers) * 1e3:,.1f} ms "
        f"| {loop * 1e3:,.1f} ms | {process * 1e3:,.0f} ms | {probe.longest * 1e3:,.1f} ms |"
    )


def match(limit: int, issue: bool) -> None:
    """Each subscription (one connection) alone on a fresh hub, then publishes of each topic
    shape at ``limit`` bytes; also with no subscriber (the publish alone)."""
    import skipfilter

    print(f"\n# matching, topics of {limit:,} bytes ({PUBLISHES} publishes each)")
    print(f"# benchmark imports {skipfilter.__file__}")
    print(
        "| subscription | topic | status | median answer | loop CPU per publish "
        "| hub CPU per publish | longest /healthz wait |"
    )
    print("|---|---|---|---:|---:|---:|---:|")
    rows: list[tuple[str, list[str]]] = [("none", []), *_subscriptions(issue)]
    if "--whole" in sys.argv:
        rows = rows[-1:]
    if issue:  # the code before: its other rows backtrack past any time one could wait
        rows = [row for row in rows if "`*`" in row[0] or "issue" in row[0]]
    topics = _topics(limit)
    if issue:
        topics.append(("the issue's `/users/42/inbox`", ORIGIN + "/users/42/inbox"))
    for row, patterns in rows:
        with tempfile.TemporaryDirectory() as tmp:
            node = _MatchHub(tmp)
            try:
                sock = None
                if patterns:
                    query = urlencode([("match_urlpattern", p) for p in patterns])
                    sock, _, head = _subscribe(node.port, query)
                    status = head.split(b"\r\n", 1)[0].decode()
                    if " 200 " not in status:
                        print(f"| {row} | - | subscribe: {status} | | | | |", flush=True)
                        continue
                for name, topic in topics:
                    if issue and "issue" not in row and "issue" in name:
                        continue
                    if issue and "issue" in row and "issue" not in name:
                        continue
                    print(f"| {row} | {name} | {_publish_row(node, topic)}", flush=True)
                if sock is not None:
                    sock.close()
            finally:
                node.stop()


if __name__ == "__main__":
    which = sys.argv[1:] or ["--patterns", "--hub"]
    if "--match" in which:
        size = int(which[which.index("--limit") + 1]) if "--limit" in which else 4096
        match(size, "--issue" in which)
    if "--patterns" in which:
        patterns()
    if "--hub" in which:
        revision = which[which.index("--before") + 1] if "--before" in which else None
        hub(revision)
