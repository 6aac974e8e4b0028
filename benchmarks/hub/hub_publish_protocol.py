"""CPU per publish through uvicorn's httptools protocol, in process, without sockets (a script).

``hub_publish.py inprocess`` calls the apps as ASGI; this drives the protocol the server
runs (request bytes in, response bytes out, on in-memory transports, 16 connections each
sending its next publish when the answer comes): ``bare`` is uvicorn's protocol with the
bare Starlette app, ``lean`` the hub's protocol with the publish through the lean ASGI
app, ``native`` the hub's protocol answering plain publishes itself (``native_publish``).
Rows alternate, each in a process of its own, so a loaded machine shifts them alike::

    .venv/bin/python benchmarks/hub/hub_publish_protocol.py --count 20000 --rounds 3
"""

from __future__ import annotations

import argparse
import asyncio
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, cast

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1]))  # run by path: the repository root for benchmarks.*

from benchmarks.hub.hub_publish import (  # noqa: E402
    DATA,
    TOPIC,
    bare_app,
    in_memory_hub_app,
    tokens,
)

CONNECTIONS = 16


class Transport:
    """An in-memory transport: counts answers, and sends the next request on each."""

    def __init__(self, bench: Bench, port: int) -> None:
        self.bench = bench
        self.port = port
        self.protocol: Any = None
        self.closing = False

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return {"peername": ("127.0.0.1", self.port), "sockname": ("127.0.0.1", 1)}.get(
            name, default
        )

    def write(self, data: bytes) -> None:
        if data.startswith(b"HTTP/1.1 "):
            if not data.startswith(b"HTTP/1.1 200 "):
                raise RuntimeError(data.decode(errors="replace")[:300])
            self.bench.answered(self)

    def is_closing(self) -> bool:
        return self.closing

    def close(self) -> None:
        self.closing = True

    def pause_reading(self) -> None: ...
    def resume_reading(self) -> None: ...
    def set_write_buffer_limits(self, *args: Any) -> None: ...


class Bench:
    def __init__(self, request: bytes, count: int, loop: asyncio.AbstractEventLoop) -> None:
        self.request = request
        self.left = count
        self.sent = 0
        self.done = loop.create_future()
        self.loop = loop

    def send(self, transport: Transport) -> None:
        if self.sent < self.left:
            self.sent += 1
            self.loop.call_soon(transport.protocol.data_received, self.request)

    def answered(self, transport: Transport) -> None:
        self.left -= 1
        self.sent -= 1
        if self.left == 0 and not self.done.done():
            self.done.set_result(None)
        else:
            self.send(transport)


async def run(what: str, count: int) -> float:
    """CPU seconds per publish of ``what`` through the protocol."""
    import uvicorn
    from uvicorn.server import ServerState

    from skipfilter.hub.http.runtime import runtime_of
    from skipfilter.hub.server.serve import uvicorn_config

    app = in_memory_hub_app()
    async with app.router.lifespan_context(app):
        if what == "bare":
            config = uvicorn.Config(bare_app(), http="httptools", log_level="warning")
        else:
            config = uvicorn_config(app, "native", "warning")
            if what == "lean":
                runtime_of(app).native_publish = False
        config.load()
        state = ServerState()
        token = tokens("v1", 1, 1)[0]
        body = f"topic={TOPIC.replace(':', '%3A').replace('/', '%2F')}&data={DATA}".encode()
        request = (
            b"POST /.well-known/mercure HTTP/1.1\r\nHost: 127.0.0.1:1\r\n"
            + f"Authorization: Bearer {token}\r\n".encode()
            + b"Content-Type: application/x-www-form-urlencoded\r\n"
            + b"Content-Length: %d\r\n\r\n" % len(body)
            + body
        )
        loop = asyncio.get_running_loop()

        async def round_of(n: int) -> None:
            bench = Bench(request, n, loop)
            for port in range(CONNECTIONS):
                transport = Transport(bench, 10_000 + port)
                protocol = config.http_protocol_class(  # type: ignore[call-arg]
                    config=config, server_state=state, app_state={}, _loop=loop
                )
                transport.protocol = protocol
                # duck-typed: the protocol calls only what Transport defines
                protocol.connection_made(cast(asyncio.Transport, transport))
                bench.send(transport)
            await bench.done

        await round_of(1000)  # warm up: caches, the token
        started = time.process_time()
        await round_of(count)
        return (time.process_time() - started) / count


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--what", choices=("bare", "lean", "native"))
    parser.add_argument("--count", type=int, default=20_000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    if args.what:
        import uvloop

        print(uvloop.run(run(args.what, args.count)))
        return
    found: dict[str, list[float]] = {}
    for _ in range(args.rounds):
        for what in ("bare", "lean", "native"):
            argv = [sys.executable, __file__, "--what", what, "--count", str(args.count)]
            out = subprocess.run(argv, capture_output=True, text=True, check=True)
            found.setdefault(what, []).append(1e6 * float(out.stdout.split()[-1]))
    for what, times in found.items():
        shown = ", ".join(f"{t:.1f}" for t in times)
        print(f"{what:7} µs per publish: min {min(times):.1f}  ({shown})")


if __name__ == "__main__":
    main()
