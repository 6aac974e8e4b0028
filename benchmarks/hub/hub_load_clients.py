"""The load generator's two client processes: a fleet of SSE subscribers, and a publisher.

Both are plain asyncio protocols on uvloop (when installed), so the client costs a few
microseconds per received event and leaves the CPU to the hub. A fleet binds its own
source address in 127.0.0.0/8, so several fleets together can open more connections than
one address has ephemeral ports. Every update carries its number and its publish time;
a fleet checks what each subscriber got against the seeded plan (nothing lost, duplicated
or reordered) and reports a latency histogram. Run by ``hub_load.py``; not a unit test.

Clients speak one protocol version (``--clients``): ``v0`` subscribes with ``topic=`` (exact
topics and a URI template) and publishes with a 0.x JWT (the ``mercure`` claim); ``v1``
subscribes with ``match=`` (exact) and ``match_urlpattern=`` (the book pattern) and publishes
with a Mercure 1.0 access token (``typ: at+jwt``, ``authorization_details``); ``v1p`` is
``v1`` with every matcher a URL Pattern (each subscriber's own user pattern, its feed, the
book pattern). Every kind receives the same updates: one plan, several spellings.
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import json
import os
import random
import re
import ssl
import sys
import time
from collections import Counter
from dataclasses import dataclass
from urllib.parse import quote, urlencode

KEY = "load-test-publisher-key-0123456789abcdef"
#: The issuer of the 1.0 publisher token (``hub_load.py`` starts the hub trusting it).
ISSUER = "https://load-test.invalid"
#: Client kinds: the protocol version they speak and how they spell their matchers.
CLIENTS = ("v0", "v1", "v1p")
FEEDS = 20  # targeted: every subscriber follows one of FEEDS feeds
BROADCAST = "https://example.com/broadcast"
_EVENT = re.compile(rb"data: (\d+) (\d+\.\d+)\n")
#: Latency histogram resolution (seconds per bucket) and range.
BUCKET = 1e-4
MAX_BUCKET = 600_000


@dataclass(frozen=True)
class Plan:  # the same seeded plan in every process
    """The seeded workload both sides agree on."""

    scenario: str
    subscribers: int
    updates: int
    seed: int

    def topics_of(self, index: int) -> list[str]:
        """What subscriber ``index`` subscribes to."""
        if self.scenario != "targeted":
            return [BROADCAST]
        topics = [
            f"https://example.com/users/{index}",
            f"https://example.com/feeds/{index % FEEDS}",
        ]
        if random.Random(self.seed * 1_000_003 + index).random() < 0.1:
            topics.append("https://example.com/books/{id}")
        return topics

    def query_of(self, index: int, clients: str) -> list[tuple[str, str]]:
        """The subscribe query of subscriber ``index`` for ``clients`` (see the module's
        docstring): the same updates, spelled in 0.x or 1.0."""
        topics = self.topics_of(index)
        if clients == "v0":
            return [("topic", t) for t in topics]
        query = []
        for topic in topics:
            if topic.endswith("{id}"):
                query.append(("match_urlpattern", topic.replace("{id}", ":id")))
            elif clients == "v1p" and "/users/" in topic:
                query.append(("match_urlpattern", topic + "{/*}?"))  # the user and below
            elif clients == "v1p":
                query.append(("match_urlpattern", topic))  # a literal pattern
            else:
                query.append(("match", topic))
        return query

    @functools.cached_property
    def _users(self) -> list[int]:
        rng = random.Random(self.seed)
        return [rng.randrange(self.subscribers) for _ in range(self.updates)]

    def update(self, n: int) -> list[str]:
        """The topics of update ``n``."""
        if self.scenario != "targeted":
            return [BROADCAST]
        topics = [
            f"https://example.com/users/{self._users[n]}",
            f"https://example.com/feeds/{n % FEEDS}",
        ]
        if n % 10 == 0:
            topics.append(f"https://example.com/books/{n}")
        return topics

    @functools.cached_property
    def _by_user(self) -> dict[int, list[int]]:
        found: dict[int, list[int]] = {}
        for n, user in enumerate(self._users):
            found.setdefault(user, []).append(n)
        return found

    def expected(self, index: int) -> list[int]:
        """Update numbers subscriber ``index`` must receive, in order."""
        if self.scenario != "targeted":
            return list(range(self.updates))
        wanted = set(range(index % FEEDS, self.updates, FEEDS))
        wanted.update(self._by_user.get(index, ()))
        if len(self.topics_of(index)) == 3:
            wanted.update(range(0, self.updates, 10))
        return sorted(wanted)


def _use_uvloop() -> None:
    try:
        import uvloop
    except ImportError:
        return
    asyncio.set_event_loop_policy(uvloop.EventLoopPolicy())


# -- subscribers -----------------------------------------------------------------------------


class Subscriber(asyncio.Protocol):
    """One SSE connection: sends its GET, then records each update number and latency."""

    def __init__(self, fleet: Fleet, index: int, request: bytes) -> None:
        self.fleet = fleet
        self.index = index
        self.request = request
        self.got: list[int] = []
        self.buffer = b""
        self.head_done = False
        self.opened: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self.closed = False
        self.last = 0.0  # when the last update arrived (time.time())

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        transport.write(self.request)  # type: ignore[attr-defined]

    def data_received(self, data: bytes) -> None:
        now = time.time()
        buffer = self.buffer + data
        if not self.head_done:
            end = buffer.find(b"\r\n\r\n")
            if end < 0:
                self.buffer = buffer
                return
            if not buffer.startswith(b"HTTP/1.1 200"):
                self.opened.set_exception(RuntimeError(buffer[:200].decode(errors="replace")))
                return
            self.head_done = True
            self.opened.set_result(None)
            buffer = buffer[end + 4 :]
        cut = buffer.rfind(b"\n") + 1
        got, histogram = self.got, self.fleet.histogram
        before = len(got)
        for match in _EVENT.finditer(buffer, 0, cut):
            got.append(int(match[1]))
            bucket = int((now - float(match[2])) / BUCKET)
            histogram[bucket if bucket < MAX_BUCKET else MAX_BUCKET] += 1
        self.buffer = buffer[cut:]
        if len(got) > before:
            self.fleet.received += len(got) - before
            self.last = now

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        if not self.opened.done():
            self.opened.set_exception(ConnectionError(f"closed before 200: {exc}"))


def _reason(exc: Exception) -> str:
    """A connection failure in a few words: the status line of a refusal, or the error."""
    text = str(exc).split("\r\n", 1)[0] if isinstance(exc, RuntimeError) else repr(exc)
    return text[:80]


@dataclass(frozen=True)
class Target:
    """Where clients connect: the hub itself, or a proxy in front of it over TLS (``tls``),
    named ``host`` in the requests (the proxy's site name)."""

    port: int
    host_name: str | None = None
    tls: ssl.SSLContext | None = None

    @property
    def host(self) -> str:
        return self.host_name or f"127.0.0.1:{self.port}"

    @classmethod
    def of(cls, args: argparse.Namespace) -> Target:
        """From ``--port``, ``--host`` and ``--tls`` (which trusts any certificate)."""
        tls = None
        if args.tls:
            tls = ssl.create_default_context()
            tls.check_hostname = False
            tls.verify_mode = ssl.CERT_NONE
        return cls(args.port, args.host, tls)


class Fleet:
    """Subscribers ``first..first+count-1`` of the plan, on one source address."""

    def __init__(self, plan: Plan, first: int, count: int, publishers: int, clients: str) -> None:
        self.plan = plan
        self.clients = clients
        self.publishers = publishers
        self.first, self.count = first, count
        self.subscribers: list[Subscriber] = []
        self.histogram: Counter[int] = Counter()
        self.received = 0
        self.retries = 0
        self.failures: Counter[str] = Counter()  # why connections were retried

    async def connect(
        self, port: int, source: str, batch: int = 500, target: Target | None = None
    ) -> None:
        """Open every subscriber's stream, ``batch`` at a time; one refused (a full hub
        process answers 503) or reset retries, as EventSource would, up to 20 times."""
        target = target or Target(port)
        for start in range(self.first, self.first + self.count, batch):
            indexes = range(start, min(start + batch, self.first + self.count))
            opened = await asyncio.gather(*(self._open(target, source, i) for i in indexes))
            self.subscribers.extend(opened)

    async def _open(self, target: Target, source: str, index: int) -> Subscriber:
        loop = asyncio.get_running_loop()
        query = urlencode(self.plan.query_of(index, self.clients), quote_via=quote)
        request = (
            f"GET /.well-known/mercure?{query} HTTP/1.1\r\nHost: {target.host}\r\n"
            "Accept: text/event-stream\r\n\r\n"
        ).encode()
        failure: Exception | None = None
        for attempt in range(20):
            subscriber = Subscriber(self, index, request)
            try:
                await loop.create_connection(
                    lambda s=subscriber: s,
                    "127.0.0.1",
                    target.port,
                    local_addr=(source, 0),
                    ssl=target.tls,
                )
                await subscriber.opened
                return subscriber
            except (OSError, RuntimeError) as exc:
                self.retries += 1
                self.failures[_reason(exc)] += 1
                failure = exc
                await asyncio.sleep(0.2 * (attempt + 1))
        raise ConnectionError(f"subscriber {index} could not connect: {failure!r}")

    def report(self, published: set[int]) -> dict[str, object]:
        """What was received against what was published and acknowledged."""
        lost = duplicated = reordered = closed = expected_total = 0
        last = 0.0
        for subscriber in self.subscribers:
            expected = [n for n in self.plan.expected(subscriber.index) if n in published]
            expected_total += len(expected)
            got = subscriber.got
            last = max(last, subscriber.last)
            lost += len(set(expected) - set(got))
            duplicated += len(got) - len(set(got))
            # one publisher connection waits for each 200 before its next update, so each
            # connection's updates must arrive in the order it sent them
            k = self.publishers
            reordered += any(
                (mine := [n for n in got if n % k == j]) != sorted(mine) for j in range(k)
            )
            closed += subscriber.closed
        usage = os.times()
        return {
            "connections": len(self.subscribers),
            "received": sum(len(s.got) for s in self.subscribers),
            "expected": expected_total,
            "last_received": last,
            "lost": lost,
            "duplicated": duplicated,
            "reordered_subscribers": reordered,
            "closed_early": closed,
            "connect_retries": self.retries,
            "connect_failures": dict(self.failures),
            "histogram": {str(k): v for k, v in self.histogram.items()},
            "cpu_seconds": usage.user + usage.system,
        }


async def run_fleet(args: argparse.Namespace) -> None:
    """Connect, say ``ready``, then collect until told ``stop`` (or all is received)."""
    plan = Plan(args.scenario, args.subscribers, args.updates, args.seed)
    fleet = Fleet(plan, args.first, args.count, args.connections, args.clients)
    await fleet.connect(args.port, args.source, target=Target.of(args))
    print(json.dumps({"ready": len(fleet.subscribers)}), flush=True)
    expected = sum(len(plan.expected(i)) for i in range(args.first, args.first + args.count))
    loop = asyncio.get_running_loop()
    stdin = asyncio.StreamReader(limit=1 << 26)
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(stdin), sys.stdin)
    stop = asyncio.ensure_future(stdin.readline())
    while not stop.done():
        if fleet.received >= expected and expected:
            print(json.dumps({"complete": fleet.received}), flush=True)
            break
        await asyncio.sleep(0.05)
    published = json.loads(await stop)  # the update numbers the publisher got a 200 for
    print(json.dumps(fleet.report(set(published))), flush=True)


# -- publisher -------------------------------------------------------------------------------


class _Connection(asyncio.Protocol):
    """A keep-alive HTTP/1.1 connection that sends one request at a time."""

    def __init__(self) -> None:
        self.transport: asyncio.Transport | None = None
        self.buffer = b""
        self.waiter: asyncio.Future[int] | None = None
        self.ready: asyncio.Future[None] = asyncio.get_running_loop().create_future()

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]
        self.ready.set_result(None)

    def data_received(self, data: bytes) -> None:
        self.buffer += data
        end = self.buffer.find(b"\r\n\r\n")
        if end < 0:
            return
        head = self.buffer[:end].decode("latin-1")
        length = int(re.search(r"(?i)content-length: (\d+)", head)[1])  # type: ignore[index]
        if len(self.buffer) < end + 4 + length:
            return
        self.buffer = self.buffer[end + 4 + length :]
        if self.waiter is not None and not self.waiter.done():
            self.waiter.set_result(int(head.split(" ", 2)[1]))

    async def request(self, payload: bytes) -> int:
        assert self.transport is not None
        self.waiter = asyncio.get_running_loop().create_future()
        self.transport.write(payload)
        return await self.waiter


def publisher_token(clients: str, port: int) -> str:
    """A token allowed to publish everything: 0.x (the ``mercure`` claim), or a 1.0 access
    token from ``ISSUER`` for the resource identifier the hub derives from ``Host``."""
    if clients == "v0":
        import jwt

        return jwt.encode({"mercure": {"publish": ["*"]}}, KEY, algorithm="HS256")
    from skipfilter.hub.frontends.v1.access_tokens import mint_access_token

    audience = f"http://127.0.0.1:{port}/.well-known/mercure"
    return mint_access_token(ISSUER, audience, KEY, publish=[("*", "exact")], ttl=3600)


async def run_publisher(args: argparse.Namespace) -> None:
    """POST the plan's updates at the steady rate over ``--connections`` keep-alive
    connections (round-robin, one request in flight each); print a JSON summary."""
    plan = Plan(args.scenario, args.subscribers, args.updates, args.seed)
    token = publisher_token(args.clients, args.port)
    target = Target.of(args)
    loop = asyncio.get_running_loop()
    connections = []
    for _ in range(args.connections):
        _, protocol = await loop.create_connection(
            _Connection, "127.0.0.1", args.port, ssl=target.tls
        )
        await protocol.ready
        connections.append(protocol)
    acks: list[float] = []
    sent_numbers: list[int] = []
    failures = Counter[int]()
    start = time.perf_counter() + 0.2
    stop_at = start + args.max_seconds

    async def send(connection: _Connection, numbers: range) -> None:
        for n in numbers:
            if time.perf_counter() > stop_at:  # a hub that cannot keep up: stop, bounded
                return
            delay = start + n / args.rate - time.perf_counter()
            if delay > 0:
                await asyncio.sleep(delay)
            form = [("topic", t) for t in plan.update(n)] + [("data", f"{n} {time.time():.6f}")]
            body = urlencode(form, quote_via=quote).encode()
            request = (
                f"POST /.well-known/mercure HTTP/1.1\r\nHost: {target.host}\r\n"
                f"Authorization: Bearer {token}\r\n"
                "Content-Type: application/x-www-form-urlencoded\r\n"
                f"Content-Length: {len(body)}\r\n\r\n"
            ).encode() + body
            sent = time.perf_counter()
            status = await connection.request(request)
            acks.append(time.perf_counter() - sent)
            if status == 200:
                sent_numbers.append(n)
            else:
                failures[status] += 1

    k = len(connections)
    await asyncio.gather(*(send(c, range(j, plan.updates, k)) for j, c in enumerate(connections)))
    elapsed = time.perf_counter() - start
    acks.sort()
    usage = os.times()
    print(
        json.dumps(
            {
                "seconds": elapsed,
                "published": len(acks),
                "numbers": sorted(sent_numbers),
                "failures": dict(failures),
                "ack_p50": acks[len(acks) // 2],
                "ack_p99": acks[min(len(acks) - 1, int(len(acks) * 0.99))],
                "cpu_seconds": usage.user + usage.system,
            }
        ),
        flush=True,
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("role", choices=("subscribers", "publisher"))
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--scenario", choices=("targeted", "broadcast"), default="broadcast")
    parser.add_argument("--subscribers", type=int, required=True)
    parser.add_argument("--updates", type=int, required=True)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--first", type=int, default=0)
    parser.add_argument("--count", type=int, default=0)
    parser.add_argument("--source", default="127.0.0.1")
    parser.add_argument("--rate", type=float, default=10.0)
    parser.add_argument("--connections", type=int, default=1, help="publisher connections")
    parser.add_argument("--max-seconds", type=float, default=3600.0)
    parser.add_argument("--clients", choices=CLIENTS, default="v0", help="protocol spoken")
    parser.add_argument("--tls", action="store_true", help="connect over TLS (to a proxy)")
    parser.add_argument("--host", help="the Host header (default 127.0.0.1:PORT)")
    args = parser.parse_args()
    _use_uvloop()
    asyncio.run(run_fleet(args) if args.role == "subscribers" else run_publisher(args))
    return 0


if __name__ == "__main__":
    sys.exit(main())
