"""A rolling upgrade over Redis: nodes from before entries carried their topics (``t``) and
nodes after it share one stream. Each reads what the other writes, with the same bytes,
and privacy holds both ways. The older node is the revision this change started from,
exported with ``git archive`` and run as a real process beside a current node."""

from __future__ import annotations

import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import cast

import httpx
import pytest
import redis

from tests.hub.hubtest import (
    HUB,
    PUBLISHER_KEY,
    SUBSCRIBER_KEY,
    HubProcess,
    Server,
    Stream,
    pub_token,
    sub_token,
)
from tests.hub.redis_server import RedisServer

#: The last revision whose hubs write entries without ``t``.
OLDER = "9514441"
ROOT = Path(__file__).resolve().parents[2]
TOPIC = "https://example.com/t"


@pytest.fixture
def older_hub(tmp_path: Path, redis_server: RedisServer) -> Iterator[HubProcess]:
    """A hub node of revision ``OLDER`` on ``redis_server`` (skipped where the repository
    does not hold that revision, as in a shallow clone)."""
    archive = subprocess.run(
        ["git", "-C", str(ROOT), "archive", OLDER, "skipfilter"], capture_output=True
    )
    if archive.returncode != 0:
        pytest.skip(f"revision {OLDER} is not in this clone: {archive.stderr.decode()[:200]}")
    source = tmp_path / "older"
    source.mkdir()
    subprocess.run(["tar", "-x", "-C", str(source)], input=archive.stdout, check=True)
    env = {
        "PYTHONPATH": str(source),
        "PYTHONSAFEPATH": "1",  # not the working directory's skipfilter
        "MERCURE_PUBLISHER_JWT_KEY": PUBLISHER_KEY,
        "MERCURE_SUBSCRIBER_JWT_KEY": SUBSCRIBER_KEY,
    }
    node = HubProcess("--anonymous", "--transport", redis_server.url, env=env)
    try:
        yield node
    finally:
        node.kill()


def _publisher(node: HubProcess | Server) -> Callable[..., httpx.Response]:
    """A publish to ``node``: one topic, data and more form fields."""

    def publish(data: str, **fields: str) -> httpx.Response:
        form = {"topic": TOPIC, "data": data, **fields}
        headers = {"Authorization": f"Bearer {pub_token()}"}
        return httpx.post(node.url + HUB, data=form, headers=headers, timeout=10)

    return publish


def _event(stream: Stream, timeout: float = 10) -> list[str]:
    """The lines of the next event of a raw stream (the opening comment skipped)."""
    lines: list[str] = []
    while True:
        line = stream.next(timeout)
        if line == "":
            if lines:
                return lines
        elif not line.startswith(":"):
            lines.append(line)


def test_older_and_newer_nodes_read_each_others_entries(
    redis_hub: Callable[..., Server], older_hub: HubProcess, redis_server: RedisServer
) -> None:
    newer = redis_hub()
    auth = {"Authorization": f"Bearer {sub_token(TOPIC)}"}
    streams = {
        (name, who): Stream(node, [TOPIC], headers=headers, raw=True)
        for name, node in (("older", older_hub), ("newer", newer))
        for who, headers in (("allowed", auth), ("anyone", {}))
    }
    expected = ["event: kind", "retry: 7", "id: from-newer", "data: two", "data: lines é"]
    fields = {"type": "kind", "retry": "7", "id": "from-newer"}
    assert _publisher(newer)("two\nlines é", **fields).status_code == 200
    for stream in streams.values():
        assert _event(stream) == expected
    assert _publisher(older_hub)("x\ny", id="from-older").status_code == 200
    for stream in streams.values():
        assert _event(stream) == ["id: from-older", "data: x", "data: y"]
    # private, from each side: only the subscriber allowed to see it gets it, on both
    for name, node in (("newer", newer), ("older", older_hub)):
        publish = _publisher(node)
        assert publish("secret", id=f"private-{name}", private="on").status_code == 200
        assert publish("open", id=f"public-{name}").status_code == 200
        for (_, who), stream in streams.items():
            got = _event(stream)
            if who == "allowed":
                assert got == [f"id: private-{name}", "data: secret"]
                got = _event(stream)
            assert got == [f"id: public-{name}", "data: open"]
    for stream in streams.values():
        stream.close()
    stored = redis.Redis.from_url(redis_server.url).xrange("skipfilter:updates")
    assert isinstance(stored, list)  # typed optional by redis-py: a synchronous client answers
    entries = [cast(dict[bytes, bytes], fields) for _, fields in stored]
    with_t = {fields[b"i"]: b"t" in fields for fields in entries if b"i" in fields}
    assert with_t[b"from-newer"] and not with_t[b"from-older"]  # both versions wrote
