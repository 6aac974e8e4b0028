"""Which writer serves a stream: ``skipfilter hub`` writes streams straight to their sockets
(``server/fast_paths.py``, through the uvicorn hook it overrides), ``--streams asgi`` through ASGI.

A uvicorn release without the hook would quietly send every stream through ASGI (slower,
and none of the native flow control): these tests fail then, instead of the hub falling back.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import pytest
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from skipfilter.hub.http.asgi_stream import AsgiStream
from skipfilter.hub.server.fast_paths import HubProtocol, NativeStream, protocol_for
from skipfilter.hub.server.uvicorn_seam import SeamProtocol
from tests.hub.hubtest import Server, Stream

TOPIC = "https://example.com/books/1"


def test_each_stream_path_serves_streams_with_its_own_writer(
    server: Server, streams: Callable[..., Stream]
) -> None:
    stream = streams(server, [TOPIC])
    deadline = time.monotonic() + 10
    while len(server.hub) < 1:
        assert time.monotonic() < deadline, "the stream never registered"
        time.sleep(0.01)
    (opened,) = list(server.hub.streams())
    expected = NativeStream if server.streams == "native" else AsgiStream
    assert type(opened) is expected
    assert server.publish(TOPIC, id="u1").status_code == 200
    assert stream.event(10).id == "u1"


def test_the_hook_the_native_path_overrides_is_uvicorns() -> None:
    """``SeamProtocol._start_asgi_task`` replaces a method uvicorn calls; with a uvicorn that
    has no such method the override would be dead code, so binding the protocol refuses."""
    assert "_start_asgi_task" in vars(HttpToolsProtocol)
    assert "_start_asgi_task" in vars(SeamProtocol)
    assert issubclass(HubProtocol, SeamProtocol)


def test_binding_the_native_protocol_fails_loudly_without_the_hook(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delattr(HttpToolsProtocol, "_start_asgi_task")
    with pytest.raises(RuntimeError, match="_start_asgi_task"):
        protocol_for(object())  # type: ignore[arg-type]
