"""The Python blocks of README.md and docs/*.md run as written, so a doc that stops working
fails ``make test`` (tests/test_docs_commands.py does the same for the shell blocks).

Every ```python and ```py block runs. The blocks of one page run in order in one namespace,
as a reader types them into one session: a later block may use what an earlier one made.
Each page runs in a fresh temporary folder (files a block writes land there).

Two HTML comments, on the line before a block's fence, say more (Markdown renders
neither):

- ``<!-- not run: REASON -->`` leaves the block out; the reason is required (a Spark
  cluster, a resource on another host).
- ``<!-- run with a hub -->`` gives the page a real hub before the block runs: ``skipfilter
  hub`` on a free loopback port (Mercure 1.0), trusting tokens issued by
  ``https://auth.example.com`` and signed with the keys it finds in
  ``MERCURE_PUBLISHER_JWT_KEY`` and ``MERCURE_SUBSCRIBER_JWT_KEY`` (both set for the blocks
  too), anonymous subscribers allowed, a SQLite history. Every ``https://hub.example.com``
  in the page's blocks becomes that hub's ``http://127.0.0.1:PORT``.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.hub.hubtest import PUBLISHER_KEY, SUBSCRIBER_KEY, HubProcess

ROOT = Path(__file__).resolve().parent.parent
PAGES = ("README.md", *sorted(f"docs/{p.name}" for p in (ROOT / "docs").glob("*.md")))
FENCES = ("python", "py")
NOT_RUN = re.compile(r"<!-- not run: \S.* -->")
WITH_HUB = "<!-- run with a hub -->"
HUB_ORIGIN = "https://hub.example.com"
ISSUER = "https://auth.example.com"


@dataclass
class Block:
    """One fenced Python block: where it starts, its code, and what it asks for."""

    line: int
    code: str
    hub: bool = False


def python_blocks(text: str) -> list[Block]:
    """The blocks of a page that run, in order (``not run`` ones left out)."""
    blocks: list[Block] = []
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        if lines[i].strip().removeprefix("```") in FENCES and lines[i].lstrip().startswith("```"):
            before = next((b.strip() for b in reversed(lines[:i]) if b.strip()), "")
            start = i + 1
            i += 1
            while not lines[i].strip().startswith("```"):
                i += 1
            if not NOT_RUN.fullmatch(before):
                blocks.append(Block(start, "\n".join(lines[start:i]) + "\n", before == WITH_HUB))
        i += 1
    return blocks


@pytest.fixture
def in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A fresh folder to run in, and the keys a hub of the convention trusts."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("MERCURE_PUBLISHER_JWT_KEY", PUBLISHER_KEY)
    monkeypatch.setenv("MERCURE_SUBSCRIBER_JWT_KEY", SUBSCRIBER_KEY)
    yield tmp_path


def _hub(folder: Path) -> HubProcess:
    """The convention's hub (keys from the environment ``in_tmp`` set)."""
    history = str(folder / "docs-hub.sqlite3")
    args = ("--issuer", ISSUER, "--anonymous", "--history", history)
    return HubProcess(*args, compatibility=False)


@pytest.mark.parametrize("page", PAGES)
def test_the_pages_python_blocks_run_as_written(page: str, in_tmp: Path) -> None:
    blocks = python_blocks((ROOT / page).read_text())
    hub: HubProcess | None = None
    namespace: dict[str, object] = {"__name__": f"docs_{Path(page).stem}"}
    try:
        for block in blocks:
            code = block.code
            if block.hub and hub is None:
                hub = _hub(in_tmp)
            if hub is not None:
                code = code.replace(HUB_ORIGIN, hub.url)
            # line numbers in a traceback are the page's own
            exec(compile("\n" * block.line + code, str(ROOT / page), "exec"), namespace)
    finally:
        if hub is not None:
            hub.kill()


def test_the_convention_is_read_as_documented() -> None:
    page = (
        "```python\nA = 1\n```\n<!-- not run: needs a Spark cluster -->\n```py\nB\n```\n"
        "<!-- not run: -->\n```py\nC = 3\n```\n<!-- run with a hub -->\n\n```py\nD = 4\n```\n"
        "```pycon\n>>> E\n```\n"
    )
    assert [(b.code, b.hub) for b in python_blocks(page)] == [
        ("A = 1\n", False),
        ("C = 3\n", False),  # a marker without a reason does not count
        ("D = 4\n", True),
    ]
