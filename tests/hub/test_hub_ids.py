"""Hub-generated ids: valid version 7 UUIDs, unique, ordered by the time they were made."""

from __future__ import annotations

import time
import uuid

from skipfilter.hub.ids import IdSource


def test_ids_are_unique_rfc_9562_version_7_uuids_carrying_the_time() -> None:
    source = IdSource()
    before = time.time_ns() // 1_000_000
    ids = [source() for _ in range(20_000)]  # several refills of the random pool
    after = time.time_ns() // 1_000_000
    assert len(set(ids)) == len(ids)
    for text in ids:
        assert text.startswith("urn:uuid:")
        value = uuid.UUID(text.removeprefix("urn:uuid:"))
        assert str(value) == text.removeprefix("urn:uuid:")
        assert value.version == 7 and value.variant == uuid.RFC_4122
        assert before <= value.int >> 80 <= after


def test_ids_made_in_later_milliseconds_sort_after_earlier_ones() -> None:
    source = IdSource()
    first = source()
    time.sleep(0.003)
    assert source() > first


def test_the_random_bits_vary_in_both_random_fields() -> None:
    source = IdSource()
    values = [uuid.UUID(source().removeprefix("urn:uuid:")).int for _ in range(200)]
    rand_a = {(v >> 64) & 0xFFF for v in values}
    rand_b = {v & ((1 << 62) - 1) for v in values}
    assert len(rand_a) > 100 and len(rand_b) == 200
