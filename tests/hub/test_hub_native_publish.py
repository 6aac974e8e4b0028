"""A plain publish is answered inside the httptools protocol (``server/fast_publish.py``); every
other publish still takes the app, with the app's answer."""

from __future__ import annotations

import socket
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.hub.hubtest import HUB, Server, routed
from tests.hub.v1test import bearer, publisher, v1_settings

FORM = b"topic=https%3A%2F%2Fexample.com%2Fbooks%2F1&data=hello"
PLAIN = "application/x-www-form-urlencoded"


@pytest.fixture
def hub(tmp_path: Path) -> Iterator[Server]:
    with Server(v1_settings(tmp_path), metrics=True) as server:
        yield server


def request(server: Server, headers: dict[str, str], body: bytes = FORM) -> bytes:
    """A raw HTTP/1.1 publish (Content-Length added unless chunked)."""
    head = {"Host": server.url.removeprefix("http://"), "Content-Type": PLAIN, **headers}
    if "Transfer-Encoding" not in head:
        head["Content-Length"] = str(len(body))
    lines = "".join(f"{name}: {value}\r\n" for name, value in head.items())
    return f"POST {HUB} HTTP/1.1\r\n{lines}\r\n".encode() + body


def responses(raw: bytes) -> list[tuple[int, dict[str, str], bytes]]:
    """Status, headers (date left out) and body of each response in ``raw``."""
    found = []
    while raw:
        head, _, rest = raw.partition(b"\r\n\r\n")
        lines = head.decode().split("\r\n")
        headers = dict(line.split(": ", 1) for line in lines[1:])
        headers.pop("date", None)
        length = int(headers.get("content-length", "0"))
        found.append((int(lines[0].split()[1]), headers, rest[:length]))
        raw = rest[length:]
    return found


def exchange(server: Server, data: bytes, count: int) -> list[tuple[int, dict[str, str], bytes]]:
    """Send ``data`` on one connection; read until ``count`` responses have come."""
    with socket.create_connection(("127.0.0.1", server.port), timeout=10) as sock:
        sock.sendall(data)
        raw = b""
        while True:
            try:
                if len(responses(raw)) >= count and raw.endswith(responses(raw)[-1][2]):
                    found = responses(raw)
                    if len(found) == count:
                        return found
            except (ValueError, IndexError):
                pass
            chunk = sock.recv(65536)
            assert chunk, f"connection closed after {raw!r}"
            raw += chunk


def test_a_plain_publish_is_answered_without_the_app_and_as_the_app_would(hub: Server) -> None:
    """Pipelined on one kept-alive connection: two plain publishes answered natively (the
    app's route is not called) and one with Origin through the app, the answers alike
    byte for byte but the id; a refusal answered natively says what the app's says."""
    calls = routed(hub)
    token = bearer(publisher(hub))
    plain = request(hub, token)
    through_app = request(hub, {**token, "Origin": "https://app.example"})
    found = exchange(hub, plain + plain + through_app, 3)
    assert [status for status, _, _ in found] == [200, 200, 200]
    assert len(calls) == 1  # only the one with Origin
    assert found[0][1] == found[2][1]  # same headers, same order (date aside)
    assert list(found[0][1]) == ["server", "content-length", "content-type"]
    ids = [body.decode() for _, _, body in found]
    assert len(set(ids)) == 3
    assert hub.stored() == 3
    refused = exchange(hub, request(hub, {"Authorization": "Bearer nope"}), 1)
    refused_by_app = exchange(
        hub, request(hub, {"Authorization": "Bearer nope", "Origin": "https://a.example"}), 1
    )
    assert len(calls) == 2
    assert refused == refused_by_app and refused[0][0] == 401
    closing = exchange(hub, request(hub, {**token, "Connection": "close"}), 1)
    assert closing[0][0] == 200 and closing[0][1]["connection"] == "close"
    assert len(calls) == 2 and hub.stored() == 4


def test_every_unusual_publish_takes_the_app(hub: Server, tmp_path: Path) -> None:
    """Origin, chunked, Expect: 100-continue, another content type, the metrics listener
    and a Host outside the public URLs: the app answers each, as before."""
    calls = routed(hub)
    token = bearer(publisher(hub))
    chunked = request(hub, {**token, "Transfer-Encoding": "chunked"}, b"%x\r\n%s\r\n0\r\n\r\n")
    chunked = chunked.replace(b"%x", b"%x" % len(FORM)).replace(b"%s", FORM)
    assert exchange(hub, chunked, 1)[0][0] == 200
    text = exchange(hub, request(hub, {**token, "Content-Type": "text/plain"}), 1)[0]
    assert text[0] == 400 and b"unsupported content type 'text/plain'" in text[2]
    with hub.client() as client:
        cors = client.post(HUB, content=FORM, headers={**token, "Origin": "https://a.example"})
        assert cors.status_code == 200
    assert len(calls) == 3
    with socket.create_connection(("127.0.0.1", hub.port), timeout=10) as sock:
        head = request(hub, {**token, "Expect": "100-continue"}).removesuffix(FORM)
        sock.sendall(head)
        assert sock.recv(4096) == b"HTTP/1.1 100 Continue\r\n\r\n"
        sock.sendall(FORM)
        assert sock.recv(4096).startswith(b"HTTP/1.1 200 OK\r\n")
    assert len(calls) == 4 and hub.stored() == 3  # the text/plain one refused
    metrics = httpx.post(
        hub.metrics_url.removesuffix("/metrics") + HUB,
        content=FORM,
        headers={**token, "Content-Type": PLAIN},
    )
    assert metrics.status_code == 404 and hub.stored() == 3  # the listener serves metrics only
    settings = v1_settings(tmp_path / "public", public_urls=("https://hub.example.com",))
    (tmp_path / "public").mkdir()
    with Server(settings) as public:
        outside = exchange(public, request(public, token), 1)[0]
        assert outside[0] == 421 and b"not one of its public URLs" in outside[2]


def test_a_body_after_its_head_and_a_body_too_large_are_answered_natively(
    tmp_path: Path,
) -> None:
    """A plain publish whose body comes in a later segment than its head is read through
    uvicorn's receive, one whose body came with it is taken whole: both answered without
    the app's route; a whole body past ``max_body`` gets the app's 413, byte for byte."""
    with Server(v1_settings(tmp_path, max_body=len(FORM))) as hub:
        calls = routed(hub)
        token = bearer(publisher(hub))
        with socket.create_connection(("127.0.0.1", hub.port), timeout=10) as sock:
            sock.sendall(request(hub, token).removesuffix(FORM))
            time.sleep(0.2)  # the head is read, its task waits for the body
            sock.sendall(FORM)
            assert sock.recv(4096).startswith(b"HTTP/1.1 200 OK\r\n")
        assert exchange(hub, request(hub, token), 1)[0][0] == 200
        assert len(calls) == 0 and hub.stored() == 2
        large = FORM + b"&x=1"
        refused = exchange(hub, request(hub, token, large), 1)
        by_app = exchange(hub, request(hub, {**token, "Origin": "https://a.example"}, large), 1)
        assert len(calls) == 1 and hub.stored() == 2
        assert refused == by_app and refused[0][0] == 413
        assert b"larger than" in refused[0][2]
