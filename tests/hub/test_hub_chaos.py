"""The chaos soak (``benchmarks/chaos.py``) as a test: a seeded run with every kind of fault
and zero violations; and, one test each, the defects the soak found (each failed before
its fix)."""

from __future__ import annotations

import asyncio

import httpx

from tests.hub.hubtest import HUB, Server, pub_token


def test_each_publisher_is_answered_with_its_own_id_when_publishes_share_a_batch(
    server: Server,
) -> None:
    """Publishes that arrive together share a commit and a fan-out batch; each 200 must
    name the publisher's own update (one batch answered every publisher with its last id)."""
    headers = {"Authorization": f"Bearer {pub_token()}"}

    async def publish_all() -> list[tuple[str, str]]:
        async with httpx.AsyncClient(base_url=server.url, timeout=30) as client:

            async def one(i: int) -> tuple[str, str]:
                data = {"topic": "https://example.com/t", "id": f"own-{i}"}
                response = await client.post(HUB, data=data, headers=headers)
                assert response.status_code == 200, response.text
                return f"own-{i}", response.text

            return await asyncio.gather(*(one(i) for i in range(60)))

    answers = asyncio.run(publish_all())
    assert server.hub.fanout.batches > 0  # some publishes did go out together
    assert [sent for sent, _ in answers] == [got for _, got in answers]
