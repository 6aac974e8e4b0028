"""The chaos soak (``benchmarks/chaos.py``) as a test: a seeded run with every kind of fault
and zero violations; and, one test each, the defects the soak found (each failed before
its fix)."""

from __future__ import annotations

import asyncio
import socket

import httpx

from tests.hub.hubtest import HUB, Server, pub_token


def test_each_publisher_is_answered_with_its_own_id_when_publishes_share_a_batch(
    server: Server,
) -> None:
    """Publishes that arrive together share a commit and a fan-out batch; each 200 must
    name the publisher's own update (one batch answered every publisher with its last id)."""
    headers = {"Authorization": f"Bearer {pub_token()}"}

    async def publish_all() -> list[tuple[str, str]]:
        async with httpx.AsyncClient(base_url=server.url, timeout=30) as client:

            async def one(i: int) -> tuple[str, str]:
                data = {"topic": "https://example.com/t", "id": f"own-{i}"}
                response = await client.post(HUB, data=data, headers=headers)
                assert response.status_code == 200, response.text
                return f"own-{i}", response.text

            return await asyncio.gather(*(one(i) for i in range(60)))

    answers = asyncio.run(publish_all())
    assert server.hub.fanout.batches > 0  # some publishes did go out together
    assert [sent for sent, _ in answers] == [got for _, got in answers]


def test_a_drain_reaches_every_connection_already_accepted() -> None:
    """A connection accepted just before the drain got its protocol after uvicorn had told
    every connection to close, so it stayed open (keep-alive) and the drain ran to its
    deadline. Stopping the acceptor now returns once accepted connections have one."""
    from skipfilter.hub.accept import Acceptor

    async def go() -> list[str]:
        loop = asyncio.get_running_loop()
        listener = socket.socket()
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        made: list[str] = []

        class Recorder(asyncio.Protocol):
            def connection_made(self, transport: asyncio.BaseTransport) -> None:
                made.append("made")
                transport.close()

        acceptor = Acceptor(loop, listener, Recorder, capacity=10, count=lambda: 0)
        acceptor.start()
        client = socket.create_connection(listener.getsockname())
        acceptor._ready()  # what the loop does when the connection arrives
        await acceptor.stop()  # the drain begins right then
        seen = list(made)
        client.close()
        listener.close()
        return seen

    assert asyncio.run(go()) == ["made"]


def test_resetting_a_connection_whose_socket_is_gone_is_quiet() -> None:
    """uvloop hands out a socket with descriptor -1 once a transport is closed: resetting
    it raised ValueError in a timer callback (logged as an error by every drain)."""
    import uvloop

    from skipfilter.hub.native import reset

    async def go() -> None:
        loop = asyncio.get_running_loop()
        server = await loop.create_server(asyncio.Protocol, "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        transport, _ = await loop.create_connection(asyncio.Protocol, "127.0.0.1", port)
        transport.get_extra_info("socket")  # as uvicorn does when a connection is made
        transport.close()
        await asyncio.sleep(0.05)
        reset(transport)  # type: ignore[arg-type]  # the timer a stream's close arms
        server.close()

    uvloop.run(go())
