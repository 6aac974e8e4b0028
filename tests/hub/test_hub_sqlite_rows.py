"""Rows of the shared SQLite history become entries decoded only where they are delivered
(issue 42): what a worker sends once someone receives a row must be byte for byte what
an eagerly decoded row gave, odd values included; a row no hub wrote is refused by name."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from skipfilter.hub.transports.sqlite_rows import RowReader
from skipfilter.hub.update import LazyEntry, Update, http_chunk

_TEXT = st.text(st.characters(blacklist_categories=("Cc", "Cs")), max_size=12)


@settings(max_examples=300, deadline=None)
@given(
    update_id=_TEXT.filter(bool),
    topics=st.lists(_TEXT, min_size=1, max_size=3),
    data=st.text(max_size=40) | st.sampled_from(["a\nb", "a\r\nb\rc", "\n", ""]),
    private=st.booleans(),
    event_type=st.none() | _TEXT.filter(bool),
    retry=st.none() | st.sampled_from([0, 1, 2**63 - 1, 2**63, 2**64 - 1]),
)
def test_a_row_delivered_lazily_sends_the_bytes_of_its_update(
    update_id: str,
    topics: list[str],
    data: str,
    private: bool,
    event_type: str | None,
    retry: int | None,
) -> None:
    update = Update(update_id, tuple(topics), data, private, event_type, retry)
    stored_retry = retry - 2**64 if retry is not None and retry >= 2**63 else retry
    row = (7, update_id, json.dumps(topics), data, int(private), event_type, stored_retry)
    reader = RowReader()
    entry = reader.entry(row, 3)
    assert isinstance(entry, LazyEntry) and entry.raw is row  # nothing decoded yet
    assert (entry.seq, entry.position, entry.id) == (3, 7, update_id)
    assert (entry.topics, entry.private) == (tuple(topics), private)
    assert entry.usable()
    assert entry.update == update
    assert entry.chunk == http_chunk(update.encode())
    again = reader.entry(row, 4)  # the topics string is read once, its answer reused
    assert again.topics is entry.topics


@pytest.mark.parametrize(
    "topics",
    ['"a"', "[]", "[1]", '["a", null]', "{broken", "7", None, '["a"] x', '["a"]]', "", b'["a"]'],
    ids=repr,
)
def test_a_row_whose_topics_no_hub_wrote_is_refused(topics: object) -> None:
    with pytest.raises((ValueError, TypeError)):
        RowReader().entry((1, "id", topics, "d", 0, None, None), 1)
