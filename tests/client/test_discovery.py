"""Discovery (draft-08 §3): a resource's ``Link`` headers read as RFC 8288 says, relative
targets resolved against the resource, and a resource without a hub said to be one."""

from __future__ import annotations

import socket

import httpx
import pytest

from skipfilter.client import Discovery, DiscoveryFailed, discover
from skipfilter.client.discovery import links, read_links


def response(*link_headers: str, url: str = "https://example.com/books/1") -> httpx.Response:
    headers = [("Link", value) for value in link_headers]
    return httpx.Response(200, headers=headers, request=httpx.Request("GET", url))


def test_links_with_quotes_commas_and_several_rels() -> None:
    value = (
        '<https://a.example/x,y>; rel="preload"; title="a, \\"b\\""; '
        'rel=ignored, </hub>;rel="mercure self" ; last-event-id="urn:1", <z>'
    )
    assert list(links(value)) == [
        ("https://a.example/x,y", {"rel": "preload", "title": 'a, "b"'}),
        ("/hub", {"rel": "mercure self", "last-event-id": "urn:1"}),
        ("z", {}),
    ]


def test_hubs_topic_and_last_event_id() -> None:
    found = read_links(
        response(
            '<https://hub.example/.well-known/mercure>; rel="mercure"; last-event-id="e7"',
            '</.well-known/mercure>; rel=mercure, <https://example.com/books/1?v=2>; rel="self"',
        )
    )
    assert found == Discovery(
        ("https://hub.example/.well-known/mercure", "https://example.com/.well-known/mercure"),
        "https://example.com/books/1?v=2",
        "e7",
    )
    assert found.hub == "https://hub.example/.well-known/mercure"


def test_without_self_the_topic_is_the_resource() -> None:
    found = read_links(response('<hub>; REL="Mercure"'))
    assert found.hubs == ("https://example.com/books/hub",)
    assert found.topic == "https://example.com/books/1"


@pytest.mark.parametrize(
    "headers", [(), ('<https://hub.example>; rel="mercure-ish"',), ('<x>; rel="self"',)]
)
def test_a_resource_without_a_hub(headers: tuple[str, ...]) -> None:
    with pytest.raises(DiscoveryFailed, match="names no hub"):
        read_links(response(*headers))


def test_an_unreachable_resource() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    with pytest.raises(DiscoveryFailed, match="cannot read"):
        discover(f"http://127.0.0.1:{port}/books/1")
