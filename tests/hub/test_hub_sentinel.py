"""Hub nodes over a Redis Sentinel set of real processes: a failover takes back nothing
acknowledged or delivered, and the nodes follow the new primary without a restart.

Each test freezes both replicas (``DEBUG SLEEP``) while publishes flow on two nodes, then
takes the primary away: a primary that acknowledged or delivered what only it held could
lose it in the promotion. With ``?replicas=0`` (today's behaviour) both tests fail so:
publishes are acknowledged, and delivered, while no replica holds them. (Whether such
updates are then lost depends on where they were when the primary died: on loopback most
sit in the sleeping replicas' socket buffers and survive.)"""

from __future__ import annotations

import asyncio
import contextlib
import re
import socket
import time
from collections.abc import Callable, Iterator

import httpx
import pytest
import redis

from rigs.sentinel_set import SentinelSet
from skipfilter.hub import HubSettings
from skipfilter.hub.transports import open_transport
from skipfilter.hub.transports.redis.url import parse
from tests.hub.clients import Publishing, Resuming, check_delivery
from tests.hub.hubtest import PUBLISHER_KEY, SUBSCRIBER_KEY, HubProcess, pub_token, sub_token
from tests.hub.redis_sentinel import sentinel_available, sentinel_set, stored_ids

needs_sentinel = pytest.mark.skipif(
    not sentinel_available(), reason="redis-sentinel is not installed (make test installs it)"
)
__all__ = ["sentinel_set"]  # the fixture

TOPIC = "https://example.com/books/1"
#: Seconds within which publishes must be acknowledged again after the primary is lost
#: (Sentinel declares it down after 1 s and promotes in about 1-2 s more).
RECOVERY = 10.0
SUBSCRIPTIONS = "/.well-known/mercure/subscriptions"


def _listed(node: HubProcess) -> list[str]:
    """The topics of every node's subscriptions, as the subscriptions API on ``node`` says."""
    token = sub_token(SUBSCRIPTIONS, SUBSCRIPTIONS + "/{topic}/{subscriber}")
    response = httpx.get(
        node.url + SUBSCRIPTIONS, headers={"Authorization": f"Bearer {token}"}, timeout=10
    )
    assert response.status_code == 200, response.text
    return sorted(doc["topic"] for doc in response.json()["subscriptions"])


@pytest.fixture
def two_nodes(sentinel_set: SentinelSet) -> Iterator[list[HubProcess]]:
    url = sentinel_set.url(replica_timeout=500)
    env = {"MERCURE_PUBLISHER_JWT_KEY": PUBLISHER_KEY, "MERCURE_SUBSCRIBER_JWT_KEY": SUBSCRIBER_KEY}
    args = ("--anonymous", "--subscriptions", "--transport", url)
    nodes = [HubProcess(*args, env=env) for _ in range(2)]
    yield nodes
    for node in nodes:
        node.kill()


def _url_of(node: HubProcess) -> Callable[[], str]:
    """``node.url``, asked at each (re)connection as ``Resuming`` and ``Publishing`` do."""
    return lambda: node.url


def _drop(client: Resuming) -> None:
    """End a subscriber's current stream from its side: it reconnects as EventSource does."""
    response = client._response
    stream = response.extensions.get("network_stream") if response is not None else None
    sock = stream.get_extra_info("socket") if stream is not None else None
    if sock is not None:
        with contextlib.suppress(OSError):
            sock.shutdown(socket.SHUT_RDWR)


def _failover(
    servers: SentinelSet, nodes: list[HubProcess], take_primary_away: str
) -> tuple[list[Publishing], list[Resuming], float, int]:
    """Publish on both nodes with subscribers on both, freeze the replicas, take the primary
    away (``kill`` or ``pause``), wait for the promotion; returns the clients, the seconds
    until both nodes acknowledged again, and the new primary."""
    clients = [Resuming(_url_of(n), [TOPIC]) for n in nodes for _ in range(2)]
    for client in clients:
        client.wait_opened()
    publishers = [Publishing(_url_of(n), f"p{i}", pub_token(), TOPIC) for i, n in enumerate(nodes)]
    for publisher in publishers:
        publisher.wait_acked(20)
    old = servers.primary()
    for replica in servers.replicas():
        servers.freeze(replica, 2)
    time.sleep(0.3)  # what was on its way is answered
    acked = [len(p.acked) for p in publishers]
    delivered = [len(c.ids) for c in clients]
    time.sleep(1)  # publishes reach the primary alone: none may be acknowledged or delivered
    assert [len(p.acked) for p in publishers] == acked, "acknowledged while no replica held it"
    assert [len(c.ids) for c in clients] == delivered, "delivered while no replica held it"
    lost_at = time.monotonic()
    getattr(servers, take_primary_away)(old)
    new = servers.wait_for_failover(old)
    promoted = time.monotonic() - lost_at
    for client in clients:  # each resumes with Last-Event-ID, looked up on the new primary
        _drop(client)
    for publisher, before in zip(publishers, acked, strict=True):
        publisher.wait_acked(before + 10, timeout=RECOVERY + 10)
    recovered = time.monotonic() - lost_at
    print(
        f"{take_primary_away}: promoted after {promoted:.1f} s, both nodes acknowledged 10 "
        f"more after {recovered:.1f} s"
    )
    return publishers, clients, recovered, new


@needs_sentinel
def test_a_primary_killed_with_its_replicas_frozen_loses_nothing_acknowledged_or_delivered(
    sentinel_set: SentinelSet, two_nodes: list[HubProcess]
) -> None:
    """SIGKILL the primary while both replicas sleep and both nodes publish: every update
        acknowledged, and every update any subscriber got, is on the promoted primary; every
        subscriber (two per node, resuming with Last-Event-ID) gets each stored update once, in
        order; both nodes acknowledge again within RECOVERY seconds, without a restart, and their
    subscriptions API still lists every subscription."""
    publishers, clients, recovered, new = _failover(sentinel_set, two_nodes, "kill")
    try:
        for publisher in publishers:
            publisher.stop()
        stored = stored_ids(new)
        for client in clients:
            missing = set(client.ids) - set(stored)
            assert not missing, f"delivered, then lost in the failover: {sorted(missing)[:5]}"
        check_delivery(publishers, stored, clients)
        assert all(client.opened >= 2 for client in clients)  # they did resume
        assert recovered < RECOVERY, f"acknowledged again only after {recovered:.1f} s"
        for node in two_nodes:  # presence lives on: both nodes list all four subscribers
            assert _listed(node) == [TOPIC] * 4
    finally:
        for publisher in publishers:
            publisher.stop()
        for client in clients:
            client.close()


@needs_sentinel
def test_a_stopped_primary_resumed_after_the_promotion_takes_no_write_back(
    sentinel_set: SentinelSet, two_nodes: list[HubProcess]
) -> None:
    """SIGSTOP the primary (a partition, seen from the nodes) with the replicas asleep; once
    a replica is promoted, SIGCONT it: it must come back as a replica, and nothing it held
    alone was acknowledged or delivered; publishes on both nodes go on, acknowledged."""
    old = sentinel_set.primary()
    publishers, clients, recovered, new = _failover(sentinel_set, two_nodes, "pause")
    try:
        sentinel_set.resume(old)
        sentinel_set.wait_replica(old)  # Sentinel turns it into a replica of the new one
        for publisher in publishers:
            publisher.wait_acked(len(publisher.acked) + 10)
            publisher.stop()
        stored = stored_ids(new)
        for client in clients:
            missing = set(client.ids) - set(stored)
            assert not missing, f"delivered, then lost in the failover: {sorted(missing)[:5]}"
        check_delivery(publishers, stored, clients)
        assert all(client.opened >= 2 for client in clients)  # they did resume
        assert stored_ids(old) == stored  # the old primary holds the new one's history
        assert recovered < RECOVERY, f"acknowledged again only after {recovered:.1f} s"
    finally:
        for publisher in publishers:
            publisher.stop()
        for client in clients:
            client.close()


def test_a_sentinel_url_names_the_sentinels_service_database_and_replicas() -> None:
    target = parse(
        "rediss+sentinel://u:p%40ss@10.0.0.1:26379,[::1]:26380,s3:26381/cache/3"
        "?replicas=2&replica_timeout=250&prefix=hub&sentinel_password=s"
    )
    assert target.sentinels == (("10.0.0.1", 26379), ("::1", 26380), ("s3", 26381))
    assert (target.service, target.db, target.replicas, target.replica_timeout_ms) == (
        "cache",
        3,
        2,
        250,
    )
    assert (target.username, target.password, target.sentinel_password) == ("u", "p@ss", "s")
    assert target.tls and target.prefix == "hub"
    assert "p%40ss" not in target.url and "***" in target.url  # it is logged
    plain = parse("redis://h:1/2?prefix=p&other=ignored")  # as it always was
    assert (plain.url, plain.prefix, plain.replicas, plain.sentinel) == (
        "redis://h:1/2",
        "p",
        0,
        False,
    )
    assert parse("redis+sentinel://h:1/s").replicas == 1  # replicated unless told otherwise


@pytest.mark.parametrize(
    ("url", "says"),
    [
        ("redis+sentinel://h:1", "name the service"),
        ("redis+sentinel://h:1/s/0/x", "name the service"),
        ("redis+sentinel://h:1/s/zero", "database 'zero'"),
        ("redis+sentinel://h/s", "sentinel 'h' is not HOST:PORT"),
        ("redis+sentinel://h:1,h:99999/s", "sentinel 'h:99999'"),
        ("redis+sentinel://h:1/s?replicas=-1", "replicas='-1'"),
        ("redis+sentinel://h:1/s?replicas=1&replicas=2", "replicas is given 2 times"),
        ("redis+sentinel://h:1/s?replica_timeout=0", "replica_timeout='0'"),
        ("redis+sentinel://h:1/s?replica=1", "unknown parameter 'replica'"),
        ("redis://h:1/0?sentinel_password=x", "needs redis+sentinel"),
        ("memcached://h:1", "unknown transport URL"),
    ],
)
def test_a_bad_transport_url_is_refused_at_start_saying_what_is_wrong(url: str, says: str) -> None:
    with pytest.raises(ValueError, match=re.escape(says)):
        open_transport(HubSettings(anonymous=True, transport_url=url))


@needs_sentinel
def test_connections_to_a_sentinel_primary_stay_bounded(sentinel_set: SentinelSet) -> None:
    """Over Sentinel too, a request finding every pooled connection busy waits its bound,
    then fails, instead of opening another connection (a paused Redis would collect one per
    request)."""
    from skipfilter.hub.transports.redis import url as redis_url

    async def go() -> tuple[float, str, bool]:
        client = redis_url.client(redis_url.parse(sentinel_set.url()), 1, 0.5, False, 3)
        held = await client.connection_pool.get_connection()
        started = time.monotonic()
        try:
            await client.ping()
            refused = ""
        except Exception as exc:  # whatever it is, its text says why
            refused = str(exc)
        waited = time.monotonic() - started
        await client.connection_pool.release(held)
        answered = bool(await client.ping())
        await client.aclose()
        return waited, refused, answered

    waited, refused, answered = asyncio.run(asyncio.wait_for(go(), 30))
    assert "No connection available" in refused and 0.4 < waited < 3, (waited, refused)
    assert answered  # the connection, back in the pool, serves the next request


def test_a_sentinel_url_with_a_password_and_no_user_keeps_the_password() -> None:
    """``redis+sentinel://PASSWORD@hosts/...`` is a bare password, as redis-py reads
    ``redis://PASSWORD@host``: it authenticates, and is shown nowhere."""
    target = parse("redis+sentinel://Kq7w%2FS3cr3t@h:1,h:2/svc/0")
    assert (target.username, target.password) == (None, "Kq7w/S3cr3t")
    assert "Kq7w" not in target.url and "Kq7w" not in repr(target)


@needs_sentinel
def test_a_hub_authenticates_with_a_sentinel_url_s_bare_password(
    sentinel_set: SentinelSet,
) -> None:
    """Data servers that require a password: a hub given it without a user publishes and
    stores (dropped, every connection gets NOAUTH and the hub never serves); neither its
    answers nor its output show it."""
    secret = "Kq7wS3cr3tZ9"
    for port in sentinel_set.sentinels:  # the sentinels keep monitoring the servers
        with redis.Redis(port=port, socket_timeout=10) as sentinel:
            sentinel.execute_command("SENTINEL", "SET", "hub", "auth-pass", secret)
    for port in sentinel_set.servers:
        with redis.Redis(port=port, socket_timeout=10) as server:
            server.config_set("masterauth", secret)  # the replicas keep replicating
            server.config_set("requirepass", secret)
    url = sentinel_set.url(replica_timeout=2000).replace("://", f"://{secret}@", 1)
    node = HubProcess(
        "--anonymous", "--transport", url, env={"MERCURE_PUBLISHER_JWT_KEY": PUBLISHER_KEY}
    )
    try:
        published = httpx.post(
            node.url + "/.well-known/mercure",
            data={"topic": TOPIC, "id": "with-the-password"},
            headers={"Authorization": f"Bearer {pub_token()}"},
            timeout=20,
        )
        assert (published.status_code, published.text) == (200, "with-the-password")
        ready = httpx.get(node.url + "/readyz", timeout=10)
        assert ready.status_code == 200 and secret not in ready.text
        primary = sentinel_set.primary()
        with redis.Redis(port=primary, password=secret, decode_responses=True) as store:
            ids = [f["i"] for _, f in store.xrange("skipfilter:updates") if f.get("k") != "e"]
        assert ids == ["with-the-password"]
    finally:
        output = node.kill()
    assert secret not in output and "redis+sentinel://:***@" in output, output
