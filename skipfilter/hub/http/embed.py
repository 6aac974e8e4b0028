"""Publishing from the application that mounts the hub: no HTTP, no token.

Starlette and FastAPI do not run a mounted app's lifespan, so a mounted hub would start on
its first request. :func:`hub_lifespan` starts it from the host application's lifespan
instead (and closes its history on shutdown); the :class:`HubPublisher` it yields has
``AsyncPublisher.publish``'s signature and calls ``Hub.publish`` directly::

    hub_app = create_app(settings)

    @asynccontextmanager
    async def lifespan(app):
        async with hub_lifespan(hub_app) as publisher:
            app.state.publisher = publisher
            yield

    app = FastAPI(lifespan=lifespan)
    app.mount("/", hub_app)  # last: the application's own routes come first
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager

from starlette.applications import Starlette

from skipfilter.hub.core.hub import Hub
from skipfilter.hub.frontends.v1.publish import check_header_id
from skipfilter.hub.http.runtime import runtime_of
from skipfilter.hub.ids import new_id
from skipfilter.hub.update import valid_update


class HubPublisher:
    """Publishes into the hub of ``app`` (an app ``create_app`` built) in this process,
    starting that hub first if nothing has yet. Safe on the hub's event loop only."""

    def __init__(self, app: Starlette) -> None:
        self.app = app

    async def hub(self) -> Hub:
        """The started Hub (started now if no request and no lifespan has started it)."""
        return (await runtime_of(self.app).ready()).hub

    async def publish(
        self,
        topics: str | Sequence[str],
        data: str = "",
        *,
        private: bool = False,
        id: str | None = None,
        type: str | None = None,
        retry: int | None = None,
    ) -> str:
        """Store and deliver one update; returns its id once it is stored and handed to
        every connected recipient. Raises InvalidField naming a field an HTTP publish could
        not carry, TransportUnavailable when the history cannot take it (saying whether it
        may be stored)."""
        topic_list = [topics] if isinstance(topics, str) else list(topics)
        update_id = check_header_id(id) if id else new_id()
        update = valid_update(update_id, topic_list, data, private, type, retry)
        entry = await (await self.hub()).publish(update)
        return entry.update.id


@asynccontextmanager
async def hub_lifespan(app: Starlette) -> AsyncIterator[HubPublisher]:
    """Run the hub app's own lifespan inside the host's: the hub is started (its history
    open, its index ready) on entry, its streams ended and history closed on exit."""
    async with app.router.lifespan_context(app):
        yield HubPublisher(app)
