"""``strategy="auto"``: broadcast or sharded, picked from Spark's size estimate, with no job.

Spark's optimizer estimates every plan's size in bytes from what it knows without reading
data: file sizes for a file source (Parquet, JSON, ...), the table statistics of a catalog
table, the rows of a local relation. The subscriptions' estimate decides, as Spark's own
``autoBroadcastJoinThreshold`` decides a join: at most :data:`AUTO_BROADCAST_BYTES`
broadcasts, more (or no estimate: an RDD or a Python data source reports ``8.0 EiB``)
shards. docs/spark.md states the rule and where the limit comes from.

Contents: :data:`AUTO_BROADCAST_BYTES`, :func:`estimated_bytes`, :func:`auto_strategy`.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, cast

from skipfilter.spark.session import is_connect

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

__all__ = ["AUTO_BROADCAST_BYTES", "auto_strategy", "estimated_bytes"]

#: The largest estimated subscriptions that ``auto`` broadcasts: 64 MiB is ~900,000 rows of
#: the mercure workload as Parquet (~75 bytes a row on disk, ~2 KB a row in each worker's
#: index), ~250,000 rows of an in-memory table (Spark counts ~270 bytes a row there).
AUTO_BROADCAST_BYTES = 64 << 20

_UNKNOWN = (1 << 63) - 1  # spark.sql.defaultSizeInBytes: what a plan without statistics reports
_UNITS = {"B": 1, "KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30, "TiB": 1 << 40}
_UNITS |= {"PiB": 1 << 50, "EiB": 1 << 60}
_STATISTICS = re.compile(r"Statistics\(sizeInBytes=([0-9.]+) ([KMGTPE]?i?B)")


def estimated_bytes(df: DataFrame) -> int | None:
    """Spark's estimate of ``df``'s size in bytes, or None when it has none; runs no job.

    Classic sessions ask the optimized plan's statistics; Connect sessions read them from
    ``explain(mode="cost")``, rounded as Spark prints them (three significant digits).
    """
    if is_connect(df.sparkSession):
        from pyspark.sql.connect.dataframe import DataFrame as ConnectFrame

        plan = cast(ConnectFrame, df)._explain_string(mode="cost")  # the server plans it
        found = _STATISTICS.search(plan)
        if found is None:
            return None
        size = int(float(found.group(1)) * _UNITS[found.group(2)])
        return None if size >= 8 * _UNITS["EiB"] else size
    size = int(df._jdf.queryExecution().optimizedPlan().stats().sizeInBytes())
    return None if size >= _UNKNOWN else size


def auto_strategy(subscriptions: DataFrame) -> str:
    """``broadcast`` when ``subscriptions`` are estimated at most AUTO_BROADCAST_BYTES, else
    ``sharded`` (also when Spark has no estimate). O(plan size), on the driver, no job."""
    size = estimated_bytes(subscriptions)
    return "broadcast" if size is not None and size <= AUTO_BROADCAST_BYTES else "sharded"
