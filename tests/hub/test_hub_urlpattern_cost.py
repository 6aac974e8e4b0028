"""What one anonymous subscribe's URL Patterns may cost a hub (issue 31, "High").

Ten patterns like ``https://e.com/{i}/:id(\\w{150})`` (679 bytes of query) held a hub's
event loop for 2 s and grew it from 53 MB to 380 MB, kept after the subscriber left; rounds
of fresh ones grew it further each time. A real hub process on loopback gets them here:
``/healthz`` keeps answering, its resident memory grows by little and comes back after
close, and patterns past the cost limits are a 400 naming the limit.
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from urllib.parse import urlencode

import httpx
import pytest

from rigs.resident import resident_bytes
from tests.hub.hubtest import HUB, HubProcess

MB = 2**20


def _query(patterns: list[str]) -> str:
    return f"{HUB}?{urlencode([('match_urlpattern', p) for p in patterns])}"


def _subscribe(hub: HubProcess, patterns: list[str]) -> socket.socket:
    """An open subscription (its response head read: the hub has registered it)."""
    sock = socket.create_connection(("127.0.0.1", hub.port), timeout=30)
    sock.sendall(f"GET {_query(patterns)} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n".encode())
    head = b""
    while b"\r\n\r\n" not in head:
        chunk = sock.recv(4096)
        assert chunk, head
        head += chunk
    assert head.startswith(b"HTTP/1.1 200"), head
    return sock


class _Probe:
    """``GET /healthz`` every 10 ms in a thread; the slowest answers."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.samples: list[float] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        with httpx.Client(timeout=30) as client:
            while not self._stop.is_set():
                start = time.perf_counter()
                assert client.get(self.url + "/healthz").status_code == 200
                self.samples.append(time.perf_counter() - start)
                time.sleep(0.01)

    def __enter__(self) -> _Probe:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(30)

    def stall(self) -> float:
        """The longest wait but one (one scheduling hiccup of a loaded machine is not the
        hub's; work holding the loop stalls probe after probe)."""
        return sorted(self.samples)[-2]


@pytest.fixture(scope="module")
def hub(tmp_path_factory: pytest.TempPathFactory) -> Iterator[HubProcess]:
    history = tmp_path_factory.mktemp("urlpattern-cost") / "history.sqlite3"
    process = HubProcess("--anonymous", "--history", str(history), compatibility=False)
    try:
        yield process
    finally:
        process.kill()


def test_hostile_patterns_neither_stall_the_hub_nor_stay_in_its_memory(hub: HubProcess) -> None:
    """Three rounds of ten fresh ``\\w{150}`` patterns, then one of a hundred, each
    subscribed then closed: the loop answers ``/healthz`` throughout (it stalled 2 s a
    round), the hub grows by megabytes while they are connected (330 MB a round of ten) and
    gives them back after (a hundred held ~15 MB, and glibc kept it until the hub trimmed)."""
    warm = _subscribe(hub, ["https://example.com/books/:id"])  # code paths loaded, caches sized
    warm.close()
    time.sleep(0.3)
    before = peak = resident_bytes(hub.proc.pid)
    with _Probe(hub.url) as probe:
        time.sleep(0.1)
        for round_ in range(4):  # the request, then a hundred such patterns
            count = 10 if round_ < 3 else 100
            patterns = [rf"https://e.com/{round_}{i}/:id(\w{{150}})" for i in range(count)]
            sock = _subscribe(hub, patterns)
            peak = max(peak, resident_bytes(hub.proc.pid))
            sock.close()
            time.sleep(0.3)
        time.sleep(2.0)  # the hub hands freed heap back a second after closes
    after = resident_bytes(hub.proc.pid)
    assert probe.stall() < 0.5, sorted(probe.samples)[-5:]
    assert peak - before < 40 * MB, (before / MB, peak / MB)
    assert after - before < 6 * MB, (before / MB, after / MB)


def test_patterns_past_the_limits_are_a_400_naming_the_limit(hub: HubProcess) -> None:
    """One pattern past the per-pattern limit, or patterns past the subscription's together:
    a 400 naming the limit, answered at once; the next subscribe is served."""
    with httpx.Client(base_url=hub.url, timeout=10) as client:
        start = time.perf_counter()
        one = client.get(_query([r"https://e.com/:id(\p{L}{150})"]))
        assert time.perf_counter() - start < 2  # it compiled for 2 s (and kept 30 MB)
        assert one.status_code == 400
        assert "PATTERN_COST_LIMIT" in one.text and "5,000" in one.text, one.text
        several = client.get(_query([rf"https://e.com/{i}/:id(.{{200}})" for i in range(8)]))
        assert several.status_code == 400
        assert "SUBSCRIPTION_COST_LIMIT" in several.text and "20,000" in several.text
    sock = _subscribe(hub, [rf"https://e.com/{i}/:id(.{{200}})" for i in range(4)])
    sock.close()


def _costing(units: int, letter: str) -> str:
    """A pattern the estimator puts at exactly ``units`` (a ``.{n}`` group, the largest that
    fits, and a literal segment of ``letter``s, a unit each); distinct per letter, so none
    is held already."""
    from skipfilter.selectors.urlpattern import pattern_cost

    def text(pad: int, count: int = 200) -> str:
        return f"https://e.com/{letter * pad}/:id(.{{{count}}})"

    count = next(n for n in range(200, 0, -1) if pattern_cost(text(0, n)) <= units)
    pad = units - pattern_cost(text(0, count))
    assert pattern_cost(text(pad, count)) == units
    return text(pad, count)


def _status(hub: HubProcess, patterns: list[str]) -> tuple[int, str]:
    """The subscribe's status and body (a 200 stream is closed at once)."""
    with (
        httpx.Client(base_url=hub.url, timeout=10) as client,
        client.stream("GET", _query(patterns)) as answer,
    ):
        if answer.status_code == 200:
            assert answer.headers["content-type"].startswith("text/event-stream")
            return 200, ""
        return answer.status_code, answer.read().decode()


def test_a_pattern_at_the_limit_is_served_and_one_unit_over_refused(hub: HubProcess) -> None:
    """PATTERN_COST_LIMIT is the most a pattern may cost, not one unit less or more."""
    from skipfilter.selectors.urlpattern import PATTERN_COST_LIMIT

    assert _status(hub, [_costing(PATTERN_COST_LIMIT, "a")]) == (200, "")
    status, text = _status(hub, [_costing(PATTERN_COST_LIMIT + 1, "b")])
    assert status == 400 and "PATTERN_COST_LIMIT" in text, text
    assert f"{PATTERN_COST_LIMIT + 1:,} units" in text and f"{PATTERN_COST_LIMIT:,}" in text


def test_a_subscription_at_the_limit_is_served_and_one_unit_over_refused(
    hub: HubProcess,
) -> None:
    """SUBSCRIPTION_COST_LIMIT is the most a subscription's patterns may cost together
    (beyond BASE_COST each): five of 4,000 units are served, one more unit is a 400."""
    from skipfilter.selectors.urlpattern import BASE_COST, SUBSCRIPTION_COST_LIMIT

    each = SUBSCRIPTION_COST_LIMIT // 5
    assert each * 5 == SUBSCRIPTION_COST_LIMIT
    at = [_costing(BASE_COST + each, letter) for letter in "cdefg"]
    assert _status(hub, at) == (200, "")
    over = [_costing(BASE_COST + each, letter) for letter in "hijk"]
    over.append(_costing(BASE_COST + each + 1, "l"))
    status, text = _status(hub, over)
    assert status == 400 and "SUBSCRIPTION_COST_LIMIT" in text, text
    assert f"{SUBSCRIPTION_COST_LIMIT + 1:,} units" in text, text
