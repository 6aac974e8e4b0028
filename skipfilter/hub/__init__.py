"""A Mercure-protocol SSE hub that finds each update's subscribers with a TopicIndex.

``create_app(HubSettings(...))`` is an ASGI app to run with uvicorn or mount in a
Starlette/FastAPI application; ``skipfilter hub`` runs it from the command line.
"""

from skipfilter.hub.app import create_app
from skipfilter.hub.hub import Hub
from skipfilter.hub.settings import HubSettings

__all__ = ["Hub", "HubSettings", "create_app"]
