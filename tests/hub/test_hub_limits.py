"""Limits a client runs into, each saying so: connections that never send a request, the
metrics listener, a publish's field count, reserved ids."""

from __future__ import annotations

import argparse
import dataclasses
import socket
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx
import pytest

from skipfilter.hub import HubSettings
from skipfilter.hub.server.cli import add_arguments, settings_from_args
from tests.hub.hubtest import HUB, HubProcess, Server, Stream, free_port, pub_token, sub_token

BOOK = "https://example.com/books/1"


def _closed_by_hub(sock: socket.socket, within: float) -> bool:
    sock.settimeout(within)
    try:
        return sock.recv(1) == b""
    except TimeoutError:
        return False
    except OSError:
        return True


def test_connections_that_never_send_a_request_are_closed_and_free_their_room(
    tmp_path: Path, processes: list[HubProcess]
) -> None:
    history = str(tmp_path / "idle.sqlite3")
    hub = HubProcess(
        "--anonymous", "--history", history, "--header-timeout", "3", hard_open_files=200
    )
    processes.append(hub)
    assert "room for about 136 connections" in hub.output()
    idle = [socket.create_connection(("127.0.0.1", hub.port)) for _ in range(139)]
    idle.append(socket.create_connection(("127.0.0.1", hub.port)))
    idle[-1].sendall(b"GET /healthz HT")  # a request line that never ends
    try:
        started = time.monotonic()
        assert _closed_by_hub(idle[0], within=8), "an idle connection was never closed"
        assert 2.5 < time.monotonic() - started < 8  # --header-timeout 3
        assert all(_closed_by_hub(sock, within=2) for sock in idle)
        response = httpx.get(hub.url + "/healthz", timeout=5)
        assert response.status_code == 200  # the room they held is free again
        stream = Stream(hub, [BOOK])
        time.sleep(4)  # a stream sends no request head: it is never cut for that
        assert not stream.ended.is_set()
        stream.close()
    finally:
        for sock in idle:
            sock.close()


def test_a_kept_alive_connection_gets_the_head_timeout_from_its_last_answer(
    settings: HubSettings,
) -> None:
    """Requests on one connection for longer than ``header_timeout`` keep it open (each
    answer starts the wait for the next head anew); left idle, it is closed in time."""
    with Server(dataclasses.replace(settings, header_timeout=1.0)) as hub:
        host = hub.url.removeprefix("http://")
        with socket.create_connection(("127.0.0.1", hub.port), timeout=5) as sock:
            started = time.monotonic()
            while True:
                sock.sendall(f"GET /healthz HTTP/1.1\r\nHost: {host}\r\n\r\n".encode())
                assert sock.recv(4096).startswith(b"HTTP/1.1 200 OK\r\n")
                answered = time.monotonic()  # the hub's head timer counts from this answer
                if answered - started > 2.5:  # longer than header_timeout: still open
                    break
                time.sleep(0.3)
            assert _closed_by_hub(sock, within=4), "an idle kept-alive connection stayed open"
            # header_timeout 1 after the last answer, not 5 (uvicorn's keep-alive); the lower
            # bound leaves 0.5 s for the answer's way to this thread on a loaded machine
            assert 0.5 < time.monotonic() - answered < 3.0


def test_a_request_head_has_ten_seconds_by_default() -> None:
    """Slow clients on poor links get 10 s to send a request head unless told otherwise."""
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    assert settings_from_args(parser.parse_args(["--anonymous"]), {}).header_timeout == 10.0


def test_the_metrics_listener_serves_metrics_only(
    make_server: Callable[..., Server], settings: HubSettings
) -> None:
    server = make_server(settings, metrics=True)
    metrics = server.metrics_url.removesuffix("/metrics")
    assert httpx.get(server.metrics_url).status_code == 200
    token = {"Authorization": f"Bearer {pub_token()}"}
    refused = [
        httpx.get(metrics + HUB, params={"topic": BOOK}, timeout=5),
        httpx.post(metrics + HUB, data={"topic": BOOK}, headers=token, timeout=5),
        httpx.get(metrics + "/.well-known/mercure/subscriptions", timeout=5),
        httpx.get(metrics + "/", timeout=5),
    ]
    for response in refused:
        assert response.status_code == 404, response.request.url
        assert "only /metrics" in response.text
    assert server.hub.ring.head == 0  # nothing was published through it
    assert server.publish(BOOK).status_code == 200  # the public address still serves


def test_metrics_are_refused_on_the_public_address_when_only_the_host_differs(
    make_server: Callable[..., Server], settings: HubSettings
) -> None:
    port = free_port()  # the same port on two loopback addresses
    server = make_server(settings, metrics=f"127.0.0.1:{port}", addr=f"127.0.0.2:{port}")
    assert server.url == f"http://127.0.0.2:{port}"
    hidden = httpx.get(server.url + "/metrics", timeout=5)
    assert hidden.status_code == 404 and "--metrics-addr" in hidden.text
    assert httpx.get(server.metrics_url, timeout=5).status_code == 200
    stream = Stream(server, [BOOK])
    assert server.publish(BOOK, id="public").status_code == 200
    assert stream.event().id == "public"
    stream.close()


def test_a_thousand_topics_with_data_and_every_field_are_accepted(server: Server) -> None:
    topics = [f"https://example.com/t/{i}" for i in range(1000)]
    response = server.publish(topics, data="d", id="many", type="t", retry="5", private="on")
    assert response.status_code == 200, response.text
    too_many = server.publish([*topics, "https://example.com/t/1000"], data="d")
    assert too_many.status_code == 400 and "too many topics: 1001 > 1000" in too_many.text
    boundary = "b0undary"
    parts = [("topic", t) for t in topics] + [("data", "d"), ("id", "multi"), ("private", "")]
    body = "".join(
        f'--{boundary}\r\nContent-Disposition: form-data; name="{name}"\r\n\r\n{value}\r\n'
        for name, value in parts
    )
    with server.client() as client:
        multipart = client.post(
            HUB,
            content=f"{body}--{boundary}--\r\n".encode(),
            headers={
                "Authorization": f"Bearer {pub_token()}",
                "Content-Type": f"multipart/form-data; boundary={boundary}",
            },
        )
    assert multipart.status_code == 200, multipart.text
    flood = server.publish([*topics, *topics[:10]], data="d")
    assert flood.status_code == 400 and "too many form fields: more than 1005" in flood.text


def test_publishing_the_reserved_id_earliest_is_refused(
    server: Server, streams: Callable[..., Stream]
) -> None:
    assert server.publish(BOOK, id="first").status_code == 200
    response = server.publish(BOOK, id="earliest")
    assert response.status_code == 400
    assert "'id'" in response.text and "'earliest' is reserved" in response.text
    resumed = streams(server, [BOOK], headers={"Last-Event-ID": "earliest"})
    assert resumed.event().id == "first"  # earliest still means the whole history
    resumed.nothing(0.3)


SUBS = "/.well-known/mercure/subscriptions"
_API = {"Authorization": f"Bearer {sub_token(SUBS, SUBS + '/{t}', SUBS + '/{t}/{s}')}"}


def _held_subscribers(node: Server, first: int, count: int) -> list[socket.socket]:
    """Subscribers ``first..first + count`` of 64 selectors each, as raw sockets."""
    held = []
    for i in range(first, first + count):
        query = "&".join(f"topic=https://example.com/u/{i}/{j}" for j in range(64))
        sock = socket.create_connection(("127.0.0.1", node.port))
        sock.sendall(f"GET {HUB}?{query} HTTP/1.1\r\nHost: h\r\n\r\n".encode())
        assert sock.recv(12) == b"HTTP/1.1 200"
        held.append(sock)
    return held


def _all_pages(node: Server, path: str = SUBS) -> tuple[list[dict[str, Any]], int]:
    """Every subscription listed from ``path``, following ``next``; and the pages read."""
    docs: list[dict[str, Any]] = []
    pages = 0
    next_path: str | None = path
    with node.client(headers=_API) as client:
        while next_path is not None:
            response = client.get(next_path)
            assert response.status_code == 200, response.text
            body = response.json()
            assert len(body["subscriptions"]) < 1000 + 128  # a page, never everything at once
            docs += body["subscriptions"]
            pages += 1
            next_path = body.get("next")
            if next_path is not None:
                assert f'<{next_path}>; rel="next"' in response.headers["link"].split(", ")
    return docs, pages


@pytest.mark.parametrize("transport", ["sqlite", "redis"])
def test_the_subscriptions_api_answers_in_bounded_pages(
    request: pytest.FixtureRequest, settings: HubSettings, transport: str
) -> None:
    if transport == "redis":
        nodes = [request.getfixturevalue("redis_hub")(subscriptions=True) for _ in range(2)]
    else:
        nodes = [Server(settings.with_changes(subscriptions=True)).__enter__()]
        request.addfinalizer(nodes[0].__exit__)
    each = 40 // len(nodes)
    held = [s for i, node in enumerate(nodes) for s in _held_subscribers(node, i * each, each)]
    try:
        expected = 40 * 64  # 2,560 subscriptions: more than a page
        deadline = time.monotonic() + 20
        while len(docs := _all_pages(nodes[0])[0]) < expected:  # recorded in the background
            assert time.monotonic() < deadline, len(docs)
            time.sleep(0.2)
        docs, pages = _all_pages(nodes[-1])  # any node lists every node's
        assert pages >= 3
        assert len(docs) == expected
        assert len({d["id"] for d in docs}) == expected  # each once
        topic = "https://example.com/u/7/3"
        by_topic, _ = _all_pages(nodes[0], f"{SUBS}/{quote(topic, safe='')}")
        assert [d["topic"] for d in by_topic] == [topic]
        one = by_topic[0]
        with nodes[0].client(headers=_API) as client:
            assert client.get(one["id"]).json()["subscriber"] == one["subscriber"]
            bad = client.get(SUBS, params={"after": "nonsense"})
        assert bad.status_code == 400 and "invalid 'after' cursor" in bad.text
    finally:
        for sock in held:
            sock.close()
