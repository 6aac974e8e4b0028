"""The client against the real hub on loopback, in Mercure 1.0 and compatibility mode:
publish and receive, private updates, tokens renewed across ``exp``, resumption after a hub
restart and a drained node, the gap signal, and every error a program must tell apart."""

from __future__ import annotations

import asyncio
import signal
import socket
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import jwt
import pytest

from skipfilter.client import (
    AsyncPublisher,
    Forbidden,
    InvalidRequest,
    Publisher,
    Refused,
    TokenMinter,
    TooLarge,
    Unauthorized,
    Unavailable,
    Unreachable,
    subscribe,
)
from skipfilter.hub import HubSettings
from tests.client.clienttest import MODES, Reader, hub_settings, hub_url
from tests.hub import hubtest
from tests.hub.hubtest import PUBLISHER_KEY, SUBSCRIBER_KEY, HubProcess, Server, free_port
from tests.hub.v1test import ISSUER

BOOK = "https://example.com/books/1"
OTHER = "https://example.com/books/2"


@pytest.fixture
def servers() -> Iterator[Callable[..., Server]]:
    """Start in-process hubs (``servers(settings, addr=...)``); all stopped at teardown."""
    started: list[Server] = []

    def start(settings: HubSettings, **kw: str) -> Server:
        server = Server(settings, **kw).__enter__()
        started.append(server)
        return server

    yield start
    for server in started:
        server.__exit__()


@pytest.fixture
def readers() -> Iterator[Callable[..., Reader]]:
    opened: list[Reader] = []

    def open_reader(*args: str, **kw: Any) -> Reader:  # Reader's own keywords
        reader = Reader(*args, **kw)
        opened.append(reader)
        return reader

    yield open_reader
    for reader in opened:
        reader.close()


def publisher(url: str, legacy: bool = False, **kw: object) -> Publisher:
    if legacy:
        return Publisher(url, key=PUBLISHER_KEY, legacy=True, **kw)  # type: ignore[arg-type]
    return Publisher(url, key=PUBLISHER_KEY, issuer=ISSUER, **kw)  # type: ignore[arg-type]


def wait_for(server: Server, subscribers: int) -> None:
    server.wait_subscribers(subscribers, timeout=10)


# -- publish and receive ------------------------------------------------------------------


@pytest.mark.parametrize(("mode", "legacy"), [("1.0", False), ("compat", False), ("compat", True)])
def test_published_updates_arrive_with_their_fields(
    tmp_path: Path,
    servers: Callable[..., Server],
    readers: Callable[..., Reader],
    mode: str,
    legacy: bool,
) -> None:
    server = servers(hub_settings(tmp_path, mode))
    url = hub_url(server)
    reader = readers(url, BOOK, legacy=legacy)
    wait_for(server, 1)
    with publisher(url, legacy) as pub:
        first = pub.publish(BOOK, "two\nlines", id="book-1-v1", type="book")
        second = pub.publish([OTHER, BOOK], "")  # several topics, one matches; empty data
        pub.publish(OTHER, "not for this subscriber")
        last = pub.publish(BOOK, "last", retry=50)
    assert first == "book-1-v1" and second.startswith("urn:uuid:")
    got = reader.take(3)
    assert [(u.id, u.data, u.type) for u in got] == [
        ("book-1-v1", "two\nlines", "book"),
        (second, "", "message"),
        (last, "last", "message"),
    ]
    assert reader.empty()
    assert reader.subscription.retry == 0.05  # the hub's ``retry: 50`` is now the delay


def test_url_pattern_subscriptions(
    tmp_path: Path, servers: Callable[..., Server], readers: Callable[..., Reader]
) -> None:
    server = servers(hub_settings(tmp_path, "1.0"))
    url = hub_url(server)
    reader = readers(url, match_urlpattern=["https://example.com/books/:id"])
    wait_for(server, 1)
    with publisher(url) as pub:
        pub.publish("https://example.com/authors/1", "no")
        wanted = pub.publish(OTHER, "yes")
    assert reader.next().id == wanted


@pytest.mark.parametrize("mode", MODES)
def test_private_updates_reach_only_subscribers_granted_them(
    tmp_path: Path, servers: Callable[..., Server], readers: Callable[..., Reader], mode: str
) -> None:
    server = servers(hub_settings(tmp_path, mode))
    url = hub_url(server)
    granted = TokenMinter(SUBSCRIBER_KEY, issuer=ISSUER, audience=url, subscribe=[BOOK])
    allowed = readers(url, BOOK, token=granted)
    anonymous = readers(url, BOOK)
    wait_for(server, 2)
    with publisher(url) as pub:
        secret = pub.publish(BOOK, "secret", private=True)
        public = pub.publish(BOOK, "public")
    assert [u.id for u in allowed.take(2)] == [secret, public]
    assert anonymous.next().id == public  # the private one, sent first, never came


async def _async_round_trip(url: str, legacy: bool) -> list[str]:
    subscription = subscribe(url, [BOOK], legacy=legacy, reconnect_delay=0.05)
    received: list[str] = []

    async def read() -> None:
        async for update in subscription:
            received.append(update.id)
            if len(received) == 2:
                return

    task = asyncio.create_task(read())
    while subscription.connections == 0:
        await asyncio.sleep(0.01)
    kw = {"legacy": True} if legacy else {"issuer": ISSUER}
    async with AsyncPublisher(url, key=PUBLISHER_KEY, **kw) as pub:
        sent = [await pub.publish(BOOK, str(i)) for i in range(2)]
    await asyncio.wait_for(task, 10)
    assert received == sent
    return received


@pytest.mark.parametrize(("mode", "legacy"), [("1.0", False), ("compat", True)])
def test_async_publisher_and_async_for(
    tmp_path: Path, servers: Callable[..., Server], mode: str, legacy: bool
) -> None:
    server = servers(hub_settings(tmp_path, mode))
    assert len(asyncio.run(_async_round_trip(hub_url(server), legacy))) == 2


def test_async_subscription_resumes_after_a_restart_and_raises_refusals(
    tmp_path: Path, servers: Callable[..., Server]
) -> None:
    addr = f"127.0.0.1:{free_port()}"
    settings = hub_settings(tmp_path, "1.0")
    first = servers(settings, addr=addr)
    url = hub_url(first)

    async def run() -> tuple[list[str], list[str], int]:
        subscription = subscribe(url, [BOOK], reconnect_delay=0.05)
        received: list[str] = []

        async def read() -> None:
            async for update in subscription:
                assert not update.gap
                received.append(update.id)
                if len(received) == 4:
                    return

        task = asyncio.create_task(read())
        while subscription.connections == 0:
            await asyncio.sleep(0.01)
        pub = AsyncPublisher(url, key=PUBLISHER_KEY, issuer=ISSUER, reconnect_for=20)
        sent = [await pub.publish(BOOK, str(i)) for i in range(2)]
        await asyncio.to_thread(first.__exit__)
        restart = asyncio.create_task(asyncio.to_thread(servers, settings, addr=addr))
        sent += [await pub.publish(BOOK, str(i)) for i in range(2, 4)]
        await restart
        await asyncio.wait_for(task, 10)
        await pub.aclose()
        refused = subscribe(url, match_urlpattern=["https://example.com/(unclosed"])
        with pytest.raises(InvalidRequest):
            async for _ in refused:
                pass
        return received, sent, subscription.connections

    received, sent, connections = asyncio.run(run())
    assert received == sent and connections == 2


# -- tokens across exp --------------------------------------------------------------------


def test_minted_tokens_are_renewed_across_exp_and_a_fixed_one_expires(
    tmp_path: Path, servers: Callable[..., Server], readers: Callable[..., Reader]
) -> None:
    server = servers(hub_settings(tmp_path, "1.0"))
    url = hub_url(server)
    minted = TokenMinter(SUBSCRIBER_KEY, issuer=ISSUER, audience=url, subscribe=[BOOK], ttl=2)
    reader = readers(url, BOOK, token=minted)  # the hub ends its stream at each exp
    wait_for(server, 1)
    renewing = publisher(url, ttl=2)
    fixed = Publisher(
        url, token=TokenMinter(PUBLISHER_KEY, issuer=ISSUER, audience=url, publish=["*"], ttl=2)()
    )
    before = [renewing.publish(BOOK, "before", private=True), fixed.publish(BOOK, "fixed")]
    time.sleep(2.3)  # both publishers' first tokens, and the subscriber's, have expired
    after = renewing.publish(BOOK, "after", private=True)
    with pytest.raises(Unauthorized) as refused:
        fixed.publish(BOOK, "expired")
    assert refused.value.error == "invalid_token" and refused.value.status == 401
    assert [u.id for u in reader.take(3)] == [*before, after]
    assert reader.subscription.connections >= 2  # reconnected with a fresh token
    renewing.close()
    fixed.close()


# -- restarts, drains, gaps ---------------------------------------------------------------


def test_resume_after_a_hub_restart_misses_nothing(
    tmp_path: Path, servers: Callable[..., Server], readers: Callable[..., Reader]
) -> None:
    addr = f"127.0.0.1:{free_port()}"
    settings = hub_settings(tmp_path, "1.0")
    first = servers(settings, addr=addr)
    url = hub_url(first)
    reader = readers(url, BOOK)
    wait_for(first, 1)
    pub = publisher(url, reconnect_for=20)
    sent = [pub.publish(BOOK, f"a{i}") for i in range(2)]
    sent.append(pub.publish(BOOK, "a2", retry=700))  # the reconnection time, from now on
    assert [u.id for u in reader.take(3)] == sent
    first.__exit__()  # the stream ends; reconnections are refused until the restart
    ended, down = time.monotonic(), reader.subscription.connections
    restart = threading.Timer(0.3, lambda: servers(settings, addr=addr))
    restart.start()
    sent += [pub.publish(BOOK, f"b{i}") for i in range(3)]  # retried until it is back
    restart.join()
    while reader.subscription.connections == down:
        time.sleep(0.005)
    assert time.monotonic() - ended > 0.5  # the hub's retry, not reconnect_delay (0.05 s)
    got = reader.take(3)
    assert [u.id for u in got] == sent[3:] and not any(u.gap for u in got)
    assert reader.subscription.connections == down + 1
    pub.close()


def test_a_hub_that_lost_the_last_id_reports_a_gap(
    tmp_path: Path, servers: Callable[..., Server], readers: Callable[..., Reader]
) -> None:
    addr = f"127.0.0.1:{free_port()}"
    first = servers(hub_settings(tmp_path, "1.0"), addr=addr)
    url = hub_url(first)
    reader = readers(url, BOOK)
    wait_for(first, 1)
    pub = publisher(url, reconnect_for=20)
    seen = pub.publish(BOOK, "seen")
    assert reader.next().id == seen
    first.__exit__()
    fresh = tmp_path / "fresh"
    fresh.mkdir()
    second = servers(hub_settings(fresh, "1.0"), addr=addr)  # a new, empty history
    wait_for(second, 1)
    pub.publish(OTHER, "meanwhile, nobody's")
    after = pub.publish(BOOK, "after the gap")
    update = reader.next()
    assert (update.id, update.gap) == (after, True)
    assert reader.subscription.gaps == 1
    later = pub.publish(BOOK, "later")
    assert (reader.next().id, reader.subscription.gaps) == (later, 1)  # one gap, once
    pub.close()


@pytest.mark.parametrize(("mode", "legacy"), [("1.0", False), ("compat", False), ("compat", True)])
def test_resuming_from_an_id_the_hub_never_issued_is_a_gap_and_earliest_is_not(
    tmp_path: Path,
    servers: Callable[..., Server],
    readers: Callable[..., Reader],
    mode: str,
    legacy: bool,
) -> None:
    server = servers(hub_settings(tmp_path, mode))
    url = hub_url(server)
    with publisher(url) as pub:
        stored = pub.publish(BOOK, "stored")
        unknown = readers(url, BOOK, last_event_id="urn:uuid:never-issued", legacy=legacy)
        everything = readers(url, BOOK, last_event_id="earliest", legacy=legacy)
        known = readers(url, BOOK, last_event_id=stored, legacy=legacy)
        wait_for(server, 3)
        live = pub.publish(BOOK, "live")
    assert [(u.id, u.gap) for u in unknown.take(1)] == [(live, True)]
    assert [(u.id, u.gap) for u in everything.take(2)] == [(stored, False), (live, False)]
    assert [(u.id, u.gap) for u in known.take(1)] == [(live, False)]


def test_a_drained_node_sigterm_its_subscriber_resumes_on_the_restarted_node(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    port = free_port()
    monkeypatch.setattr(hubtest, "free_port", lambda: port)  # restart on the same port
    env = {"MERCURE_PUBLISHER_JWT_KEY": PUBLISHER_KEY}
    history = str(tmp_path / "h.sqlite3")
    args: tuple[str, ...] = ("--issuer", ISSUER, "--anonymous", "--history", history)
    args += ("--shutdown-timeout", "3")
    node = HubProcess(*args, env=env, compatibility=False)
    url = node.url + hubtest.HUB
    reader = Reader(url, BOOK)
    restarted = None
    try:
        pub = publisher(url, reconnect_for=20)
        while reader.subscription.connections == 0:
            time.sleep(0.01)
        sent = [pub.publish(BOOK, f"a{i}") for i in range(3)]
        node.proc.send_signal(signal.SIGTERM)
        assert node.proc.wait(10) in (0, -signal.SIGTERM), node.output()
        assert [u.id for u in reader.take(3)] == sent  # all delivered before the drain
        with pytest.raises(Unreachable):
            Publisher(url, token="t", reconnect_for=0.2).publish(BOOK, "nobody listens")
        restarted = HubProcess(*args, env=env, compatibility=False)
        sent.append(pub.publish(BOOK, "after"))
        got = reader.next()
        assert (got.id, got.gap) == (sent[-1], False)
        assert reader.subscription.connections == 2
        pub.close()
    finally:
        reader.close()
        for process in (node, restarted):
            if process is not None and process.proc.poll() is None:
                process.kill()


# -- errors -------------------------------------------------------------------------------


def test_every_refusal_is_its_own_error_with_the_rfc_6750_code(
    tmp_path: Path, servers: Callable[..., Server]
) -> None:
    server = servers(hub_settings(tmp_path, "1.0", max_topics=2, anonymous=False))
    url = hub_url(server)
    with publisher(url) as pub, pytest.raises(InvalidRequest) as bad:
        pub.publish("/.well-known/mercure/subscriptions/x", "reserved")
    assert bad.value.status == 400 and "reserved namespace" in bad.value.description
    with pytest.raises(TooLarge) as large, publisher(url) as pub:
        pub.publish([BOOK, OTHER, "https://example.com/3"], "three topics")
    assert large.value.status == 413
    with pytest.raises(Unauthorized) as invalid, Publisher(url, token="not.a.jwt") as pub:
        pub.publish(BOOK)
    assert invalid.value.error == "invalid_token" and "malformed" in invalid.value.description
    with (
        pytest.raises(Unauthorized) as wrong_key,
        Publisher(url, key=SUBSCRIBER_KEY, issuer=ISSUER) as pub,
    ):
        pub.publish(BOOK)
    assert wrong_key.value.error == "invalid_token"
    with pytest.raises(Forbidden) as scope, publisher(url, grant=[OTHER]) as pub:
        pub.publish(BOOK)
    assert scope.value.error == "insufficient_scope" and BOOK in scope.value.description
    # a subscriber's refusals come out of the loop, and nothing is retried
    missing = Reader(url, BOOK)  # no token on a hub without anonymous subscribers
    assert isinstance(error := missing.error(), Unauthorized) and error.error is None
    minted = TokenMinter(SUBSCRIBER_KEY, issuer=ISSUER, audience=url, subscribe=[BOOK])
    bad_pattern = Reader(url, match_urlpattern=["https://example.com/(unclosed"], token=minted)
    assert isinstance(bad_pattern.error(), InvalidRequest)
    assert missing.subscription.connections == bad_pattern.subscription.connections == 0
    with pytest.raises(Refused) as elsewhere, publisher(server.url + "/not-a-hub") as pub:
        pub.publish(BOOK)
    assert type(elsewhere.value) is Refused and elsewhere.value.status in (404, 405)
    with publisher(url) as pub:  # and after all that, publishing works
        assert pub.publish(BOOK, "fine")


def test_a_503_may_have_stored_the_update_and_is_not_sent_again(
    tmp_path: Path, servers: Callable[..., Server]
) -> None:
    server = servers(hub_settings(tmp_path, "1.0"))
    with publisher(hub_url(server)) as pub:
        pub.publish(BOOK, "stored")
        server.hub.fanout.failed = "planted failure"  # the hub refuses publishes: 503
        with pytest.raises(Unavailable) as unavailable:
            pub.publish(BOOK, "refused")
    assert unavailable.value.status == 503 and unavailable.value.may_be_stored
    assert "not sent again" in str(unavailable.value)
    assert server.stored() == 1  # it was not, and the publisher did not try twice


def test_a_connection_lost_after_sending_is_not_retried(tmp_path: Path) -> None:
    """A server that reads the request and hangs up: the update may be stored (a real
    hub might have stored it), so one request, then Unavailable saying so."""
    listener = socket.create_server(("127.0.0.1", 0))
    requests: list[bytes] = []

    listener.settimeout(0.5)  # a retry would come at once: none within this is none

    def serve() -> None:
        while True:
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            with conn:
                requests.append(conn.recv(65536))

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    url = f"http://127.0.0.1:{listener.getsockname()[1]}/.well-known/mercure"
    with publisher(url) as pub, pytest.raises(Unavailable) as lost:
        pub.publish(BOOK, "maybe")
    thread.join(5)
    listener.close()
    assert lost.value.may_be_stored and not isinstance(lost.value, Unreachable)
    assert len(requests) == 1


def test_an_unreachable_hub_is_retried_then_reported_as_never_sent() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{probe.getsockname()[1]}/.well-known/mercure"
    started = time.monotonic()
    with publisher(url, reconnect_for=0.5) as pub, pytest.raises(Unreachable) as never:
        pub.publish(BOOK, "x")
    assert not never.value.may_be_stored and 0.3 < time.monotonic() - started < 3


# -- issue 39: ids every subscriber can resume from, and what no test caught -------------


@pytest.mark.parametrize(("mode", "legacy"), [("1.0", False), ("compat", True)])
def test_an_id_that_cannot_travel_back_in_last_event_id_is_refused_naming_it(
    tmp_path: Path, servers: Callable[..., Server], mode: str, legacy: bool
) -> None:
    """Old: ``urn:é-1`` got a 200, and every skipfilter.client subscriber of the topic
    raised UnicodeEncodeError at its next reconnection."""
    server = servers(hub_settings(tmp_path, mode))
    with publisher(hub_url(server), legacy) as pub:
        with pytest.raises(InvalidRequest) as bad:
            pub.publish(BOOK, "x", id="urn:é-1")
        assert bad.value.status == 400
        assert "urn:é-1" in bad.value.description and "ASCII" in bad.value.description
        assert server.stored() == 0
        assert pub.publish(BOOK, "x", id="urn:e 1") == "urn:e 1"  # a space inside is fine


def test_a_5xx_publish_is_sent_once(tmp_path: Path, servers: Callable[..., Server]) -> None:
    """The hub counts every 503 it answers a publish: exactly one request reached it, so
    the client did not send the update again (the hub may have stored it)."""
    server = servers(hub_settings(tmp_path, "1.0"))
    with publisher(hub_url(server), reconnect_for=5) as pub:
        pub.publish(BOOK, "stored")
        server.hub.fanout.failed = "planted failure"  # every publish now answers 503
        started = time.monotonic()
        with pytest.raises(Unavailable) as unavailable:
            pub.publish(BOOK, "maybe stored")
        assert unavailable.value.status == 503 and unavailable.value.may_be_stored
    time.sleep(0.3)  # a retry sent in the background would be counted by now
    assert server.hub.metrics.rejected[("publish", 503)] == 1
    assert time.monotonic() - started < 5  # raised at once, not after retrying


def test_resumes_after_two_drops_in_a_row_with_only_heartbeats_between(
    tmp_path: Path, servers: Callable[..., Server], readers: Callable[..., Reader]
) -> None:
    """Drop, reconnect, heartbeats and no update, drop again, an update published while
    away: the second resumption still sends the id received before the first, so the hub
    replays the update (a client that lost its id there would miss it, with no gap)."""
    addr = f"127.0.0.1:{free_port()}"
    settings = hub_settings(tmp_path, "1.0", heartbeat=0.05)
    first = servers(settings, addr=addr)
    url = hub_url(first)
    reader = readers(url, BOOK)
    wait_for(first, 1)
    pub = publisher(url, reconnect_for=20)
    seen = pub.publish(BOOK, "seen", retry=2500)  # reconnect 2.5 s after each drop
    assert reader.next().id == seen
    first.__exit__()  # drop 1
    second = servers(settings, addr=addr)
    deadline = time.monotonic() + 15
    while reader.subscription.connections < 2:
        assert time.monotonic() < deadline, "no reconnection"
        time.sleep(0.01)
    time.sleep(0.5)  # heartbeats only: about ten of them
    second.__exit__()  # drop 2
    dropped = time.monotonic()
    servers(settings, addr=addr)
    missed = pub.publish(BOOK, "published while it was away")
    assert reader.subscription.connections == 2, "published after it reconnected: retry"
    assert time.monotonic() - dropped < 2.5
    update = reader.next(timeout=15)
    assert (update.id, update.gap) == (missed, False)
    assert reader.subscription.connections == 3
    pub.close()


def test_a_token_is_renewed_margin_seconds_before_exp_not_after(
    tmp_path: Path, servers: Callable[..., Server], readers: Callable[..., Reader]
) -> None:
    """A subscriber connecting 3 s before its token's ``exp``, with a 4 s margin, presents
    a fresh token: the hub, which ends a stream at its token's ``exp``, keeps it open past
    the old one's (a minter renewing only once expired would be cut there)."""
    server = servers(hub_settings(tmp_path, "1.0"))
    url = hub_url(server)
    minter = TokenMinter(
        SUBSCRIBER_KEY, issuer=ISSUER, audience=url, subscribe=[BOOK], ttl=6, margin=4
    )
    first_exp = jwt.decode(minter(), options={"verify_signature": False})["exp"]
    while time.time() < first_exp - 3:  # now inside the margin, still valid for 3 s
        time.sleep(0.01)
    reader = readers(url, BOOK, token=minter)
    wait_for(server, 1)
    assert time.time() < first_exp
    while time.time() < first_exp + 1:
        time.sleep(0.05)
    assert reader.subscription.connections == 1  # not cut at the first token's exp
    with publisher(url) as pub:
        sent = pub.publish(BOOK, "private", private=True)  # its token still grants it
    assert reader.next().id == sent


def test_a_live_idle_stream_outlives_its_read_timeout_on_heartbeats(
    tmp_path: Path, servers: Callable[..., Server], readers: Callable[..., Reader]
) -> None:
    """The read timeout bounds silence, not a stream: heartbeats every 0.2 s keep a
    stream with a 1 s read timeout open for 3 s; then an update arrives on it."""
    server = servers(hub_settings(tmp_path, "1.0", heartbeat=0.2))
    url = hub_url(server)
    reader = readers(url, BOOK, read_timeout=1.0)
    wait_for(server, 1)
    time.sleep(3)
    assert reader.subscription.connections == 1
    with publisher(url) as pub:
        sent = pub.publish(BOOK, "still here")
    assert reader.next().id == sent and reader.subscription.connections == 1
