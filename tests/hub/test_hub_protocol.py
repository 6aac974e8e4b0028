"""Core protocol: publish form fields, SSE wire format, ids, matching and fan-out."""

from __future__ import annotations

from collections.abc import Callable

from tests.hub.hubtest import HUB, Server, Stream, pub_token

BOOK = "https://example.com/books/1"


def test_publish_returns_generated_urn_uuid_and_delivers_every_sse_field(
    server: Server, streams: Callable[..., Stream]
) -> None:
    stream = streams(server, ["https://example.com/books/{id}"])
    response = server.publish(BOOK, data="first", type="book-updated", retry="1500")
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/plain")
    update_id = response.text
    assert update_id.startswith("urn:uuid:") and len(update_id) == len("urn:uuid:") + 36
    event = stream.event()
    assert (event.id, event.event, event.retry, event.data) == (
        update_id,
        "book-updated",
        1500,
        "first",
    )


def test_client_supplied_id_is_kept(server: Server, streams: Callable[..., Stream]) -> None:
    stream = streams(server, [BOOK])
    assert server.publish(BOOK, id="https://example.com/revisions/7").text == (
        "https://example.com/revisions/7"
    )
    assert stream.event().id == "https://example.com/revisions/7"


def test_multiline_data_is_split_into_data_lines(
    server: Server, streams: Callable[..., Stream]
) -> None:
    raw = streams(server, [BOOK], raw=True)
    parsed = streams(server, [BOOK])
    server.publish(BOOK, data="line one\nline two\r\nline three\rlast", id="multi")
    lines: list[str] = []
    while not lines or lines[-1] != "":
        line = raw.next()
        if line.startswith(":") or (not lines and line == ""):
            continue
        lines.append(line)
    assert lines == [
        "id: multi",
        "data: line one",
        "data: line two",
        "data: line three",
        "data: last",
        "",
    ]
    assert parsed.event().data == "line one\nline two\nline three\nlast"


def test_several_topics_deliver_once_to_a_subscriber_matching_any(
    server: Server, streams: Callable[..., Stream]
) -> None:
    both = streams(server, ["https://example.com/books/{id}", "https://example.com/authors/2"])
    other = streams(server, ["https://example.com/films/{id}"])
    server.publish([BOOK, "https://example.com/authors/2"], id="u1")
    server.publish("https://example.com/films/3", id="u2")
    assert both.event().id == "u1"
    assert other.event().id == "u2"
    both.nothing()
    other.nothing()


def test_wildcard_and_template_selectors(server: Server, streams: Callable[..., Stream]) -> None:
    everything = streams(server, ["*"])
    template = streams(server, ["https://example.com/{collection}/{id}"])
    server.publish("https://example.com/books/9", id="a")
    server.publish("https://other.example/x", id="b")
    assert [everything.event().id, everything.event().id] == ["a", "b"]
    assert template.event().id == "a"
    template.nothing()


def test_updates_arrive_in_publication_order(
    server: Server, streams: Callable[..., Stream]
) -> None:
    stream = streams(server, [BOOK])
    ids = [server.publish(BOOK, data=str(i)).text for i in range(30)]
    assert [stream.event().id for _ in ids] == ids


def test_missing_topic_is_rejected(server: Server) -> None:
    with server.client() as client:
        response = client.post(
            HUB, data={"data": "x"}, headers={"Authorization": f"Bearer {pub_token()}"}
        )
        assert response.status_code == 400
        assert "topic" in response.text
        response = client.get(HUB)
        assert response.status_code == 400
        assert "topic" in response.text
