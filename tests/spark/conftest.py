"""Shared for the whole test run: one local[2] SparkSession (a JVM start costs ~20 s here), and
the Connect server and standalone cluster, started only when a test asks for them."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from typing import Any

import pytest


@pytest.fixture(scope="session")
def spark() -> Iterator[Any]:
    from pyspark.sql import SparkSession  # no importorskip: these tests must not vanish

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)  # workers run this venv
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    session = (
        SparkSession.builder.master("local[2]")
        .appName("skipfilter-tests")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "4")
        .config("spark.default.parallelism", "2")
        .config("spark.driver.memory", "1g")
        .config("spark.sql.streaming.minBatchesToRetain", "10")
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()


@pytest.fixture(scope="session")
def connect_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A real Spark Connect server from the pyspark wheel, for the whole run; its sc:// URL."""
    from tests.spark.servers import connect_server

    with connect_server(tmp_path_factory.mktemp("connect-server")) as url:
        yield url


@pytest.fixture(scope="session")
def standalone_master(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A real standalone master and worker on loopback, for the whole run; the master URL.

    The worker's ``python3`` has skipfilter's dependencies but not skipfilter, as on a
    cluster whose image was not built for it: jobs must name a Python or ship the package."""
    from tests.spark.servers import python_without_skipfilter, standalone_cluster

    bare = python_without_skipfilter(tmp_path_factory.mktemp("executor-python") / "venv")
    with standalone_cluster(tmp_path_factory.mktemp("standalone"), worker_path=[str(bare)]) as url:
        yield url
