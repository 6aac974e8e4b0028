"""Publishing from the application that embeds the hub (``hub/embed.py``): the hub exists
and publishes before any request, from the host's lifespan or from the first publish, and
the updates are stored and delivered as an HTTP publish's are."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from starlette.applications import Starlette
from starlette.routing import Mount

from skipfilter.hub import HubPublisher, HubSettings, create_app, hub_lifespan
from skipfilter.hub.sse import InvalidField

TOPIC = "https://example.com/books/1"


def settings(tmp_path: Path) -> HubSettings:
    return HubSettings(anonymous=True, history_path=str(tmp_path / "h.sqlite3"), heartbeat=0)


def test_the_host_lifespan_starts_the_mounted_hub_and_closes_it(tmp_path: Path) -> None:
    hub_app = create_app(settings(tmp_path))
    Starlette(routes=[Mount("/", hub_app)])  # mounted: Starlette runs no sub-app lifespan

    async def run() -> None:
        assert not hasattr(hub_app.state, "hub")
        async with hub_lifespan(hub_app) as publisher:
            hub = hub_app.state.hub
            assert hub.loop.is_running()  # started: no request has reached ``host``
            first = await publisher.publish(TOPIC, "one", id="u1")
            second = await publisher.publish([TOPIC, "/other"], "two", private=True, type="t")
            assert first == "u1" and second.startswith("urn:uuid:")
            assert await hub.transport.count() == 2
            assert await publisher.hub() is hub  # the same hub the routes use
        assert hub.stopping  # the exit ended its streams and closed its history

    asyncio.run(run())


def test_a_publish_starts_a_hub_nothing_started(tmp_path: Path) -> None:
    hub_app = create_app(settings(tmp_path))

    async def run() -> int:
        publisher = HubPublisher(hub_app)
        await publisher.publish(TOPIC, "first")
        hub = hub_app.state.hub
        count = int(await hub.transport.count())
        await hub.close()
        return count

    assert asyncio.run(run()) == 1


@pytest.mark.parametrize(
    ("fields", "named"),
    [({"id": "#hub"}, "id"), ({"retry": -1}, "retry"), ({"type": "a\nb"}, "type")],
)
def test_fields_an_http_publish_could_not_carry_are_refused(
    tmp_path: Path, fields: dict[str, object], named: str
) -> None:
    hub_app = create_app(settings(tmp_path))

    async def run() -> int:
        async with hub_lifespan(hub_app) as publisher:
            with pytest.raises(InvalidField) as refused:
                await publisher.publish(TOPIC, "x", **fields)  # type: ignore[arg-type]
            assert refused.value.field == named
            await publisher.publish(TOPIC, "fine")  # nothing else disturbed
            return int(await hub_app.state.hub.transport.count())

    assert asyncio.run(run()) == 1
