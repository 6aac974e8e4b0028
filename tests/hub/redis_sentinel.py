"""A Redis Sentinel set of real processes (``rigs/sentinel_set.py``: a primary, two
replicas, three sentinels on loopback) as a pytest fixture, and what the tests read from it."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis

from rigs.sentinel_set import SentinelSet


def sentinel_available() -> bool:
    """As ``redis_available``: under CI a missing redis-sentinel is a failure, not a skip."""
    import os

    return bool(os.environ.get("CI")) or shutil.which("redis-sentinel") is not None


@pytest.fixture
def sentinel_set(tmp_path: Path) -> Iterator[SentinelSet]:
    with SentinelSet(tmp_path) as servers:
        yield servers


def stored_ids(port: int, prefix: str = "skipfilter") -> list[str]:
    """The update ids in the stream of the server on ``port``, in its order."""
    with redis.Redis(port=port, decode_responses=True, socket_timeout=10) as store:
        return [f["i"] for _, f in store.xrange(f"{prefix}:updates") if f.get("k") != "e"]
