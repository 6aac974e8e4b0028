"""The shell commands of README.md and docs/hub.md run as written, so a doc that stops
working fails ``make test``.

Each page's ```console, ```sh and ```bash blocks run in order in one bash session (a
temporary directory for a home, ``.venv/bin`` on PATH, as ``make run`` tells a reader to set
it), every command must succeed, and every output line a ```console block shows must come
out, each at the start of a line (ids like ``urn:uuid:...`` may differ; curl prints no
newline after an answer). Ports 3000 and 3001 become free ports. A command
left running (``... &``) that starts a hub is waited for until it answers, as a reader waits
for its start-up line; it and the others are stopped at the end. A block that cannot run here
(another machine's address, minutes of load, installing packages) says why in a comment on
the line before its fence: ``<!-- not run: REASON -->``.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from rigs.ports import restartable_port

ROOT = Path(__file__).resolve().parent.parent
PAGES = ("README.md", "docs/hub.md")
SHELLS = ("console", "sh", "bash")
NOT_RUN = re.compile(r"<!-- not run: .+ -->")
PORTS = ("3000", "3001")


@dataclass
class Block:
    """One fenced block: its commands and, for ```console, the output it shows."""

    line: int
    commands: list[str] = field(default_factory=list)
    shown: list[str] = field(default_factory=list)


def shell_blocks(text: str) -> list[Block]:
    """The runnable shell blocks of a markdown page (``not run`` ones left out)."""
    blocks: list[Block] = []
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        fence = lines[i].strip()
        if fence.startswith("```") and fence[3:] in SHELLS:
            before = next((b.strip() for b in reversed(lines[:i]) if b.strip()), "")
            block = Block(i + 1)
            i += 1
            continued = False
            while not lines[i].strip().startswith("```"):
                line = lines[i]
                if fence[3:] != "console" or continued:
                    block.commands.append(line)
                elif line.startswith("$ "):
                    block.commands.append(line[2:])
                elif line.strip():
                    block.shown.append(line.strip())
                continued = (fence[3:] != "console" or bool(block.commands)) and line.endswith("\\")
                i += 1
            if not NOT_RUN.fullmatch(before):
                blocks.append(block)
        i += 1
    return blocks


def _waited(command: str) -> list[str]:
    """``command`` and, when it is left running, what a reader would wait for."""
    if not command.rstrip().endswith("&"):
        return [command]
    if "skipfilter hub" in command:
        port = re.search(r"(?:--addr |SERVER_NAME=)\S*:(\d+)", command)
        probe = f"http://127.0.0.1:{port.group(1) if port else PORTS[0]}/healthz"
        wait = f"for _ in $(seq 200); do curl -sfk -o /dev/null {probe} && break; sleep 0.1; done"
        return [command, wait]
    return [command, "sleep 1"]


def script(blocks: list[Block]) -> str:
    """The bash session running ``blocks``; stray jobs are stopped at the end."""
    body = ["set -euo pipefail", "trap 'kill $(jobs -p) 2>/dev/null; wait' EXIT"]
    for block in blocks:
        command = ""
        for line in block.commands:
            command += line + "\n"
            if not line.endswith("\\"):
                body += _waited(command.rstrip("\n"))
                command = ""
    body.append("sleep 1")  # what is still streaming prints its last lines
    return "\n".join(body) + "\n"


def _pattern(shown: str) -> re.Pattern[str]:
    escaped = re.escape(shown)
    escaped = re.sub(r"urn:uuid:[0-9a-f\\-]+", r"urn:uuid:[0-9a-f-]+", escaped)
    escaped = re.sub(r"eyJ\S+", r"eyJ\\S+", escaped)
    return re.compile(escaped)


@pytest.mark.parametrize("page", PAGES)
def test_the_pages_shell_commands_run_as_written(page: str, tmp_path: Path) -> None:
    text = (ROOT / page).read_text()
    ports = {port: str(restartable_port()) for port in PORTS}
    for port, free in ports.items():
        text = text.replace(f":{port}", f":{free}")
    blocks = shell_blocks(text)
    assert blocks, f"{page} has no shell block to run"
    session = script(blocks)
    environment = {
        "PATH": f"{Path(sys.executable).parent}:/usr/bin:/bin",
        "HOME": str(tmp_path),
        "LANG": os.environ.get("LANG", "C.UTF-8"),
    }
    done = subprocess.run(
        ["bash", "-c", session],
        cwd=tmp_path,
        env=environment,
        capture_output=True,
        text=True,
        timeout=60,
    )
    output = done.stdout + done.stderr
    assert done.returncode == 0, f"{page}: failed\n{session}\n{output}"
    lines = [line.strip() for line in output.splitlines()]
    for block in blocks:
        for shown in block.shown:
            pattern = _pattern(shown)
            # search, not match: a background curl's stream may land mid-line of another's
            assert any(pattern.search(line) for line in lines), (
                f"{page}, block at line {block.line}: {shown!r} did not come out\n{output}"
            )


def test_blocks_marked_not_run_are_left_out() -> None:
    page = "```console\n$ true\n```\n<!-- not run: elsewhere -->\n```sh\nfalse\n```\n"
    assert [b.commands for b in shell_blocks(page)] == [["true"]]
