"""Helpers for the hub tests: a real uvicorn server on loopback and SSE readers.

Each test gets its own hub (own port, own SQLite file); the server runs in a thread of the
test process so tests can look at ``hub.index`` and ``hub.transport`` directly.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import queue
import resource
import signal
import socket
import ssl
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Protocol
from urllib.parse import urlencode

import httpx
import jwt
import uvicorn
from httpx_sse import EventSource, ServerSentEvent

from rigs.ports import restartable_port
from skipfilter.hub import Hub, HubSettings, create_app
from skipfilter.hub.http.runtime import runtime_of
from skipfilter.hub.server.serve import listen, uvicorn_config

PUBLISHER_KEY = "publisher-secret-for-tests-0123456789abcdef"
SUBSCRIBER_KEY = "subscriber-secret-for-tests-0123456789abcdef"
HUB = "/.well-known/mercure"
_SSL = ssl.create_default_context()  # built once: httpx would build one per client (slow)


def token(
    key: str = PUBLISHER_KEY, alg: str = "HS256", exp: float | None = 3600, **mercure: Any
) -> str:
    """A signed JWT with the given ``mercure`` claim (``exp`` seconds from now, or None)."""
    claims: dict[str, Any] = {"mercure": mercure}
    if exp is not None:
        claims["exp"] = int(time.time() + exp)
    return jwt.encode(claims, key, algorithm=alg)


def pub_token(*topics: str, **kw: Any) -> str:
    """Publisher token for ``topics`` (default: every topic)."""
    return token(PUBLISHER_KEY, publish=list(topics or ["*"]), **kw)


def sub_token(*topics: str, **kw: Any) -> str:
    """Subscriber token allowed to receive private updates on ``topics``."""
    return token(SUBSCRIBER_KEY, subscribe=list(topics), **kw)


def free_port() -> int:
    """A port a hub can be restarted on (outside the range handed to clients)."""
    return restartable_port()


class Server:
    """A uvicorn server running ``create_app(settings)`` in a background thread, configured
    as ``skipfilter hub`` configures it (``streams="native"``) or with ASGI streams."""

    def __init__(
        self,
        settings: HubSettings,
        streams: str = "native",
        metrics: bool | str = False,
        addr: str = "127.0.0.1:0",
    ):
        sockets = [listen(addr)]
        host, self.port = sockets[0].getsockname()[:2]
        self.url = f"http://{host}:{self.port}"
        self.metrics_url = ""
        if metrics:
            sockets.append(listen(metrics if isinstance(metrics, str) else "127.0.0.1:0"))
            metrics_host, metrics_port = sockets[1].getsockname()[:2]
            metrics_addr = f"{metrics_host}:{metrics_port}"
            settings = settings.with_changes(metrics_addr=metrics_addr)
            self.metrics_url = f"http://{metrics_addr}/metrics"
        self.settings = settings
        self.streams = streams
        self.app = create_app(settings)
        config = uvicorn_config(self.app, streams, "warning")
        config.timeout_graceful_shutdown = 1
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(
            target=self.server.run, kwargs={"sockets": sockets}, daemon=True
        )
        self._publisher: httpx.Client | None = None

    def __enter__(self) -> Server:
        self.thread.start()
        deadline = time.monotonic() + 10
        while not self.server.started:
            if time.monotonic() > deadline or not self.thread.is_alive():
                raise RuntimeError("hub did not start")
            time.sleep(0.01)
        return self

    def __exit__(self, *exc: object) -> None:
        if self._publisher is not None:
            self._publisher.close()
        self.server.should_exit = True
        self.thread.join(timeout=10)

    @property
    def hub(self) -> Hub:
        hub: Hub = self.app.state.hub
        return hub

    def call(self, coroutine: Any, timeout: float = 10) -> Any:
        """Run a coroutine on the hub's event loop (e.g. ``hub.transport.count()``)."""
        return asyncio.run_coroutine_threadsafe(coroutine, self.hub.loop).result(timeout)

    def stored(self) -> int:
        """Updates held in the hub's SQLite history."""
        return int(self.call(self.hub.transport.count()))

    def client(self, **kw: Any) -> httpx.Client:
        return httpx.Client(base_url=self.url, timeout=10, verify=_SSL, **kw)

    def publish(
        self,
        topics: str | list[str] = "https://example.com/books/1",
        data: str = "hello",
        auth: str | None = None,
        **fields: Any,
    ) -> httpx.Response:
        """POST an update; ``auth`` defaults to a publish-everything token."""
        topic_list = [topics] if isinstance(topics, str) else topics
        form: list[tuple[str, str]] = [("topic", t) for t in topic_list] + [("data", data)]
        form += [(k, str(v)) for k, v in fields.items()]
        headers = {
            "Authorization": f"Bearer {auth or pub_token()}",
            "Content-Type": "application/x-www-form-urlencoded",
        }
        if self._publisher is None:
            self._publisher = self.client()
        return self._publisher.post(HUB, content=urlencode(form).encode(), headers=headers)

    def wait_subscribers(self, n: int, timeout: float = 5) -> None:
        """Block until the hub has exactly ``n`` connected subscribers."""
        deadline = time.monotonic() + timeout
        while len(self.hub) != n:
            if time.monotonic() > deadline:
                raise AssertionError(f"expected {n} subscribers, hub has {len(self.hub)}")
            time.sleep(0.01)


class Reachable(Protocol):
    """What a ``Stream`` needs of a hub: where it listens (a ``Server``, a ``HubProcess``)."""

    @property
    def url(self) -> str: ...


@dataclass
class Stream:
    """A subscriber connection read in a background thread (events, or raw lines)."""

    server: Reachable
    topics: list[str]
    headers: dict[str, str] = field(default_factory=dict)
    params: dict[str, str] | list[tuple[str, str]] = field(default_factory=dict)
    raw: bool = False
    items: queue.Queue[Any] = field(default_factory=queue.Queue)
    response: httpx.Response | None = None
    ended: threading.Event = field(default_factory=threading.Event)
    opened: threading.Event = field(default_factory=threading.Event)
    error: BaseException | None = None

    def __post_init__(self) -> None:
        self._client = httpx.Client(
            base_url=self.server.url, timeout=httpx.Timeout(10, read=60), verify=_SSL
        )
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()
        if not self.opened.wait(10):
            raise AssertionError("stream did not open")

    def _run(self) -> None:
        extra = self.params.items() if isinstance(self.params, dict) else self.params
        params = tuple([("topic", t) for t in self.topics] + list(extra))
        try:
            with self._client.stream("GET", HUB, params=params, headers=self.headers) as resp:
                self.response = resp
                self.opened.set()
                if resp.status_code != 200:
                    resp.read()
                    return
                if self.raw:
                    for line in resp.iter_lines():
                        self.items.put(line)
                else:
                    for event in EventSource(resp).iter_sse():
                        self.items.put(event)
        except (httpx.HTTPError, RuntimeError, OSError) as exc:
            self.error = exc
        finally:
            self.opened.set()
            self.ended.set()

    def next(self, timeout: float = 5) -> Any:
        try:
            return self.items.get(timeout=timeout)
        except queue.Empty:
            raise AssertionError(f"nothing received within {timeout}s") from None

    def event(self, timeout: float = 5) -> ServerSentEvent:
        item = self.next(timeout)
        assert isinstance(item, ServerSentEvent)
        return item

    def nothing(self, wait: float = 0.3) -> None:
        """Assert nothing arrives within ``wait`` seconds."""
        with contextlib.suppress(queue.Empty):
            item = self.items.get(timeout=wait)
            raise AssertionError(f"unexpected {item!r}")

    def close(self) -> None:
        """Drop the connection now (shutting the socket down wakes the reader thread)."""
        if self.response is not None and not self.ended.is_set():
            stream = self.response.extensions.get("network_stream")
            sock = stream.get_extra_info("socket") if stream is not None else None
            if sock is not None:
                with contextlib.suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)
        self._client.close()
        self._thread.join(timeout=5)


class HubProcess:
    """``python -m skipfilter.cli hub ...`` on a free port, as a separate process; what it
    prints goes to a temporary file (a pipe nobody reads could fill up and stall it)."""

    def __init__(
        self,
        *args: str,
        env: dict[str, str] | None = None,
        open_files: int | None = None,
        hard_open_files: int | None = None,
        compatibility: bool = True,
        port: int | None = None,
        verify: ssl.SSLContext | None = None,
    ) -> None:
        """``verify``: the hub serves HTTPS (``--tls-cert`` among ``args``), trusted so."""
        self.port = port or free_port()
        self.url = f"{'https' if verify else 'http'}://127.0.0.1:{self.port}"
        cmd = [sys.executable, "-m", "skipfilter.cli", "hub", "--addr", f"127.0.0.1:{self.port}"]
        # the 0.x tests run in compatibility mode; a 1.0 test passes compatibility=None
        compat = ["--protocol-version-compatibility", "8"] if compatibility else []

        def limit_files() -> None:  # start the hub with a low soft limit, as many shells do
            hard = hard_open_files or resource.getrlimit(resource.RLIMIT_NOFILE)[1]
            if open_files is not None or hard_open_files is not None:
                resource.setrlimit(resource.RLIMIT_NOFILE, (open_files or hard, hard))

        self.log = tempfile.TemporaryFile(mode="w+")  # noqa: SIM115 - lives as long as the hub
        self.proc = subprocess.Popen(
            [*cmd, "--heartbeat", "0", "--log-level", "warning", *compat, *args],
            env={**os.environ, **(env or {})},
            stdout=self.log,
            stderr=subprocess.STDOUT,
            text=True,
            preexec_fn=limit_files,
        )
        deadline = time.monotonic() + 20
        while True:
            try:
                probe = httpx.get(self.url + "/healthz", timeout=1, verify=verify or _SSL)
                if probe.status_code == 503 and "starting" in probe.text:
                    raise httpx.TransportError("still reaching its transport")  # it listens first
                probe.raise_for_status()
                break
            except httpx.TransportError:
                if time.monotonic() > deadline or self.proc.poll() is not None:
                    self.proc.kill()
                    raise AssertionError(f"hub did not start: {self.output()}") from None
                time.sleep(0.1)

    def output(self) -> str:
        """Everything the process printed so far."""
        self.log.seek(0)
        return self.log.read()

    def kill(self) -> str:
        """SIGKILL: no shutdown, no flush. Returns what it printed."""
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(10)
        return self.output()


def routed(server: Server) -> list[str]:
    """The publishes the app's publish route answers from now on, by Content-Type (the
    native path, which a publish without Origin takes, does not call it)."""
    handlers = runtime_of(server.app).serving()
    assert handlers is not None
    calls: list[str] = []
    original = handlers.publish

    async def publish(request: Any) -> Any:
        calls.append(request.headers.get("content-type", ""))
        return await original(request)

    handlers.publish = publish  # type: ignore[method-assign]  # a spy on the live route
    return calls
