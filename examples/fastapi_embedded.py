"""A FastAPI application that embeds the Mercure hub and publishes from its own routes.

Needs:   the examples extra (FastAPI, the hub, the client): pip install -e '.[examples]'
Run it:  python examples/fastapi_embedded.py  (then open http://127.0.0.1:8000/docs)
Find:    curl -I http://127.0.0.1:8000/books/1  (link: </.well-known/mercure>; rel="mercure")
Watch:   curl -N 'http://127.0.0.1:8000/.well-known/mercure?match_urlpattern=https://example.com/books/:id'
Publish: curl -X PUT http://127.0.0.1:8000/books/1 -H 'Content-Type: application/json' \
              -d '{"title": "Dune"}'  (the watcher prints data: {"id": 1, "title": "Dune"})

The hub is mounted at ``/`` (after the application's routes, which win) and started by the
application's lifespan, so a route can publish before anyone has subscribed; a publish here
is a function call into the hub (no HTTP, no token), stored in its history like any other.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from fastapi import FastAPI, Request, Response
from pydantic import BaseModel

from skipfilter.hub import HubSettings, create_app, hub_lifespan

BOOKS = "https://example.com/books/"

settings = HubSettings(
    anonymous=True,  # anyone may subscribe to public updates; private ones need a token
    subscriber_key=os.environ.get("MERCURE_SUBSCRIBER_JWT_KEY"),
    history_path=os.environ.get("HUB_HISTORY")
    or os.path.join(tempfile.gettempdir(), "skipfilter-example-hub.sqlite3"),
)
hub_app = create_app(settings)


@asynccontextmanager
async def lifespan(app: FastAPI) -> AsyncIterator[None]:
    async with hub_lifespan(hub_app) as publisher:
        app.state.publisher = publisher
        yield


app = FastAPI(lifespan=lifespan)


class Book(BaseModel):
    title: str


@app.api_route("/books/{book_id}", methods=["GET", "HEAD"])  # HEAD: curl -I, link checkers
async def get_book(book_id: int, response: Response) -> dict[str, object]:
    """A resource that says where its updates are published (Mercure discovery)."""
    response.headers["Link"] = (
        f'</.well-known/mercure>; rel="mercure", <{BOOKS}{book_id}>; rel="self"'
    )
    return {"id": book_id}


@app.put("/books/{book_id}")
async def save_book(book_id: int, book: Book, request: Request) -> dict[str, str]:
    """Save a book (here: nowhere) and tell its subscribers."""
    data = json.dumps({"id": book_id, "title": book.title})
    update_id = await request.app.state.publisher.publish(f"{BOOKS}{book_id}", data)
    return {"update": update_id}


app.mount("/", hub_app)  # last: /.well-known/mercure and the hub's other routes

if __name__ == "__main__":
    import uvicorn

    uvicorn.run(app, host="127.0.0.1", port=int(os.environ.get("PORT", "8000")))
