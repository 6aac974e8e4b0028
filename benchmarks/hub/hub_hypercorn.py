"""The load test (``hub_load.py``) with one more hub variant, ``hypercorn``: the hub's app
served by Hypercorn, a server that can also speak HTTP/2, instead of uvicorn. Streams then
go through ASGI, as uvicorn's ``asgi`` variant does; the clients speak HTTP/1.1 to both,
which isolates what each server's stream path costs. Hypercorn is not a dependency of the
project: put it on ``HYPERCORN_PATH`` (e.g. ``pip install --target /tmp/hc hypercorn``).

    HYPERCORN_PATH=/tmp/hc .venv/bin/python benchmarks/hub/hub_hypercorn.py --scenario broadcast \\
        --subscribers 2000 --rate 10 --seconds 20 --variants new,asgi,hypercorn
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from benchmarks.hub import hub_load  # noqa: E402

#: Parses the hub's own flags, builds its app, serves it (and /metrics) with Hypercorn.
_LAUNCHER = """
import argparse, asyncio, sys
import uvloop
from hypercorn.asyncio import serve
from hypercorn.config import Config
from skipfilter.hub.http.app import create_app
from skipfilter.hub.server.cli import add_arguments, settings_from_args
from skipfilter.hub.server.serve import raise_open_files_limit
parser = argparse.ArgumentParser()
add_arguments(parser)
args = parser.parse_args(sys.argv[2:])
raise_open_files_limit()
settings = settings_from_args(args)
config = Config()
config.bind = [args.addr] + ([settings.metrics_addr] if settings.metrics_addr else [])
config.backlog = 4096
config.loglevel = "WARNING"
uvloop.run(serve(create_app(settings), config))
"""

_base = hub_load.hub_command


def hub_command(
    variant: str, port: int, metrics: int, history: str, args: Any, transport: str | None
) -> tuple[list[str], str, dict[str, str]]:
    """``hypercorn[+KIND]``: the ``asgi`` variant's flags, served by Hypercorn."""
    name, clients = hub_load.split_variant(variant)
    if name != "hypercorn":
        return _base(variant, port, metrics, history, args, transport)
    argv, cwd, env = _base(f"asgi+{clients}", port, metrics, history, args, transport)
    paths = [os.environ.get("HYPERCORN_PATH", ""), str(ROOT)]
    env["PYTHONPATH"] = os.pathsep.join(p for p in paths if p)
    return [sys.executable, "-c", _LAUNCHER, *argv[3:]], cwd, env


hub_load.hub_command = hub_command

if __name__ == "__main__":
    sys.exit(hub_load.main())
