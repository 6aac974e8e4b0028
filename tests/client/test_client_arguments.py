"""A wrong argument to the client is a TypeError or ValueError naming it, raised before
anything is sent: a hub that saw only the refused calls holds nothing, and the next correct
publish is the first update a subscriber reads. Before, ``publish(topic, {"a": 1})``
delivered Python's repr ``{'a': 1}`` and ``publish(topic, None)`` the text ``None``."""

from __future__ import annotations

import asyncio
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from skipfilter.client import AsyncPublisher, Publisher, subscribe
from tests.client.clienttest import Reader, hub_settings, hub_url
from tests.hub.hubtest import PUBLISHER_KEY, Server
from tests.hub.v1test import ISSUER

BOOK = "https://example.com/books/1"

#: Values that are not text, as a program passes them by mistake.
NOT_TEXT = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.floats(allow_nan=False),
    st.binary(max_size=8),
    st.lists(st.integers(), max_size=2),
    st.dictionaries(st.text(max_size=2), st.integers(), max_size=2),
)


@pytest.fixture(scope="module")
def hub(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """One real hub for the module: every refused call below must leave it empty."""
    tmp: Path = tmp_path_factory.mktemp("hub")
    with Server(hub_settings(tmp, "1.0")) as server:
        yield hub_url(server)


#: (the message's start, publish's arguments, its keywords) of each refused call.
REFUSED: list[tuple[str, Any, dict[str, Any]]] = [
    ("data must be text (str), got dict: {'a': 1} (serialize it first", (BOOK, {"a": 1}), {}),
    ("data must be text (str), got NoneType: None (use '' for none)", (BOOK, None), {}),
    ("data must be text (str), got bytes: b'x' (decode it first", (BOOK, b"x"), {}),
    ("topics must be a list of str, got NoneType", (None, "x"), {}),
    ("topics[1] must be a str, got int: 7", ([BOOK, 7], "x"), {}),
    ("id must be a str or None, got int: 5", (BOOK, "x"), {"id": 5}),
    ("type must be a str or None, got bytes", (BOOK, "x"), {"type": b"t"}),
    ("retry must be an int (milliseconds) or None, got '10'", (BOOK, "x"), {"retry": "10"}),
]


def test_publish_names_each_wrong_argument_and_sends_nothing(hub: str) -> None:
    with Publisher(hub, key=PUBLISHER_KEY, issuer=ISSUER) as publisher:
        for message, args, kw in REFUSED:
            with pytest.raises(TypeError, match="^" + re.escape(message)):
                publisher.publish(*args, **kw)
        with pytest.raises(ValueError, match="an update needs at least one topic"):
            publisher.publish([], "x")
        sent = publisher.publish(BOOK, '{"a": 1}')
    reader = Reader(hub, BOOK, last_event_id="earliest")
    try:
        first = reader.next()
        assert (first.id, first.data) == (sent, '{"a": 1}')  # nothing before it was stored
    finally:
        reader.close()


def test_async_publish_names_the_wrong_argument(hub: str) -> None:
    async def run() -> None:
        async with AsyncPublisher(hub, key=PUBLISHER_KEY, issuer=ISSUER) as publisher:
            with pytest.raises(TypeError, match=r"^data must be text \(str\), got dict"):
                await asyncio.wait_for(publisher.publish(BOOK, {"a": 1}), 10)  # type: ignore[arg-type]

    asyncio.run(run())


@settings(max_examples=50, deadline=None)
@given(bad=NOT_TEXT)
def test_publish_refuses_any_data_that_is_not_text(bad: Any) -> None:
    # refused before connecting: the port is closed, and nothing waits on it
    closed = "http://127.0.0.1:9/.well-known/mercure"
    expected = rf"^data must be text \(str\), got {type(bad).__name__}"
    with (
        Publisher(closed, token="t", reconnect_for=0) as pub,
        pytest.raises(TypeError, match=expected),
    ):
        pub.publish(BOOK, bad)


def test_a_publisher_without_credentials_names_both_options() -> None:
    with pytest.raises(ValueError, match=r"give token= \(.*\) or key= \("):
        Publisher("http://127.0.0.1:9/.well-known/mercure")
    with pytest.raises(ValueError, match=r"give token= or key=, not both"):
        Publisher("http://127.0.0.1:9/.well-known/mercure", token="t", key=PUBLISHER_KEY)


@settings(max_examples=50, deadline=None)
@given(bad=NOT_TEXT.filter(lambda v: not isinstance(v, list)), item=NOT_TEXT)
def test_subscribe_names_match_that_is_no_list_of_str(bad: Any, item: Any) -> None:
    url = "http://127.0.0.1:9/.well-known/mercure"
    for name in ("match", "match_urlpattern"):
        with pytest.raises(TypeError, match=rf"^{name} must be a list of str, got "):
            subscribe(url, **{name: bad})
        with pytest.raises(TypeError, match=rf"^{name}\[1\] must be a str, got "):
            subscribe(url, **{name: [BOOK, item]})
    with pytest.raises(TypeError, match=r"^match must be a list of str, not a single string"):
        subscribe(url, BOOK)  # was: one match= per character of the URL
    if bad is not None:
        with pytest.raises(TypeError, match=r"^last_event_id must be a str or None, got "):
            subscribe(url, [BOOK], last_event_id=bad)
