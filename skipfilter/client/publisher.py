"""Publishing to a Mercure hub over HTTP: :class:`Publisher` (blocking) and
:class:`AsyncPublisher` (asyncio), one keep-alive connection pool each.

A publish is a form POST (draft-08 §5) answered with the update's id. Only what is safe is
retried: a connection that could not be made (a hub restarting) is tried again for up to
``reconnect_for`` seconds, as nothing was sent; once the request may have reached the hub (a
5xx, a connection dropped before the answer) the update may be stored, so the publisher
raises :class:`~skipfilter.client.errors.Unavailable` with ``may_be_stored=True`` and never
sends it again by itself. The answer is read no further than ``max_answer`` bytes (an id is
short): a longer one raises :class:`~skipfilter.client.errors.OverLimit`.
"""

from __future__ import annotations

import asyncio
import builtins
import time
from collections.abc import Iterator, Sequence
from types import TracebackType
from typing import Any, Self
from urllib.parse import urlencode

import httpx

from skipfilter.client.arguments import optional_text, text, text_list
from skipfilter.client.auth import TokenMinter, TokenSource, current
from skipfilter.client.errors import OverLimit, Unavailable, Unreachable
from skipfilter.client.wire import (
    MAX_ERROR_BODY,
    aread_at_most,
    bearer,
    read_at_most,
    refusal,
)

FORM = "application/x-www-form-urlencoded"
_SERIALIZE = " (serialize it first: json.dumps(data) for JSON)"
_DATA_HINT = {bytes: " (decode it first: data.decode('utf-8'))", type(None): " (use '' for none)"}
#: Failures that happen before any byte of the request was sent: safe to try again.
_NOT_SENT = (httpx.ConnectError, httpx.ConnectTimeout, httpx.PoolTimeout)
_FIRST_PAUSE, _LONGEST_PAUSE = 0.05, 1.0
#: The longest publish answer read (bytes): the update's id.
MAX_ANSWER = 1 << 16


class _PublisherBase:
    """What both publishers share: the token, the form, reading the answer."""

    def __init__(
        self,
        hub_url: str,
        *,
        token: TokenSource = None,
        key: str | None = None,
        issuer: str | None = None,
        audience: str | None = None,
        grant: Sequence[str] = ("*",),
        ttl: float = 3600,
        legacy: bool = False,
        reconnect_for: float = 5.0,
        max_answer: int = MAX_ANSWER,
    ) -> None:
        if token is None and key is None:
            raise ValueError(
                "give token= (a token, or a callable returning one) or key= (a secret or "
                "PEM private key to mint tokens with): the hub refuses a publish without one"
            )
        if token is not None and key is not None:
            raise ValueError("give token= or key=, not both")
        self.hub_url = hub_url
        self.legacy = legacy
        self.reconnect_for = reconnect_for
        self.max_answer = max_answer
        self.token: TokenSource = token
        if key is not None:
            self.token = TokenMinter(
                key,
                issuer=issuer,
                audience=audience or hub_url,
                publish=grant,
                ttl=ttl,
                legacy=legacy,
            )

    def _request(
        self,
        topics: str | Sequence[str],
        data: str,
        private: bool,
        id: str | None,
        type: str | None,
        retry: int | None,
    ) -> dict[str, Any]:
        """The POST's arguments: the form (draft-08 §5; 0.x's is the same) and headers.
        Raises TypeError naming an argument of the wrong type: ``data`` is text (serialize
        anything else, JSON say, and decode bytes: the choice of encoding is the caller's)."""
        topic_list = text_list(topics, "topics", single=True)
        if not topic_list:
            raise ValueError("an update needs at least one topic")
        form: list[tuple[str, str]] = [("topic", t) for t in topic_list]
        form.append(("data", text(data, "data", _DATA_HINT.get(builtins.type(data), _SERIALIZE))))
        if private:
            form.append(("private", "on"))
        for name, value in (("id", id), ("type", type)):
            checked = optional_text(value, name)
            if checked is not None:
                form.append((name, checked))
        if retry is not None:
            if isinstance(retry, bool) or not isinstance(retry, int):
                raise TypeError(f"retry must be an int (milliseconds) or None, got {retry!r:.60}")
            form.append(("retry", str(retry)))
        headers = {"Content-Type": FORM, **bearer(current(self.token))}
        return {"content": urlencode(form).encode(), "headers": headers}

    def _limit(self, response: httpx.Response) -> int:
        """How much of this answer to read."""
        return self.max_answer if response.status_code == 200 else MAX_ERROR_BODY

    def _answer(self, response: httpx.Response, body: bytes, more: bool) -> str:
        """The update's id, or the refusal raised."""
        if response.status_code != 200:
            raise refusal(response, "publish", body)
        if more:
            raise OverLimit(
                "answer",
                self.max_answer,
                f"{self.hub_url} answered a publish with more than {self.max_answer} bytes, "
                "not an update's id (the update may have been stored: it was not sent again)",
            )
        return body.decode("utf-8", "replace")

    def _pauses(self) -> Iterator[float]:
        """Pauses between connection attempts, until ``reconnect_for`` seconds are spent."""
        deadline = time.monotonic() + self.reconnect_for
        pause = _FIRST_PAUSE
        while time.monotonic() + pause < deadline:
            yield pause
            pause = min(pause * 2, _LONGEST_PAUSE)

    def _unreachable(self, exc: Exception) -> Unreachable:
        return Unreachable(
            f"cannot connect to {self.hub_url} ({exc or type(exc).__name__}) for "
            f"{self.reconnect_for:g} s: the update was not sent"
        )

    def _lost(self, exc: Exception) -> Unavailable:
        return Unavailable(
            f"the connection to {self.hub_url} failed after the update was sent "
            f"({exc or type(exc).__name__}): it may have been stored, and was not sent again",
            may_be_stored=True,
        )


class Publisher(_PublisherBase):
    """Publishes updates to the hub at ``hub_url`` (``https://host/.well-known/mercure``).

    Give ``token`` (a string, or a callable returning the token to use now), or ``key`` to
    mint tokens with (:class:`~skipfilter.client.auth.TokenMinter`: ``issuer``, ``audience``
    defaulting to ``hub_url``, publish rights on ``grant``, renewed before they expire).
    ``legacy`` speaks Mercure 0.x (the ``mercure`` claim). Thread-safe (httpx's pool is);
    use it as a context manager or call :meth:`close`.
    """

    def __init__(self, hub_url: str, *, client: httpx.Client | None = None, **kw: Any) -> None:
        super().__init__(hub_url, **kw)
        self._own = client is None
        self.client = client or httpx.Client(timeout=httpx.Timeout(30, connect=5))

    def publish(
        self,
        topics: str | Sequence[str],
        data: str = "",
        *,
        private: bool = False,
        id: str | None = None,
        type: str | None = None,
        retry: int | None = None,
    ) -> str:
        """Publish one update to ``topics``; returns its id (``id``, or the one the hub chose)
        once the hub has stored it. Raises a ``Refused`` subclass (400, 401, 403, 413),
        ``Unavailable``, ``Unreachable``, or ``BadAnswer`` (an answer no hub gives)."""
        pauses = self._pauses()
        while True:
            request = self._request(topics, data, private, id, type, retry)
            try:
                with self.client.stream("POST", self.hub_url, **request) as response:
                    body, more = read_at_most(response, self._limit(response))
            except _NOT_SENT as exc:
                pause = next(pauses, None)
                if pause is None:
                    raise self._unreachable(exc) from exc
                time.sleep(pause)
                continue
            except httpx.TransportError as exc:
                raise self._lost(exc) from exc
            return self._answer(response, body, more)

    def close(self) -> None:
        """Close the connections (a client given at construction is left open)."""
        if self._own:
            self.client.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()


class AsyncPublisher(_PublisherBase):
    """:class:`Publisher` for asyncio: ``await publisher.publish(...)``; same arguments."""

    def __init__(self, hub_url: str, *, client: httpx.AsyncClient | None = None, **kw: Any) -> None:
        super().__init__(hub_url, **kw)
        self._own = client is None
        self.client = client or httpx.AsyncClient(timeout=httpx.Timeout(30, connect=5))

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
        """As :meth:`Publisher.publish`."""
        pauses = self._pauses()
        while True:
            request = self._request(topics, data, private, id, type, retry)
            try:
                async with self.client.stream("POST", self.hub_url, **request) as response:
                    body, more = await aread_at_most(response, self._limit(response))
            except _NOT_SENT as exc:
                pause = next(pauses, None)
                if pause is None:
                    raise self._unreachable(exc) from exc
                await asyncio.sleep(pause)
                continue
            except httpx.TransportError as exc:
                raise self._lost(exc) from exc
            return self._answer(response, body, more)

    async def aclose(self) -> None:
        """Close the connections (a client given at construction is left open)."""
        if self._own:
            await self.client.aclose()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()
