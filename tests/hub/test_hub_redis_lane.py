"""The Redis transport's lanes against a real redis-server: what they write is the Redis
protocol for any bytes, replies come back to the batch that asked, in order, Redis's
refusals in place; and a lane that cannot connect, loses its connection or meets a silent
server says so in the words the transport's 503s rely on."""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine, Iterator
from typing import Any

import pytest
import redis
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import ResponseError
from redis.exceptions import TimeoutError as RedisTimeoutError

from skipfilter.hub.transports.redis import lane as redis_lane
from skipfilter.hub.transports.redis import url as redis_url
from skipfilter.hub.transports.redis.failures import unsent
from skipfilter.hub.transports.redis.lane import Lane
from tests.hub.hubtest import free_port
from tests.hub.redis_server import RedisServer, redis_available


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RedisServer]:
    if not redis_available():
        pytest.skip("redis-server is not installed (make test installs it as root)")
    with RedisServer(tmp_path_factory.mktemp("lane")) as running:
        yield running


#: Seconds any of these tests may wait on Redis or a lane: a reply that never comes (sent to
#: the wrong batch, say) fails the test instead of hanging it. Loopback answers in ms.
DEADLINE = 2.0


def _run(work: Coroutine[Any, Any, Any], deadline: float = 10.0) -> Any:
    """``asyncio.run`` with a deadline on the whole test."""
    return asyncio.run(asyncio.wait_for(work, deadline))


async def _lane(url: str) -> Lane:
    return await asyncio.wait_for(redis_lane.connect(redis_url.parse(url), None), 5)


values = st.binary(max_size=300) | st.sampled_from([b"", b"\r\n", b"$3\r\nabc\r\n", b"*1\r\n"])


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(batches=st.lists(st.lists(values, min_size=1, max_size=8), min_size=1, max_size=6))
@example(batches=[[b"first", b"batch"], [b"second"], [b"third", b"", b"\r\n"]])  # not shrunk
def test_any_bytes_round_trip_and_each_batch_gets_its_own_replies(
    server: RedisServer, batches: list[list[bytes]]
) -> None:
    """ECHO of arbitrary bytes (CRLF, RESP look-alikes, empty): the batches, written one
    after another without waiting, get back exactly their own values, in order."""

    async def go() -> list[Any]:
        lane = await _lane(server.url)
        loop = asyncio.get_running_loop()
        futures = []
        for batch in batches:
            done: asyncio.Future[Any] = loop.create_future()
            lane.send([["ECHO", value] for value in batch], done.set_result, 5.0)
            futures.append(done)
        try:
            _, waiting = await asyncio.wait(futures, timeout=DEADLINE)
        finally:
            lane.close()
        assert not waiting, (
            f"{len(waiting)} of {len(batches)} batches got no (complete) reply in {DEADLINE} s"
        )
        return [future.result() for future in futures]

    assert _run(go()) == batches


def test_refusals_come_back_in_place(server: RedisServer) -> None:
    async def go() -> list[Any]:
        lane = await _lane(server.url)
        try:
            return await lane.call(
                [["SET", "lane:k", "text"], ["INCR", "lane:k"], ["GET", "lane:k"]], 5.0
            )
        finally:
            lane.close()

    ok, refused, value = _run(go())
    assert ok == b"OK" and value == b"text"
    assert isinstance(refused, ResponseError) and "not an integer" in str(refused)


def test_a_database_and_a_password_in_the_url_are_used(server: RedisServer) -> None:
    admin = redis.Redis(port=server.port)
    admin.config_set("requirepass", "lane-secret")
    try:
        authed = redis.Redis(port=server.port, password="lane-secret", db=3)

        async def go(url: str) -> Any:
            lane = await _lane(url)
            try:
                return await lane.call([["SET", "lane:db", "three"]], 5.0)
            finally:
                lane.close()

        _run(go(f"redis://:lane-secret@127.0.0.1:{server.port}/3"))
        assert authed.get("lane:db") == b"three"
        with pytest.raises(
            RedisConnectionError, match=r"Error connecting to .*(WRONGPASS|invalid)"
        ):
            _run(go(f"redis://:wrong@127.0.0.1:{server.port}/3"))
    finally:
        redis.Redis(port=server.port, password="lane-secret").config_set("requirepass", "")


def test_nothing_listening_is_a_connect_error_that_says_nothing_was_sent() -> None:
    with pytest.raises(RedisConnectionError) as caught:
        _run(_lane(f"redis://127.0.0.1:{free_port()}/0"))
    assert unsent(caught.value)  # the transport: "not stored", never "may be"


def test_a_connection_lost_after_sending_may_have_run(server: RedisServer) -> None:
    """Redis closes the connection under a batch: its callback learns it, worded as
    'may have run', and the lane refuses later batches at once."""

    async def go() -> tuple[Any, Any]:
        lane = await _lane(server.url)
        name = await lane.call([["CLIENT", "SETNAME", "doomed"], ["CLIENT", "ID"]], 5.0)
        killer = redis.asyncio.Redis(port=server.port)
        waiting: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        lane.send([["BLPOP", "lane:never", 5]], waiting.set_result, 10.0)
        await asyncio.wait_for(killer.client_kill_filter(_id=name[1]), 5)
        await asyncio.wait_for(killer.aclose(), 5)
        lost = await asyncio.wait_for(waiting, 5)
        later: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        lane.send([["PING"]], later.set_result, 1.0)
        return lost, later.result()

    lost, later = _run(go())
    assert isinstance(lost, RedisConnectionError) and not unsent(lost)
    assert later is lost


def test_a_silent_server_is_given_up_on_at_the_deadline(server: RedisServer) -> None:
    """CLIENT PAUSE stops Redis answering: the batch fails with a timeout after its own
    deadline, not before, and the lane is dropped."""

    async def go() -> tuple[Any, float, bool]:
        lane = await _lane(server.url)
        redis.Redis(port=server.port).client_pause(1500, all=True)
        loop = asyncio.get_running_loop()
        started = loop.time()
        answer: asyncio.Future[Any] = loop.create_future()
        lane.send([["PING"]], answer.set_result, 0.4)
        failure = await asyncio.wait_for(answer, 5)
        return failure, loop.time() - started, lane.usable

    failure, waited, usable = _run(go())
    assert isinstance(failure, RedisTimeoutError) and "Timeout reading" in str(failure)
    assert 0.35 <= waited < 1.4 and not usable
