"""A plain publish answered inside the httptools protocol, without the ASGI app's cycle.

``fast_paths.py`` hands a ``POST /.well-known/mercure`` here when nothing about it needs the
app's layers: no ``Origin`` (CORS adds nothing), a ``Content-Length`` form body (no chunked
framing, no ``Expect``), the hub serving and the origin among its public URLs. The front
end reads it exactly as the app's publish route does (``Handlers.publish_entry``: token,
cookie Origin rule, form, body limit, grants); a refusal is the same Starlette response
sent through uvicorn; the 200 is written by hand in one write: uvicorn's status line and
default headers, then what ``PlainTextResponse`` would say (``uvicorn_seam.write_answer``).
Anything else takes the app.
"""

from __future__ import annotations

import functools
from typing import Any, Protocol

from starlette.requests import ClientDisconnect, Request
from starlette.responses import Response

from skipfilter.hub.core.frontend import WholeRequest
from skipfilter.hub.server import uvicorn_seam as seam
from skipfilter.hub.server.heads import plain_response
from skipfilter.hub.server.uvicorn_seam import Cycle
from skipfilter.hub.update import Entry

#: A publish body of this content type, and only this, is read natively.
FORM = b"application/x-www-form-urlencoded"
#: Headers that send a publish through the app: its CORS layer, or framing left to uvicorn.
_UNUSUAL = frozenset((b"origin", b"transfer-encoding", b"expect"))


class Handlers(Protocol):
    """The app's handlers as seen from here (``app.Handlers``; no import of the app)."""

    async def publish_entry(self, request: Request) -> Entry | Response: ...


def plain_publish(headers: list[tuple[bytes, bytes]]) -> bool:
    """Whether a publish's headers are the common case: a form with a Content-Length, no
    Origin, no Transfer-Encoding, no Expect."""
    length = False
    form = False
    for name, value in headers:
        if name in _UNUSUAL:
            return False
        if name == b"content-length":
            length = True
        elif name == b"content-type":
            form = value.split(b";", 1)[0].strip().lower() == FORM
    return length and form


async def answer(cycle: Cycle, handlers: Handlers, wrap: Any) -> None:
    """Publish through ``handlers`` and answer on ``cycle``: the id in one write, or the
    refusal through ``wrap(response)`` (an ASGI app sending it in one write); a crash is
    logged and answered 500 as uvicorn does."""
    try:
        outcome = await handlers.publish_entry(_request(cycle))
        if isinstance(outcome, Response):
            await wrap(outcome)(cycle.scope, cycle.receive, cycle.send)
            return
        body = outcome.update.id.encode()
        await seam.write_answer(cycle, 200, functools.partial(plain_response, 200, body))
    except ClientDisconnect:  # its body never came (--body-timeout), or the client left
        pass
    except BaseException as exc:  # what uvicorn's run_asgi does with a crash
        seam.log_crash(cycle, exc)
        if not seam.started(cycle):
            await cycle.send_500_response()
        else:
            seam.transport_of(cycle).close()
    finally:
        seam.detach(cycle)


def _request(cycle: Cycle) -> Request:
    """The publish as the front end reads it: with its whole body when uvicorn holds all of
    it (it came with the head: no ``receive`` per publish), else read through ``receive``."""
    if seam.body_to_come(cycle):
        return Request(cycle.scope, cycle.receive)  # type: ignore[arg-type]
    return WholeRequest(cycle.scope, seam.whole_body(cycle))  # type: ignore[arg-type]
