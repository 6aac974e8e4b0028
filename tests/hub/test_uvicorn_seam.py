"""The uvicorn names the fast paths rely on (``server/uvicorn_seam.py``) exist in the installed
uvicorn with the kind and parameters the seam expects: an allowed uvicorn release that
renames or reshapes one fails here, by name, not in a stream or a publish."""

from __future__ import annotations

import asyncio
import inspect
import logging
from collections.abc import Callable
from typing import Any

import pytest
import uvicorn
from uvicorn.protocols import utils
from uvicorn.protocols.http.flow_control import FlowControl
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol, RequestResponseCycle
from uvicorn.server import ServerState

from skipfilter.hub.server import uvicorn_seam as seam
from skipfilter.hub.server.fast_paths import HubProtocol


def _parameters(function: Callable[..., Any]) -> tuple[str, ...]:
    names = tuple(inspect.signature(function).parameters)
    return names[1:] if names[:1] == ("self",) else names


_METHODS = [
    (owner, name, expected)
    for owner, table in (
        (HttpToolsProtocol, seam.PROTOCOL_METHODS),
        (RequestResponseCycle, seam.CYCLE_METHODS),
    )
    for name, expected in sorted(table.items())
]


@pytest.mark.parametrize(
    ("owner", "name", "expected"), _METHODS, ids=[f"{o.__name__}.{n}" for o, n, _ in _METHODS]
)
def test_uvicorn_method(owner: type, name: str, expected: tuple[str, ...]) -> None:
    found = getattr(owner, name, None)
    where = f"uvicorn {uvicorn.__version__}: {owner.__name__}.{name}"
    assert callable(found), f"{where} is gone"
    assert _parameters(found) == expected, (
        f"{where} takes {_parameters(found)}, the seam expects {expected}"
    )


def _protocol() -> HttpToolsProtocol:
    config = uvicorn.Config(lambda *args: None, http="httptools")
    config.load()
    loop = asyncio.new_event_loop()
    try:
        return HttpToolsProtocol(
            config=config, server_state=ServerState(), app_state={}, _loop=loop
        )
    finally:
        loop.close()


@pytest.mark.parametrize("name", seam.PROTOCOL_ATTRIBUTES)
def test_protocol_attribute(name: str) -> None:
    assert hasattr(_protocol(), name), (
        f"uvicorn {uvicorn.__version__}: an HttpToolsProtocol has no attribute {name!r}"
    )


def _cycle() -> RequestResponseCycle:
    """A cycle built with the arguments its constructor takes today, by name."""
    loop = asyncio.new_event_loop()
    try:
        transport: Any = None
        return RequestResponseCycle(
            scope={},  # type: ignore[typeddict-item]
            transport=transport,
            flow=FlowControl.__new__(FlowControl),
            logger=logging.getLogger("test"),
            access_logger=logging.getLogger("test.access"),
            access_log=False,
            default_headers=[],
            message_event=asyncio.Event(),
            expect_100_continue=False,
            keep_alive=True,
            on_response=lambda: None,
        )
    finally:
        loop.close()


@pytest.mark.parametrize("name", seam.CYCLE_ATTRIBUTES)
def test_cycle_attribute(name: str) -> None:
    assert hasattr(_cycle(), name), (
        f"uvicorn {uvicorn.__version__}: a RequestResponseCycle has no attribute {name!r}"
    )


@pytest.mark.parametrize("name", ["get_client_addr", "get_path_with_query_string"])
def test_utility(name: str) -> None:
    found = getattr(utils, name, None)
    assert callable(found), f"uvicorn {uvicorn.__version__}: uvicorn.protocols.utils.{name} is gone"
    assert _parameters(found) == ("scope",)


def test_every_uvicorn_method_the_protocol_overrides_is_in_the_seam() -> None:
    """A new override of uvicorn's protocol is a new reliance: it is listed in the seam
    (and so checked above) or it is not made."""
    ours = {
        name
        for klass in HubProtocol.__mro__
        if klass.__module__.startswith("skipfilter.")
        for name, value in vars(klass).items()
        if callable(value)
    }
    overridden = {name for name in ours if hasattr(HttpToolsProtocol, name)}
    assert overridden - set(seam.PROTOCOL_METHODS) == set()


def test_the_hooks_are_required_by_name(monkeypatch: pytest.MonkeyPatch) -> None:
    assert seam.missing_hooks() == []
    monkeypatch.delattr(HttpToolsProtocol, "send_400_response")
    assert seam.missing_hooks() == ["send_400_response"]
    with pytest.raises(RuntimeError, match="send_400_response"):
        seam.require_hooks()
