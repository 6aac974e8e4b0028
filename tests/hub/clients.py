"""Clients that keep going across hub restarts: a subscriber that behaves as EventSource
does (whenever its stream ends or cannot open, it reconnects after a moment, sending the id
of the last event it got as Last-Event-ID), and a publisher that records what each of its
publishes got back."""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from collections.abc import Callable

import httpx
from httpx_sse import EventSource

HUB = "/.well-known/mercure"


class Resuming:
    """Follows ``topics`` on the hub ``url()`` names (asked again at each reconnection)."""

    def __init__(
        self, url: Callable[[], str], topics: list[str], retry: float = 0.2, last: str = ""
    ) -> None:
        self.url = url
        self.topics = topics
        self.retry = retry
        self.last = last
        self.ids: list[str] = []
        self.opened = 0  # streams that answered 200
        self.refused: list[int] = []  # statuses of streams that did not
        self._stop = threading.Event()
        self._response: httpx.Response | None = None
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        params = tuple(("topic", t) for t in self.topics)
        with httpx.Client(timeout=httpx.Timeout(10, read=120)) as client:
            while not self._stop.is_set():
                headers = {"Last-Event-ID": self.last} if self.last else {}
                try:
                    with client.stream(
                        "GET", self.url() + HUB, params=params, headers=headers
                    ) as response:
                        self._response = response
                        if response.status_code != 200:
                            self.refused.append(response.status_code)
                        else:
                            self.opened += 1
                            for event in EventSource(response).iter_sse():
                                if event.id:
                                    self.ids.append(event.id)
                                    self.last = event.id
                except (httpx.HTTPError, OSError, RuntimeError):
                    pass
                self._response = None
                self._stop.wait(self.retry)

    def wait_for(self, count: int, timeout: float = 30) -> list[str]:
        """Block until ``count`` events arrived (across reconnections); returns their ids."""
        deadline = time.monotonic() + timeout
        while len(self.ids) < count:
            if time.monotonic() > deadline:
                raise AssertionError(f"got {len(self.ids)} of {count} events: {self.ids[-5:]}")
            time.sleep(0.05)
        return list(self.ids)

    def wait_opened(self, count: int = 1, timeout: float = 30) -> None:
        deadline = time.monotonic() + timeout
        while self.opened < count:
            assert time.monotonic() < deadline, f"opened {self.opened} of {count} streams"
            time.sleep(0.05)

    def close(self) -> None:
        self._stop.set()
        response = self._response
        if response is not None:
            stream = response.extensions.get("network_stream")
            sock = stream.get_extra_info("socket") if stream is not None else None
            if sock is not None:
                with contextlib.suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)
        self._thread.join(10)


class Publishing:
    """Publishes ``prefix-0``, ``prefix-1``... to the hub ``url()`` names, one at a time on a
    keep-alive connection, until stopped; records every answer by id."""

    def __init__(
        self, url: Callable[[], str], prefix: str, token: str, topic: str, pause: float = 0.01
    ) -> None:
        self.url = url
        self.prefix = prefix
        self.topic = topic
        self.pause = pause
        self.headers = {"Authorization": f"Bearer {token}"}
        self.acked: list[str] = []
        self.refused: dict[str, str] = {}  # id -> "status: body" (a 4xx or 503)
        self.unsent: list[str] = []  # the connection was refused: never reached a hub
        self.unanswered: dict[str, str] = {}  # id -> error: sent, and no answer came back
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        n = 0
        with httpx.Client(timeout=30) as client:
            while not self._stop.is_set():
                update_id = f"{self.prefix}-{n}"
                n += 1
                data = {"topic": self.topic, "id": update_id}
                try:
                    response = client.post(self.url() + HUB, data=data, headers=self.headers)
                except httpx.ConnectError:
                    self.unsent.append(update_id)
                    self._stop.wait(0.1)
                    continue
                except httpx.HTTPError as exc:
                    self.unanswered[update_id] = repr(exc)
                    continue
                if response.status_code == 200 and response.text == update_id:
                    self.acked.append(update_id)
                else:
                    self.refused[update_id] = f"{response.status_code}: {response.text}"
                self._stop.wait(self.pause)

    def wait_acked(self, count: int, timeout: float = 30) -> None:
        deadline = time.monotonic() + timeout
        while len(self.acked) < count:
            assert time.monotonic() < deadline, f"{len(self.acked)} of {count} acknowledged"
            time.sleep(0.02)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(40)


def check_delivery(
    publishers: list[Publishing], stored: list[str], clients: list[Resuming]
) -> None:
    """Every publish got an answer; acknowledged means stored; every client got every
    stored update once, in the stored order, across its reconnections."""
    for publisher in publishers:
        assert not publisher.unanswered, publisher.unanswered
        assert set(publisher.acked) <= set(stored)
        definite = {i for i, why in publisher.refused.items() if "may or may not" not in why}
        assert not definite & set(stored), "a refused publish was stored"
        assert not set(publisher.unsent) & set(stored)
    assert len(set(stored)) == len(stored), "an update was stored twice"
    for client in clients:
        assert client.wait_for(len(stored)) == stored
    time.sleep(0.3)
    for client in clients:
        assert client.ids == stored, "more than the stored updates arrived"
