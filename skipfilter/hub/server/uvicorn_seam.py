"""Every name the hub's fast paths use in uvicorn beyond its public API, in one module.

``fast_paths.HubProtocol`` is uvicorn's httptools protocol answering some requests itself
(streams, plain publishes, refused heads); uvicorn does not promise the names it needs,
hence ``uvicorn<0.55`` in pyproject.toml. Only this module touches them;
tests/hub/test_uvicorn_seam.py checks each against the installed uvicorn, by name.

On ``uvicorn.protocols.http.httptools_impl.HttpToolsProtocol`` (``PROTOCOL_METHODS``,
``PROTOCOL_ATTRIBUTES``):

- its constructor, ``(config, server_state, app_state, _loop)``, which ``serve.py`` calls;
- ``_start_asgi_task(cycle, app)``: called once a request's head is read; ``SeamProtocol``
  overrides it as ``request_ready`` and calls uvicorn's as ``run_asgi``;
- ``_unset_keepalive_if_required()``, ``_should_upgrade()``, ``handle_websocket_upgrade()``,
  ``_unsupported_upgrade_warning()``, ``send_400_response(msg)``: what uvicorn's
  ``data_received`` does around its parser, repeated by ``feed``;
- the parser callbacks and transport events ``HubProtocol`` extends (calling uvicorn's):
  ``on_message_begin``, ``on_url``, ``on_header``, ``on_headers_complete``,
  ``on_message_complete``, ``on_response_complete``, ``connection_made``,
  ``connection_lost``, ``pause_writing``, ``resume_writing``, ``shutdown``;
- its attributes, read by the subclass: ``config``, ``loop``, ``logger``, ``server_state``
  (``default_headers``), ``connections``, ``tasks``, ``transport``, ``flow``
  (``write_paused``), ``pipeline``, ``cycle``; and reset here: ``parser``, ``url``,
  ``scope``, ``headers``.

On ``RequestResponseCycle`` (``CYCLE_METHODS``, ``CYCLE_ATTRIBUTES``): ``send``,
``receive``, ``send_500_response``; ``scope``, ``transport``, ``flow``, ``keep_alive``,
``more_body``, ``body``, ``disconnected``, ``response_started``, ``response_complete``,
``waiting_for_100_continue``, ``message_event``, ``on_response``, ``access_log``,
``access_logger``, ``default_headers``, ``logger``.

In ``uvicorn.protocols.utils``: ``get_client_addr``, ``get_path_with_query_string``.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Coroutine, Iterator
from contextlib import contextmanager
from typing import Any

import httptools
import uvicorn
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol, RequestResponseCycle
from uvicorn.protocols.utils import get_client_addr, get_path_with_query_string

#: A request's cycle in uvicorn: its scope, its ``send`` and ``receive``, its state.
Cycle = RequestResponseCycle

#: Methods of ``HttpToolsProtocol`` relied on, with their parameters (``self`` left out).
PROTOCOL_METHODS: dict[str, tuple[str, ...]] = {
    "__init__": ("config", "server_state", "app_state", "_loop"),
    "_start_asgi_task": ("cycle", "app"),
    "_unset_keepalive_if_required": (),
    "_should_upgrade": (),
    "handle_websocket_upgrade": (),
    "_unsupported_upgrade_warning": (),
    "send_400_response": ("msg",),
    "data_received": ("data",),
    "on_message_begin": (),
    "on_url": ("url",),
    "on_header": ("name", "value"),
    "on_headers_complete": (),
    "on_message_complete": (),
    "on_response_complete": (),
    "connection_made": ("transport",),
    "connection_lost": ("exc",),
    "pause_writing": (),
    "resume_writing": (),
    "shutdown": (),
}
#: Attributes of an ``HttpToolsProtocol`` relied on (set in its ``__init__``).
PROTOCOL_ATTRIBUTES = (
    "config",
    "loop",
    "logger",
    "parser",
    "server_state",
    "connections",
    "tasks",
    "transport",
    "flow",
    "pipeline",
    "scope",
    "headers",
    "cycle",
)
#: Methods of ``RequestResponseCycle`` relied on, with their parameters.
CYCLE_METHODS: dict[str, tuple[str, ...]] = {
    "send": ("message",),
    "receive": (),
    "send_500_response": (),
}
#: Attributes of a ``RequestResponseCycle`` relied on (set in its ``__init__``).
CYCLE_ATTRIBUTES = (
    "scope",
    "transport",
    "flow",
    "keep_alive",
    "more_body",
    "body",
    "disconnected",
    "response_started",
    "response_complete",
    "waiting_for_100_continue",
    "message_event",
    "on_response",
    "access_log",
    "access_logger",
    "default_headers",
    "logger",
)


def missing_hooks() -> list[str]:
    """The ``PROTOCOL_METHODS`` the installed uvicorn's protocol lacks (none: all there)."""
    return [
        name for name in PROTOCOL_METHODS if not callable(getattr(HttpToolsProtocol, name, None))
    ]


def require_hooks() -> None:
    """RuntimeError naming what the installed uvicorn lacks that the fast paths override."""
    missing = missing_hooks()
    if missing:
        raise RuntimeError(
            f"uvicorn {uvicorn.__version__} has no HttpToolsProtocol."
            f"{', '.join(missing)}, which the native stream path overrides: install a "
            "uvicorn in the range pyproject.toml pins, or serve streams through ASGI "
            "(--streams asgi)"
        )


class SeamProtocol(HttpToolsProtocol):
    """uvicorn's httptools protocol with its private steps given names of our own."""

    def _start_asgi_task(self, cycle: Cycle, app: Any) -> None:
        self.request_ready(cycle, app)

    def request_ready(self, cycle: Cycle, app: Any) -> None:
        """A request's head is read: answer it (by default, ``app`` through ASGI)."""
        self.run_asgi(cycle, app)

    def run_asgi(self, cycle: Cycle, app: Any) -> None:
        """Run ``app`` for ``cycle`` as uvicorn does."""
        super()._start_asgi_task(cycle, app)

    def spawn(self, work: Coroutine[Any, Any, None]) -> None:
        """Answer a request with ``work``, a task the server waits for at shutdown."""
        task = self.loop.create_task(work)
        task.add_done_callback(self.tasks.discard)
        self.tasks.add(task)

    def feed(self, data: bytes) -> bool:
        """Parse ``data`` as uvicorn's ``data_received`` does: a malformed request answered
        400, an upgrade handled (then False). An exception a parser callback raised
        propagates (``httptools.HttpParserCallbackError``)."""
        self._unset_keepalive_if_required()
        try:
            self.parser.feed_data(data)
        except httptools.HttpParserCallbackError:
            raise
        except httptools.HttpParserError:
            msg = "Invalid HTTP request received."
            self.logger.warning(msg)
            self.send_400_response(msg)
            return False
        except httptools.HttpParserUpgrade:
            if self._should_upgrade():
                self.handle_websocket_upgrade()
            else:
                self._unsupported_upgrade_warning()
            return False
        return True

    def forget_head(self) -> None:
        """Drop the head being read, and the parser's buffers with it."""
        self.url = b""
        self.headers = []
        self.scope = None  # type: ignore[assignment]
        self.parser = httptools.HttpRequestParser(self)

    def hand_over(self) -> None:
        """The connection is no longer uvicorn's to answer on (a stream owns it now)."""
        self.cycle = None  # type: ignore[assignment]
        self.scope = None  # type: ignore[assignment]
        self.headers = None  # type: ignore[assignment]


# -- a request's cycle ----------------------------------------------------------------------


def close_after(cycle: Cycle) -> None:
    """Close the connection once ``cycle`` is answered (no keep-alive)."""
    cycle.keep_alive = False


def answered(cycle: Cycle | None) -> bool:
    """Whether ``cycle``'s answer is complete (no cycle: nothing under way)."""
    return cycle is None or cycle.response_complete


def started(cycle: Cycle) -> bool:
    """Whether ``cycle``'s answer has begun."""
    return cycle.response_started


def body_to_come(cycle: Cycle) -> bool:
    """Whether part of ``cycle``'s body is still to arrive."""
    return cycle.more_body


def whole_body(cycle: Cycle) -> bytes:
    """The body uvicorn holds for ``cycle`` (all of it: ``body_to_come`` is False), taken."""
    body, cycle.body = bytes(cycle.body), bytearray()
    return body


def answered_elsewhere(cycle: Cycle) -> None:
    """The protocol answered (and closes) the connection itself: ``cycle`` sends nothing,
    and the app reading its body is told the client left."""
    cycle.response_started = cycle.response_complete = True
    cycle.disconnected = True
    cycle.message_event.set()


def detach(cycle: Cycle) -> None:
    """``cycle`` is done with its protocol (what uvicorn's ``run_asgi`` does at its end)."""
    cycle.on_response = lambda: None


@contextmanager
def writing_to(cycle: Cycle, transport: Any) -> Iterator[None]:
    """``cycle`` writes to ``transport`` until the block ends (then to its own again)."""
    real = cycle.transport
    cycle.transport = transport
    try:
        yield
    finally:
        cycle.transport = real


def write_to(cycle: Cycle, transport: Any) -> None:
    """``cycle`` writes to ``transport`` from now on."""
    cycle.transport = transport


def log_crash(cycle: Cycle, exc: BaseException) -> None:
    """Log a crash answering ``cycle`` as uvicorn's ``run_asgi`` does."""
    cycle.logger.error("Exception in ASGI application\n", exc_info=exc)


async def write_answer(
    cycle: Cycle, status: int, answer: Callable[[list[tuple[bytes, bytes]], bool], bytes]
) -> None:
    """Write ``answer(default_headers, closing)`` (status line, headers and body) in one
    write, as uvicorn would answer ``cycle``: after its flow control, logged in its access
    log, the connection closed unless kept alive."""
    if cycle.flow.write_paused and not cycle.disconnected:
        await cycle.flow.drain()
    if cycle.disconnected:
        return
    cycle.response_started = True
    cycle.waiting_for_100_continue = False
    if cycle.access_log and cycle.access_logger.isEnabledFor(logging.INFO):
        scope = cycle.scope
        cycle.access_logger.info(
            '%s - "%s %s HTTP/%s" %d',
            get_client_addr(scope),
            scope["method"],
            get_path_with_query_string(scope),
            scope["http_version"],
            status,
        )
    cycle.transport.write(answer(cycle.default_headers, not cycle.keep_alive))
    cycle.response_complete = True
    cycle.message_event.set()
    if not cycle.keep_alive:
        cycle.transport.close()
    cycle.on_response()


def transport_of(cycle: Cycle) -> asyncio.Transport:
    """The socket ``cycle`` answers on."""
    return cycle.transport
