"""Test-run wiring shared by every suite."""

from __future__ import annotations

import pytest

#: Suites that share one expensive session fixture (a SparkSession, a Spark cluster):
#: under pytest-xdist's ``--dist loadgroup`` each runs whole on one worker, so the
#: fixture is built once, not once per worker.
_GROUPED = {"spark": "spark"}


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        folders = item.path.relative_to(item.config.rootpath).parts[:-1]
        for folder, group in _GROUPED.items():
            if folder in folders:
                item.add_marker(pytest.mark.xdist_group(group))
