"""What a job may ask of its SparkSession, classic (a local JVM) or Spark Connect (``sc://``).

A Spark Connect session has no ``SparkContext``: no broadcast variables, no RDDs, no
``_jvm``. The jobs ask this module instead of the session, so one code path serves both.

Contents: :func:`is_connect`, :func:`default_parallelism`, :func:`path_exists`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = ["default_parallelism", "is_connect", "path_exists"]

_PROBE_ROWS = 1 << 16  # rows of the parallelism probe: one per partition is enough


def is_connect(spark: SparkSession) -> bool:
    """Whether ``spark`` is a Spark Connect client session (no SparkContext behind it)."""
    return type(spark).__module__.startswith("pyspark.sql.connect")


def default_parallelism(spark: SparkSession) -> int:
    """The cluster's default parallelism: how many tasks keep every executor core busy.

    Classic sessions ask the SparkContext. Connect sessions read
    ``spark.default.parallelism`` when it is set, and otherwise count the partitions
    Spark splits ``spark.range`` into, which it sizes by that same default (one small job).
    """
    if not is_connect(spark):
        return int(spark.sparkContext.defaultParallelism)
    configured = spark.conf.get("spark.default.parallelism", None)
    if configured:
        return int(configured)
    from pyspark.sql import functions as F

    probe = spark.range(0, _PROBE_ROWS).select(F.spark_partition_id().alias("p"))
    return int(probe.distinct().count())


def path_exists(spark: SparkSession, path: str) -> bool:
    """Whether ``path`` exists on the file system the Spark driver sees (any Hadoop scheme).

    Classic sessions ask Hadoop's ``FileSystem.exists`` for the path's scheme: no job, and
    none of the ``FileNotFoundException`` traces a data source logs for a missing path.
    Connect sessions ask through the data source API, as the client may not share the
    server's file systems (a missing path then logs on the server, not here).
    """
    if not is_connect(spark):
        jvm = spark.sparkContext._jvm
        assert jvm is not None
        hadoop_path = jvm.org.apache.hadoop.fs.Path(path)
        file_system = hadoop_path.getFileSystem(spark.sparkContext._jsc.hadoopConfiguration())
        return bool(file_system.exists(hadoop_path))
    from pyspark.errors import AnalysisException

    try:
        _ = spark.read.format("binaryFile").load(path).schema
    except AnalysisException as error:
        if error.getCondition() == "PATH_NOT_FOUND":
            return False
        raise
    return True
