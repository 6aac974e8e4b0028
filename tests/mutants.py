"""How a test that plants a bug searches for it with a state machine ("not toothless").

Derandomized, with room to search and no example database: the same search on every run,
so a clean clone finds what this machine found. Random searches of 200 examples missed a
planted stale LockedTrie cache once in a clean-clone run, though 30 seeds of 30 found it.
The search stops at the first failure, so the room costs nothing when the bug is caught.
"""

from __future__ import annotations

from hypothesis import Phase, settings

__all__ = ["mutant_search"]

_SEARCH = settings(
    max_examples=1000, deadline=None, phases=[Phase.generate], derandomize=True, database=None
)


def mutant_search(steps: int) -> settings:
    """Settings for a machine of up to ``steps`` steps per example hunting a planted bug."""
    return settings(_SEARCH, stateful_step_count=steps)
