"""Where ``skipfilter hub`` keeps its files unless told: the user's state directory.

A durable history is state that outlives the process but is no user's document, which is what
the XDG base directories call state (``$XDG_STATE_HOME``, by default ``~/.local/state``): the
hub no longer leaves SQLite files in whatever folder it was started from. One file per port,
as one process owns a history file (``transports/sqlite.py``) and a port: two hubs on two
ports never share one, and a hub restarted on its port finds its history again.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

__all__ = ["STATE_HOME_SHOWN", "default_history", "state_dir"]

#: How the help names the folder (the variable, then its fallback).
STATE_HOME_SHOWN = "$XDG_STATE_HOME/skipfilter (~/.local/state/skipfilter)"


def state_dir(env: Mapping[str, str] | None = None) -> Path:
    """``$XDG_STATE_HOME/skipfilter``, or ``~/.local/state/skipfilter`` when the variable is
    unset or not absolute (as the XDG specification asks)."""
    env = os.environ if env is None else env
    base = env.get("XDG_STATE_HOME", "")
    root = (
        Path(base)
        if os.path.isabs(base)
        else Path(env.get("HOME") or Path.home()) / ".local" / "state"
    )
    return root / "skipfilter"


def default_history(port: int, env: Mapping[str, str] | None = None) -> str:
    """The history file of a hub on ``port`` that was given no ``--history``."""
    return str(state_dir(env) / f"hub-{port}.sqlite3")
