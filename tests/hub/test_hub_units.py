"""Unit tests of the pieces without HTTP: SSE encoding, field checks, history, settings."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pyroaring import BitMap64

from skipfilter.hub import HubSettings
from skipfilter.hub.core.ring import FellBehind, Ring
from skipfilter.hub.sse import (
    InvalidField,
    check_id,
    check_retry,
    check_type,
    comment,
    format_event,
)
from skipfilter.hub.transports.redis.scripts import APPEND, HistoryKeys
from skipfilter.hub.transports.sqlite import topics_json
from skipfilter.hub.update import Entry, Update
from tests.hub.keytest import RoleKeys


def test_format_event_every_field_and_line_breaks() -> None:
    assert format_event("a\r\nb\rc\nd", id="x", type="t", retry=10) == (
        b"event: t\nretry: 10\nid: x\ndata: a\ndata: b\ndata: c\ndata: d\n\n"
    )
    assert format_event("") == b"data: \n\n"
    assert comment("two\nlines") == b": two lines\n"


def test_a_comment_after_an_event_is_no_event_to_a_client_that_keeps_the_last_id() -> None:
    """httpx-sse dispatches on any blank line once it has seen an id: a comment ending a
    stream must not be followed by one, or the client gets the last update twice."""
    from httpx_sse._decoders import SSEDecoder

    decoder = SSEDecoder()
    wire = format_event("x", id="1") + comment("disconnected: the hub is shutting down")
    events = [decoder.decode(line) for line in wire.decode().splitlines()]
    assert [e.id for e in events if e is not None] == ["1"]


@given(st.text(alphabet=st.sampled_from("ab \r\n\u00e9"), max_size=12))
def test_an_event_gives_back_its_data_with_each_line_break_as_lf(data: str) -> None:
    """What an EventSource reads back: the data, every CRLF, CR and LF as one LF."""
    from httpx_sse._decoders import SSEDecoder

    decoder = SSEDecoder()
    events = [decoder.decode(line) for line in format_event(data, id="1").decode().splitlines()]
    found = [e for e in events if e is not None]
    assert [e.data for e in found] == [data.replace("\r\n", "\n").replace("\r", "\n")]


@given(st.lists(st.text(), min_size=1, max_size=4))
def test_stored_topics_are_the_json_text_json_dumps_writes(topics: list[str]) -> None:
    assert topics_json(tuple(topics)) == json.dumps(tuple(topics))


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


def test_settings_validation_and_env() -> None:
    with pytest.raises(ValueError, match="publisher_alg"):
        HubSettings(anonymous=True, publisher_alg="none")
    with pytest.raises(ValueError, match="history_size"):
        HubSettings(anonymous=True, ring_size=10, history_size=5)
    key = "k" * 32
    env = {"MERCURE_JWT_KEY": key, "MERCURE_PROTOCOL_VERSION_COMPATIBILITY": "8"}
    settings = HubSettings.from_env(env, anonymous=False)
    assert settings.publisher_key == settings.subscriber_key == key
    assert settings.protocol_version_compatibility == 8


@pytest.mark.parametrize("key", ["short", "k" * 31, "é" * 15])
def test_a_secret_too_short_to_sign_with_is_refused_at_start(key: str) -> None:
    """One rule for the hub and ``skipfilter token``: 32 bytes (RFC 7518 §3.2)."""
    from skipfilter.hub.frontends.v1.access_tokens import MintError, mint_access_token

    roles = (
        ("publisher", RoleKeys(publisher_key=key)),
        ("subscriber", RoleKeys(subscriber_key=key)),
    )
    for role, keys in roles:
        with pytest.raises(ValueError, match=f"{role}_key: an HMAC secret needs at least 32 bytes"):
            HubSettings(anonymous=True, trusted_issuers=("https://i",), **keys)
    with pytest.raises(MintError, match="at least 32 bytes"):
        mint_access_token(
            "https://i", "https://hub/.well-known/mercure", key, publish=[("*", "exact")]
        )
    HubSettings(anonymous=True, trusted_issuers=("https://i",), publisher_key="é" * 16)


def test_the_app_reads_requests_through_the_configured_front_end() -> None:
    """Mercure 1.0 is the default front end; compatibility 8 serves 0.x beside it; any other
    compatibility value is refused at start-up naming the field, not served half-way."""
    from skipfilter.hub.frontends.compat import CompatFrontend
    from skipfilter.hub.frontends.v1.frontend import V1Frontend
    from skipfilter.hub.http.app import frontend_for

    settings = HubSettings(anonymous=True)
    assert settings.protocol_version_compatibility is None
    assert isinstance(frontend_for(settings), V1Frontend)
    compat = settings.with_changes(protocol_version_compatibility=8)
    assert isinstance(frontend_for(compat), CompatFrontend)
    with pytest.raises(ValueError, match="protocol_version_compatibility 7 is not supported"):
        HubSettings(anonymous=True, protocol_version_compatibility=7)


def test_verifier_cache_still_enforces_expiry(monkeypatch: pytest.MonkeyPatch) -> None:
    import time

    import jwt

    from skipfilter.hub.auth import verify as auth

    verifier = auth.Verifier("k" * 32, "HS256")
    exp = int(time.time()) + 60
    token = jwt.encode({"mercure": {"publish": ["*"]}, "exp": exp}, "k" * 32, algorithm="HS256")
    first = verifier(token, auth.TokenSource.HEADER)
    assert first.publish == ("*",) and first.expires_at == exp
    assert verifier(token, auth.TokenSource.COOKIE).source is auth.TokenSource.COOKIE
    monkeypatch.setattr(time, "time", lambda: exp + 1.0)  # the module verify.py reads
    with pytest.raises(auth.AuthError, match="expired"):
        verifier(token, auth.TokenSource.HEADER)


def test_the_redis_history_keys_keep_their_names_and_the_append_scripts_order() -> None:
    """A renamed key would hide a running cluster's history; a reordered one would have
    ``APPEND`` write the ids hash as the stream."""
    keys = HistoryKeys.of("p")
    assert tuple(keys) == ("p:updates", "p:ids", "p:events", "p:config", "p:trimmed")
    assert (keys.updates, keys.ids, keys.config) == ("p:updates", "p:ids", "p:config")
    order = (
        "local stream, ids, events, config, cursor = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]"
    )
    assert order in APPEND
