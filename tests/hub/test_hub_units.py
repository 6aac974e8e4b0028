"""Unit tests of the pieces without HTTP: SSE encoding, field checks, history, settings."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path
from typing import Any

import pytest
from pyroaring import BitMap64

from skipfilter.hub import HubSettings
from skipfilter.hub.history import History, HistoryUnavailable
from skipfilter.hub.ring import FellBehind, Ring
from skipfilter.hub.sse import (
    InvalidField,
    check_id,
    check_retry,
    check_type,
    comment,
    format_event,
)
from skipfilter.hub.update import EARLIEST, Entry, Update


def test_format_event_every_field_and_line_breaks() -> None:
    assert format_event("a\r\nb\rc\nd", id="x", type="t", retry=10) == (
        b"event: t\nretry: 10\nid: x\ndata: a\ndata: b\ndata: c\ndata: d\n\n"
    )
    assert format_event("") == b"data: \n\n"
    assert comment("two\nlines") == b": two lines\n\n"


@pytest.mark.parametrize("bad", ["a\nb", "a\rb", "a\0b", "#frag", ""])
def test_check_id_rejects(bad: str) -> None:
    with pytest.raises(InvalidField, match="'id'") as info:
        check_id(bad)
    assert info.value.field == "id"


def test_checks_accept_good_values() -> None:
    assert check_id("urn:uuid:1#frag") == "urn:uuid:1#frag"
    assert check_type("book.updated") == "book.updated"
    assert check_retry("0") == 0
    for bad in ("1.5", "-1", "", "١٢"):  # the last one: non-ASCII digits
        with pytest.raises(InvalidField, match="'retry'"):
            check_retry(bad)
    with pytest.raises(InvalidField, match="'type'"):
        check_type("a\r\nid: forged")


def _entry(seq: int, size: int = 0, update_id: str | None = None) -> Entry:
    return Entry.of(seq, Update(update_id or f"u{seq}", ("t",), "x" * size))


def test_ring_bounds_count_and_bytes_and_walks_from_a_cursor() -> None:
    ring = Ring(capacity=4, max_bytes=10_000, head=10)
    assert (ring.first, ring.head, len(ring)) == (11, 10, 0)
    for seq in range(11, 17):
        entry = _entry(seq)
        entry.recipients = BitMap64([1] if seq % 2 else [2])
        ring.append(entry)
    assert (ring.first, ring.head, len(ring)) == (13, 16, 4)  # count bound
    assert [e.seq for e in ring.owed(1, 12)] == [13, 15]
    assert [e.seq for e in ring.owed(2, 13)] == [14, 16]
    assert list(ring.owed(1, 16)) == []
    with pytest.raises(FellBehind):
        list(ring.owed(1, 11))  # seq 12 was evicted
    assert ring.seq_of("u14") == 14 and ring.seq_of("u12") is None
    assert [e.seq for e in ring.between(12, 15)] == [13, 14, 15]
    assert [e.seq for e in ring.backwards(15, 2)] == [15, 14]
    with pytest.raises(ValueError, match="expects seq 17"):
        ring.append(_entry(18))
    big = _entry(17, size=9_960)
    big.recipients = BitMap64()
    ring.append(big)
    assert ring.first > 14 and ring.bytes <= 10_000  # byte bound: older entries leave
    huge = _entry(18, size=50_000)
    huge.recipients = BitMap64()
    ring.append(huge)
    assert (ring.first, len(ring)) == (18, 1)  # the newest always stays


def test_entry_chunk_frames_the_event_once() -> None:
    entry = Entry.of(1, Update("i", ("t",), "héllo\nworld"))
    event = entry.update.encode()
    assert bytes(entry.event) == event
    assert entry.chunk == b"%x\r\n" % len(event) + event + b"\r\n"


def _store(history: History, updates: list[Update]) -> list[Entry]:
    """Append ``updates`` one group at a time and wait for the commit."""

    async def go() -> list[Entry]:
        loop = asyncio.get_running_loop()
        done: asyncio.Future[Any] = loop.create_future()
        history.append(updates, [b""] * len(updates), done.set_result)
        result = await done
        assert not isinstance(result, BaseException)
        return list(result)

    return asyncio.run_coroutine_threadsafe(go(), _loop(history)).result(10)


def _loop(history: History) -> asyncio.AbstractEventLoop:
    return history._loop  # type: ignore[return-value]


def _run(history: History, coroutine: Any) -> Any:
    return asyncio.run_coroutine_threadsafe(coroutine, _loop(history)).result(10)


@pytest.fixture
def background_loop() -> Any:
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    yield loop
    loop.call_soon_threadsafe(loop.stop)
    thread.join(5)
    loop.close()


def test_history_group_commit_read_lookup_and_reopen(tmp_path: Path, background_loop: Any) -> None:
    path = str(tmp_path / "h.sqlite3")
    history = History(path, history_size=300)
    history.start(background_loop)
    assert (history.head, history.last_id_at_start) == (0, EARLIEST)
    stored = _store(history, [Update(f"u{i}", ("t",), f"d{i}") for i in range(10)])
    assert [e.seq for e in stored] == list(range(1, 11)) and history.commits == 1
    assert history.head == 10
    assert [e.update.data for e in _run(history, history.read(0, 3, 100, 1 << 20))] == [
        "d0",
        "d1",
        "d2",
    ]
    assert len(_run(history, history.read(0, 10, 100, 1))) == 1  # byte bound: one row
    assert _run(history, history.lookup("u8")).seq == 9
    assert _run(history, history.lookup("nope")) is None
    history.close()
    reopened = History(path, history_size=300)
    reopened.start(background_loop)
    assert (reopened.head, reopened.last_id_at_start) == (10, "u9")
    update = Update("u10", ("t", "t2"), "x", private=True, type="e", retry=5)
    (entry,) = _store(reopened, [update])
    assert entry.seq == 11
    (back,) = _run(reopened, reopened.read(10, 11, 10, 1 << 20))
    assert back.update == update
    assert back.chunk == Entry.of(11, update).chunk
    reopened.close()


def test_history_trims_disk_to_history_size(tmp_path: Path, background_loop: Any) -> None:
    history = History(str(tmp_path / "trim.sqlite3"), history_size=300)
    history.start(background_loop)
    for start in range(0, 1024, 64):
        _store(history, [Update(f"u{i}", ("t",)) for i in range(start, start + 64)])
    assert 300 <= _run(history, history.count()) < 300 + 256
    assert _run(history, history.lookup("u0")) is None
    assert _run(history, history.lookup("u1000")).seq == 1001
    history.close()


def test_history_failure_reaches_every_waiting_publisher(
    tmp_path: Path, background_loop: Any
) -> None:
    history = History(str(tmp_path / "fail.sqlite3"), history_size=300)
    history.start(background_loop)
    _store(history, [Update("a", ("t",))])
    history._db.execute("DROP TABLE updates")  # the disk "fails" under the history

    async def go() -> Any:
        loop = asyncio.get_running_loop()
        done: asyncio.Future[Any] = loop.create_future()
        history.append([Update("b", ("t",))], [b""], done.set_result)
        return await done

    result = _run(history, go())
    assert isinstance(result, HistoryUnavailable) and "could not store" in str(result)
    assert history.head == 1
    history.close()


def test_settings_validation_and_env() -> None:
    with pytest.raises(ValueError, match="publisher_alg"):
        HubSettings(anonymous=True, publisher_alg="none")
    with pytest.raises(ValueError, match="history_size"):
        HubSettings(anonymous=True, ring_size=10, history_size=5)
    settings = HubSettings.from_env({"MERCURE_JWT_KEY": "k"}, anonymous=False)
    assert settings.publisher_key == settings.subscriber_key == "k"


def test_verifier_cache_still_enforces_expiry(monkeypatch: pytest.MonkeyPatch) -> None:
    import time

    import jwt

    from skipfilter.hub import auth

    verifier = auth.Verifier("k" * 32, "HS256")
    exp = int(time.time()) + 60
    token = jwt.encode({"mercure": {"publish": ["*"]}, "exp": exp}, "k" * 32, algorithm="HS256")
    first = verifier(token, auth.TokenSource.HEADER)
    assert first.publish == ("*",) and first.expires_at == exp
    assert verifier(token, auth.TokenSource.COOKIE).source is auth.TokenSource.COOKIE
    monkeypatch.setattr(auth.time, "time", lambda: exp + 1.0)
    with pytest.raises(auth.AuthError, match="expired"):
        verifier(token, auth.TokenSource.HEADER)
