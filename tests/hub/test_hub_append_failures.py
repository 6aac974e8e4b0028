"""Appends that fail, on a real redis-server and a real SQLite file: each publisher hears
of it at once, in the words that say whether its update may be stored, and the transport
goes on storing the next ones. None of them may wait for the hub's delivery timeout."""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import sqlite3
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import httpx
import pytest
import redis

from skipfilter.hub import HubSettings
from skipfilter.hub.core.hub import DELIVERY_TIMEOUT
from skipfilter.hub.transports import TransportUnavailable, open_transport
from skipfilter.hub.update import Entry, Update
from tests.hub.hubtest import HUB, Server, Stream, pub_token
from tests.hub.redis_server import RedisServer
from tests.hub.test_hub_transports import Delivered

TOPIC = "https://example.com/books/1"


def _publish(node: Server, update_id: str, timeout: float) -> tuple[httpx.Response, float]:
    """POST one update on a connection of its own; its answer and how long it took."""
    form = urlencode({"topic": TOPIC, "data": "x", "id": update_id}).encode()
    headers = {
        "Authorization": f"Bearer {pub_token()}",
        "Content-Type": "application/x-www-form-urlencoded",
    }
    started = time.monotonic()
    with httpx.Client(base_url=node.url, timeout=timeout) as client:
        response = client.post(HUB, content=form, headers=headers)
    return response, time.monotonic() - started


def _until(check: Any, what: str, timeout: float = 5) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, f"not within {timeout} s: {what}"
        time.sleep(0.005)


def _evalsha_calls(admin: redis.Redis) -> int:
    stats = admin.info("commandstats").get("cmdstat_evalsha", {})
    return int(stats.get("calls", 0)) + int(stats.get("rejected_calls", 0))


def test_a_script_call_redis_refuses_whole_answers_every_publisher_of_its_group_at_once(
    redis_server: RedisServer, settings: HubSettings
) -> None:
    """The stream key holds a string: the append script's XLEN raises WRONGTYPE, and Redis
    refuses the whole call, after storing nothing. Publishes made while the first group is
    held by Redis (CLIENT PAUSE WRITE) go together as one call of five entries; each of the
    five gets its own 503 as soon as Redis answers, not at the delivery timeout."""
    admin = redis.Redis(port=redis_server.port, socket_timeout=10)
    with Server(settings.with_changes(transport_url=redis_server.url)) as node:
        transport: Any = node.hub.transport
        admin.set("skipfilter:updates", "not a stream")
        admin.config_resetstat()
        pause = 3.0  # room for five threads to post under load; they group within it
        admin.client_pause(int(pause * 1000), all=False)  # writes (EVALSHA) wait
        paused_at = time.monotonic()
        answers: dict[str, tuple[httpx.Response, float] | Exception] = {}
        bound = 8.0  # a publisher left to the delivery timeout (30 s) fails here instead

        def publish(update_id: str) -> None:
            try:
                answers[update_id] = _publish(node, update_id, bound + pause)
            except httpx.HTTPError as exc:
                answers[update_id] = exc

        threads = [threading.Thread(target=publish, args=("first",))]
        threads[0].start()
        _until(
            lambda: transport._append_lane is not None and transport._append_lane.waiting == 1,
            "the first group in flight",
        )
        grouped = [f"g{i}" for i in range(5)]
        threads += [threading.Thread(target=publish, args=(i,)) for i in grouped]
        for thread in threads[1:]:
            thread.start()
        _until(
            lambda: sum(len(job.updates) for job in transport._pending) == len(grouped),
            "five publishes waiting for the group in flight",
            pause,
        )
        assert time.monotonic() - paused_at < pause, "the pause ended before they grouped"
        for thread in threads:
            thread.join(bound + pause + 5)
        assert set(answers) == {"first", *grouped}
        for update_id, answer in answers.items():
            assert not isinstance(answer, Exception), f"{update_id}: no answer ({answer!r})"
            response, waited = answer
            assert response.status_code == 503, (update_id, response.text)
            assert "WRONGTYPE" in response.text, (update_id, response.text)
            assert waited < pause + 3 < DELIVERY_TIMEOUT, (update_id, waited)
        assert _evalsha_calls(admin) == 2  # six publishes, two calls: the five went as one
        assert admin.get("skipfilter:updates") == b"not a stream"  # nothing stored
        admin.delete("skipfilter:updates")  # repaired: publishing works again
        response, _ = _publish(node, "after", 10)
        assert response.status_code == 200 and response.text == "after"


def test_a_script_stopped_by_an_error_after_its_writes_says_the_update_may_be_stored(
    redis_server: RedisServer, settings: HubSettings, caplog: pytest.LogCaptureFixture
) -> None:
    """The cluster's sizes key holds a string: the append script stores the entry, then
    fails on HMGET (WRONGTYPE), and Redis keeps what it wrote. The entry is delivered, so
    neither its publisher nor the log may say "not stored": they say it may or may not be.
    The hub's reader can see the entry before the script's error comes back; then the
    publisher's update is delivered and its 200 is the truth."""
    caplog.set_level(logging.ERROR, logger="skipfilter.hub")
    admin = redis.Redis(port=redis_server.port, socket_timeout=10)
    with Server(settings.with_changes(transport_url=redis_server.url)) as node:
        subscriber = Stream(node, [TOPIC])
        admin.set("skipfilter:config", "not a hash")
        response, _ = _publish(node, "written", 10)
        if response.status_code != 200:
            assert response.status_code == 503 and "WRONGTYPE" in response.text, response.text
            assert "may or may not have been stored" in response.text, response.text
        else:
            assert response.text == "written"
        assert subscriber.event(10).id == "written"  # it was stored, and delivered
        subscriber.close()
    failures = [r.getMessage() for r in caplog.records if "WRONGTYPE" in r.getMessage()]
    assert failures, "the script's error was not logged"
    assert all("may or may not have been stored" in text for text in failures), failures
    assert not any("not stored" in text for text in failures), failures


@pytest.fixture
def replica(redis_server: RedisServer, tmp_path: Path) -> Iterator[RedisServer]:
    """A second redis-server replicating ``redis_server``, in sync."""
    (tmp_path / "replica").mkdir()
    with RedisServer(tmp_path / "replica") as running:
        copy = redis.Redis(port=running.port, socket_timeout=10)
        copy.replicaof("127.0.0.1", redis_server.port)
        _until(
            lambda: copy.info("replication").get("master_link_status") == "up",
            "the replica in sync",
            10,
        )
        try:
            yield running
        finally:
            if running.process is not None:
                running.process.send_signal(signal.SIGCONT)


def test_an_append_too_few_replicas_confirm_is_its_own_503_at_the_replica_timeout(
    redis_server: RedisServer, replica: RedisServer, settings: HubSettings
) -> None:
    """``?replicas=1``: with its replica answering, a publish is acknowledged; with the
    replica frozen (SIGSTOP), WAIT gives up at ``replica_timeout`` and the publisher gets a
    503 saying the update may or may not have been stored, then, not at the delivery
    timeout."""
    timeout_ms = 1000
    url = f"{redis_server.url}?replicas=1&replica_timeout={timeout_ms}"
    with Server(settings.with_changes(transport_url=url)) as node:
        response, _ = _publish(node, "held", 10)
        assert response.status_code == 200 and response.text == "held"
        assert replica.process is not None
        os.kill(replica.process.pid, signal.SIGSTOP)
        response, waited = _publish(node, "unconfirmed", 10)
        assert response.status_code == 503, response.text
        assert "0 of 1 replicas confirmed it within 1000 ms" in response.text, response.text
        assert "may or may not have been stored" in response.text, response.text
        assert timeout_ms / 1000 * 0.9 < waited < timeout_ms / 1000 + 3, waited
        os.kill(replica.process.pid, signal.SIGCONT)
        response, _ = _publish(node, "again", 10)
        assert response.status_code == 200 and response.text == "again"


_REFUSE = """
CREATE TRIGGER refuse BEFORE INSERT ON updates WHEN NEW.id = 'refused'
BEGIN SELECT RAISE(ABORT, 'the disk said no'); END
"""


def test_a_failed_sqlite_group_commit_is_rolled_back_and_the_next_publishes_are_stored(
    tmp_path: Path,
) -> None:
    """Three publishes of one turn share a transaction; SQLite aborts its second insert (a
    trigger another program installed). All three get the 503, none of them is stored or
    delivered, and the next publishes are committed, delivered and read back in order."""
    path = str(tmp_path / "h.sqlite3")

    async def publish(transport: Any, *ids: str) -> Entry:
        done: asyncio.Future[Entry] = asyncio.get_running_loop().create_future()
        updates = [Update(i, ("t",), f"d-{i}") for i in ids]
        transport.append(updates, [u.encode() for u in updates], done)
        return await asyncio.wait_for(done, 10)

    async def go() -> None:
        transport: Any = open_transport(HubSettings(anonymous=True, history_path=path))
        delivered = Delivered()
        await transport.start(asyncio.get_running_loop(), delivered)
        try:
            await publish(transport, "before")
            other = sqlite3.connect(path)
            other.executescript(_REFUSE)
            commits = transport.commits
            failed = await asyncio.gather(
                *(publish(transport, i) for i in ("kept?", "refused", "kept too?")),
                return_exceptions=True,
            )
            for failure in failed:  # one transaction: all three refused, with SQLite's words
                assert isinstance(failure, TransportUnavailable), failure
                assert "the disk said no" in str(failure)
            assert transport.commits == commits
            other.close()  # the trigger stays: it refuses that one id only
            await publish(transport, "next")
            await publish(transport, "and", "more")
            await delivered.wait_for(4)
            ids = ["before", "next", "and", "more"]
            assert [e.update.id for e in delivered.entries] == ids
            stored = await asyncio.wait_for(transport.read(None, None, None, 10, 1 << 20), 10)
            assert [e.update.id for e in stored] == ids
            assert [e.position for e in stored] == [e.position for e in delivered.entries]
            assert [e.position for e in stored] == [1, 2, 3, 4]  # no row of the failed group
            assert await asyncio.wait_for(transport.lookup("kept?"), 10) is None
        finally:
            await asyncio.wait_for(transport.close(), 10)

    asyncio.run(go())
