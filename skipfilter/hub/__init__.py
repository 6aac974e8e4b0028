"""A Mercure-protocol SSE hub that finds each update's subscribers with a TopicIndex.

``create_app(HubSettings(...))`` is an ASGI app to run with uvicorn or mount in a
Starlette/FastAPI application (``hub_lifespan`` starts it from the host's lifespan and
yields a ``HubPublisher`` to publish in-process); ``skipfilter hub`` runs it from the
command line. ``Update`` is an update as ``Hub.publish`` takes it.
"""

from skipfilter.hub.core.hub import Hub
from skipfilter.hub.http.app import create_app
from skipfilter.hub.http.embed import HubPublisher, hub_lifespan
from skipfilter.hub.settings import HubSettings
from skipfilter.hub.update import Update

__all__ = ["Hub", "HubPublisher", "HubSettings", "Update", "create_app", "hub_lifespan"]
