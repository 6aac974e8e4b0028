"""Unit tests of the pieces without HTTP: SSE encoding, field checks, history, settings."""

from __future__ import annotations

from pathlib import Path

import pytest

from skipfilter.hub import HubSettings
from skipfilter.hub.history import EARLIEST, History, Update
from skipfilter.hub.sse import (
    InvalidField,
    check_id,
    check_retry,
    check_type,
    comment,
    format_event,
)


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


def test_history_ring_eviction_lookup_and_disk(tmp_path: Path) -> None:
    path = str(tmp_path / "h.sqlite3")
    history = History(path, ring_size=4, history_size=300)
    assert (history.head, history.last_id) == (0, EARLIEST)
    for i in range(10):
        history.append(Update(f"u{i}", ("t",), f"d{i}"), recipients=None)
    assert history.head == 10 and history.last_id == "u9"
    assert history.since(5) is None  # seq 6 left the ring of 4
    assert [e.update.id for e in history.since(6) or []] == ["u6", "u7", "u8", "u9"]
    assert history.since(10) == []
    assert history.lookup("u8") == 9 and history.lookup("u1") == 2  # ring, then disk
    assert history.lookup(EARLIEST) == 0 and history.lookup("nope") is None
    assert [e.update.data for e in history.read(0, 3)] == ["d0", "d1", "d2"]
    history.close()
    reopened = History(path, ring_size=4, history_size=300)
    assert (reopened.head, reopened.last_id) == (10, "u9")
    assert reopened.since(10) == [] and reopened.since(9) is None
    entry = reopened.append(Update("u10", ("t", "t2"), "x", private=True, type="e", retry=5), None)
    assert entry.seq == 11
    (back,) = reopened.read(10, 11)
    assert back.update == Update("u10", ("t", "t2"), "x", True, "e", 5)
    assert back.event == entry.event
    reopened.close()


def test_history_trims_disk_to_history_size(tmp_path: Path) -> None:
    history = History(str(tmp_path / "trim.sqlite3"), ring_size=8, history_size=300)
    for i in range(1024):
        history.append(Update(f"u{i}", ("t",)), recipients=None)
    assert 300 <= history.count() < 300 + 256
    assert history.lookup("u0") is None and history.lookup("u1000") == 1001
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
