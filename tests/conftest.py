"""Test-run wiring shared by every suite."""

from __future__ import annotations

import pytest

#: Suites that share expensive session fixtures (a SparkSession, a Spark cluster, a Spark
#: Connect server): under pytest-xdist's ``--dist loadgroup`` each group runs whole on one
#: worker, so each fixture is built once, not once per worker. Spark's tests are split in
#: two groups of about equal time (the servers' tests, the rest), each with its own local
#: session, so two workers share the longest suite.
_SPARK_SERVERS = {"test_spark_cluster.py", "test_spark_connect.py"}
#: Modules whose tests read one module-scoped result that is costly to build (a
#: ``skipfilter bench`` run; the sdist and wheel, staged inside the source tree, where two
#: builds at once remove each other's files): one worker builds it once.
_ONE_REPORT = {"test_bench.py", "test_packaging.py"}


def _group(item: pytest.Item) -> str | None:
    parts = item.path.relative_to(item.config.rootpath).parts
    if parts[-1] in _ONE_REPORT:
        return parts[-1]
    if "spark" not in parts[:-1]:
        return None
    return "spark-servers" if parts[-1] in _SPARK_SERVERS else "spark"


@pytest.hookimpl(tryfirst=True)  # before xdist's, which reads the groups as it finds them
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        group = _group(item)
        if group is not None:
            item.add_marker(pytest.mark.xdist_group(group))
