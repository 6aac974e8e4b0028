"""A published topic is at most ``max_topic_length`` UTF-8 bytes (issue 39): every URL
Pattern subscribed is matched against it in time about its length, and topics were bounded
only by ``max_body`` (1 MiB: 5 s of loop for one pattern of 40 ``*``). One byte over is a
400 naming the topic and the limit, with nothing stored or delivered; at the limit it is
delivered. On the native publish path (no Origin), the app's (Origin), and both kinds of
publisher of compatibility mode (0.x has a form parser of its own)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from urllib.parse import urlencode

import httpx
import pytest

from skipfilter.hub import HubSettings
from tests.hub.hubtest import HUB, Server, Stream, pub_token, routed
from tests.hub.v1test import ISSUER, bearer, publisher, v1_settings

BASE = "https://example.com/"  # 20 bytes
EVERYTHING = [("match_urlpattern", "https://example.com/*")]


def topic_of(size: int) -> str:
    """A topic of exactly ``size`` UTF-8 bytes, mostly two-byte characters (a limit counted
    in characters would take one of twice the bytes)."""
    pairs, odd = divmod(size - len(BASE), 2)
    return BASE + "é" * pairs + "a" * odd


def post(server: Server, topic: str, data: str, headers: dict[str, str]) -> httpx.Response:
    form = urlencode([("topic", topic), ("data", data)]).encode()
    headers = {**headers, "Content-Type": "application/x-www-form-urlencoded"}
    with server.client() as client:
        return client.post(HUB, content=form, headers=headers)


def over_then_at(
    server: Server, stream: Stream, exact: Stream, limit: int, headers: dict[str, str]
) -> None:
    """One byte over the limit: 400 naming it, nothing stored, no subscriber sees it; then
    at the limit: stored and delivered (the first event either stream gets)."""
    over, at = topic_of(limit + 1), topic_of(limit)
    assert len(over) < limit  # in characters it would pass
    stored = server.stored()
    refused = post(server, over, "over", headers)
    assert refused.status_code == 400, refused.text
    assert f"{limit + 1:,} bytes" in refused.text and f"limit of {limit:,}" in refused.text
    assert "max_topic_length" in refused.text and repr(over[:80]) in refused.text
    assert server.stored() == stored
    accepted = post(server, at, "at", headers)
    assert accepted.status_code == 200, accepted.text
    assert server.stored() == stored + 1
    event = stream.event()
    assert (event.data, event.id) == ("at", accepted.text)
    exact.nothing()  # subscribed to the refused topic exactly


@pytest.mark.parametrize("limit", [4096, 64])
@pytest.mark.parametrize("path", ["native", "app"])
def test_a_topic_over_the_limit_is_refused_and_one_at_it_delivered(
    tmp_path: Path, streams: Callable[..., Stream], path: str, limit: int
) -> None:
    """Mercure 1.0, the default limit and a lowered one (``--max-topic-length``)."""
    changes = {} if limit == 4096 else {"max_topic_length": limit}
    with Server(v1_settings(tmp_path, **changes)) as server:
        calls = routed(server)
        stream = streams(server, [], params=EVERYTHING)
        exact = streams(server, [], params=[("match", topic_of(limit + 1))])
        headers = bearer(publisher(server))
        if path == "app":
            headers["Origin"] = "https://app.example"
        over_then_at(server, stream, exact, limit, headers)
        assert len(calls) == (2 if path == "app" else 0)


@pytest.mark.parametrize("token", ["0.x", "1.0"])
def test_compatibility_mode_holds_both_publishers_to_the_limit(
    make_server: Callable[..., Server],
    settings: HubSettings,
    streams: Callable[..., Stream],
    token: str,
) -> None:
    """0.x publishers (their own form parser) and 1.0 ones on a compatibility-mode hub."""
    server = make_server(settings.with_changes(trusted_issuers=(ISSUER,)))
    assert settings.protocol_version_compatibility == 8
    stream = streams(server, [], params=EVERYTHING)
    exact = streams(server, [topic_of(4097)])  # a 0.x subscriber to the refused topic
    auth = pub_token() if token == "0.x" else publisher(server)
    over_then_at(server, stream, exact, 4096, bearer(auth))


def test_the_limit_is_at_least_one() -> None:
    with pytest.raises(ValueError, match="max_topic_length"):
        HubSettings(anonymous=True, max_topic_length=0)
