"""``skipfilter route``: route a message log to a subscription table on any Spark master.

Runs as ``skipfilter route ...`` (local mode by default) or under spark-submit::

    spark-submit --master yarn $(python -c 'import skipfilter.spark.cli as m; print(m.__file__)') \\
        --messages s3a://logs/updates/ --subscriptions s3a://subs/ --out s3a://deliveries/

Malformed rows go to ``--errors`` when given; without it the job refuses to route and
names the first bad rows. Either way it says how many there were.
"""

from __future__ import annotations

import argparse
import contextlib
import ipaddress
import os
import socket
import sys
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING

from skipfilter.selectors import SYNTAXES
from skipfilter.spark.formats import INPUT_FORMATS

# the schemas of skipfilter.spark.contract, without importing pyarrow for --help
DELIVERIES = "message_id string, subscriber_id string"
ERRORS = "source string, file string, row_id string, reason string, record string"

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

    from skipfilter.spark.sources import MessageSource

__all__ = ["add_arguments", "main", "run"]

# routing.STRATEGIES (and "auto"), without importing pyspark
_STRATEGIES = ("auto", "broadcast", "sharded", "sql", "naive")
_REDIS = ("redis://", "rediss://", "unix://")  # --messages that name a hub's Redis stream
_SHOWN = 5  # malformed rows printed when there is no --errors output
_MISSING = "No module named 'skipfilter'"  # a task failed: executors lack the package
_LOG_LEVELS = ("ERROR", "WARN", "INFO", "DEBUG")
_QUIET_LOGS = os.path.join(os.path.dirname(__file__), "log4j2-quiet.properties")
_PROGRESS = "spark.ui.showConsoleProgress"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Add the ``route`` options to ``parser`` (no pyspark import: ``--help`` stays fast)."""
    where = "a file, directory or glob: a local path or any URI Spark reads (file://, s3a://...)"
    parser.add_argument("--messages", required=True, help=f"updates: {where}")
    parser.add_argument("--subscriptions", required=True, help=f"subscriptions: {where}")
    parser.add_argument(
        "--input-format",
        choices=INPUT_FORMATS,
        help="format of --messages and --subscriptions (default: asked of Spark for each: "
        "the files' extensions, else their first bytes)",
    )
    parser.add_argument("--out", required=True, help="where deliveries are written")
    parser.add_argument(
        "--strategy",
        choices=_STRATEGIES,
        default="auto",
        help="auto (default): broadcast, or sharded past 64 MiB of estimated subscriptions",
    )
    parser.add_argument(
        "--format", choices=("parquet", "json"), help="output format (default: the messages')"
    )
    parser.add_argument(
        "--log-level",
        choices=_LOG_LEVELS,
        default="ERROR",
        help="Spark's driver log level (default ERROR: no Spark chatter on stderr)",
    )
    parser.add_argument("--master", help="Spark master (default: spark-submit's, else local[*])")
    parser.add_argument(
        "--remote",
        help="a Spark Connect server, sc://HOST:PORT, instead of a master (default: $SPARK_REMOTE)",
    )
    parser.add_argument("--errors", help="write malformed rows here instead of refusing the job")
    parser.add_argument(
        "--message-column",
        action="append",
        metavar="FIELD=COLUMN",
        help="the messages' own column for a contract field: id=event_id, topics=tags, "
        "private=is_private (repeat for each)",
    )
    parser.add_argument(
        "--subscription-column",
        action="append",
        metavar="FIELD=COLUMN",
        help="the subscriptions' own column: subscriber_id=user, topics=patterns, "
        "allowed=grants (repeat for each)",
    )
    parser.add_argument(
        "--carry",
        metavar="COLUMNS",
        help="message columns copied to each delivery, comma-separated (ts,part); from JSON "
        "lines as strings",
    )
    parser.add_argument("--syntax", choices=SYNTAXES, default="mercure", help="selector syntax")
    parser.add_argument("--shards", type=int, help="shards of the sharded strategy")
    parser.add_argument("--overwrite", action="store_true", help="replace existing outputs")
    parser.add_argument(
        "--stream",
        action="store_true",
        help="route updates as they arrive: --messages is a directory of JSON-lines files "
        "(Parquet with --input-format parquet), or a hub's Redis stream "
        "(redis://HOST:PORT/DB[?prefix=NAME]); any --strategy",
    )
    parser.add_argument("--checkpoint", help="streaming checkpoint directory (with --stream)")
    parser.add_argument(
        "--once", action="store_true", help="with --stream: route the files present, then stop"
    )
    parser.add_argument(
        "--trigger",
        metavar="INTERVAL",
        help="with --stream: start a micro-batch every INTERVAL ('10 seconds', '1 minute'); "
        "default: as soon as the last one is done",
    )


def _session(master: str | None, remote: str | None, log_level: str = "ERROR") -> SparkSession:
    """A session: Connect to ``remote``, else ``master`` (spark-submit's, else local[*]).

    Classic sessions log at ``log_level`` (from the JVM's start when this process starts it)
    and never draw Spark's progress bar when stderr is not a terminal (a log file); on a
    terminal Spark's own default holds (on for ``skipfilter route``, off under spark-submit).
    """
    from pyspark import SparkContext
    from pyspark.sql import SparkSession

    if remote:
        return SparkSession.builder.remote(remote).getOrCreate()
    under_submit = "PYSPARK_GATEWAY_PORT" in os.environ  # spark-submit started this driver
    if master is None and not under_submit:
        master = "local[*]"
    if master is not None and not under_submit:
        _executor_python(master)
    with _quiet_start(log_level == "ERROR"):
        SparkContext._ensure_initialized()  # starts the JVM, or joins spark-submit's
    builder = SparkSession.builder.appName("skipfilter route")
    if not sys.stderr.isatty():  # a log file: no bar redrawn with carriage returns
        builder = builder.config(_PROGRESS, "false")
    if master is not None:
        builder = builder.master(master)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel(log_level)
    return spark


@contextlib.contextmanager
def _quiet_start(quiet: bool) -> Iterator[None]:
    """While a JVM starts in here, have it log errors only (``log4j2-quiet.properties``).

    Left alone: a JVM already running (spark-submit's, a test's), a log4j configuration of
    the user's (``LOG4J_CONFIGURATION_FILE``, ``log4j2.properties`` in Spark's conf directory).
    The variable is set only while the JVM starts, so no later process inherits it.
    """
    from pyspark import SparkContext
    from pyspark.find_spark_home import _find_spark_home

    conf_dir = os.environ.get("SPARK_CONF_DIR") or os.path.join(_find_spark_home(), "conf")
    if (
        not quiet
        or SparkContext._gateway is not None
        or "PYSPARK_GATEWAY_PORT" in os.environ
        or "LOG4J_CONFIGURATION_FILE" in os.environ
        or os.path.exists(os.path.join(conf_dir, "log4j2.properties"))
    ):
        yield
        return
    os.environ["LOG4J_CONFIGURATION_FILE"] = _QUIET_LOGS
    try:
        yield
    finally:
        del os.environ["LOG4J_CONFIGURATION_FILE"]


def _executor_python(master: str) -> None:
    """Point executors on this host at this interpreter (they need skipfilter); advise otherwise.

    Without ``PYSPARK_PYTHON`` executors run ``python3`` from their PATH, which on a
    laptop or a one-host cluster is rarely the virtualenv that has skipfilter.
    """
    if "PYSPARK_PYTHON" in os.environ:
        return
    if master.startswith("local"):
        os.environ["PYSPARK_PYTHON"] = sys.executable
    elif master.startswith("spark://") and all(map(_on_this_host, _hosts(master))):
        os.environ["PYSPARK_PYTHON"] = sys.executable
        print(
            f"skipfilter route: executors run {sys.executable} (the master is on this host; "
            "for workers on other hosts set PYSPARK_PYTHON to a Python with skipfilter there)",
            file=sys.stderr,
        )
    else:
        print(
            f"skipfilter route: executors of {master} run PYSPARK_PYTHON, else python3 from "
            "their PATH; it must have skipfilter installed (see docs/spark.md, On a cluster)",
            file=sys.stderr,
        )


def _hosts(master: str) -> list[str]:
    """Host names of a ``spark://h1:p1,h2:p2`` URL (several masters under ZooKeeper)."""
    hosts = []
    for address in master.removeprefix("spark://").split(","):
        host = address.rsplit(":", 1)[0] if ":" in address else address
        hosts.append(host.strip("[]"))
    return hosts


def _on_this_host(host: str) -> bool:
    """Whether ``host`` names this machine: loopback, or its own name or addresses (no DNS)."""
    try:
        if ipaddress.ip_address(host).is_loopback:
            return True
    except ValueError:
        pass
    names = {"localhost", socket.gethostname()}
    with contextlib.suppress(OSError):
        names.update(socket.gethostbyname_ex(socket.gethostname())[2])
    return host in names


def _write(df: DataFrame, path: str, fmt: str, overwrite: bool) -> None:
    df.write.mode("overwrite" if overwrite else "error").format(fmt).save(path)


def _refuse_existing(spark: SparkSession, paths: Sequence[str | None]) -> None:
    """Fail before any work when an output exists (any Hadoop file system, not only local)."""
    from skipfilter.spark.session import path_exists

    for path in paths:
        if path is not None and path_exists(spark, path):
            raise OSError(f"{path} already exists; pass --overwrite to replace it")


def _count(spark: SparkSession, path: str, fmt: str, schema: str) -> int:
    """Rows written to ``path``, read back through Spark (an empty JSON output has no schema)."""
    return int(spark.read.schema(schema).format(fmt).load(path).count())


def _report(errors: DataFrame, path: str | None, fmt: str, overwrite: bool) -> int:
    """Write or list the malformed rows; return how many there are."""
    spark = errors.sparkSession
    if path is not None:
        _write(errors, path, fmt, overwrite)
        count = _count(spark, path, fmt, ERRORS)
        if count:
            print(f"skipfilter route: {count} malformed row(s) written to {path}", file=sys.stderr)
        return count
    count = int(errors.count())
    for row in errors.limit(_SHOWN).collect():
        print(
            f"skipfilter route: malformed {row['source']} row in {row['file'] or '?'} "
            f"(id={row['row_id']!r}): {row['reason']}",
            file=sys.stderr,
        )
    if count:
        print(
            f"skipfilter route: {count} malformed row(s); pass --errors PATH to write them "
            "and route the rest",
            file=sys.stderr,
        )
    return count


def run(args: argparse.Namespace) -> int:
    """Run the routing job described by parsed ``args``; return the exit status."""
    try:
        # path exists, unreadable input; a streaming query that failed
        from pyspark.errors import AnalysisException, PySparkException, StreamingQueryException

        from skipfilter.spark.contract import (
            MalformedInput,
            read_messages,
            read_subscriptions,
        )
        from skipfilter.spark.formats import detect_format
        from skipfilter.spark.malformed import malformed_rows
        from skipfilter.spark.routing import route
    except ImportError as error:  # the extra is missing: say which package, not a traceback
        from skipfilter.extras import missing

        print(missing(f"skipfilter route needs {error.name or error}", "spark"), file=sys.stderr)
        return 2

    remote = args.remote or os.environ.get("SPARK_REMOTE")
    if remote and args.master:
        print(
            "skipfilter route: give --master or --remote (SPARK_REMOTE), not both", file=sys.stderr
        )
        return 2
    if args.messages.startswith(_REDIS) and not args.stream:
        print(
            "skipfilter route: a redis:// --messages is a live stream: add --stream",
            file=sys.stderr,
        )
        return 2
    if args.stream and not args.checkpoint:
        print("skipfilter route: --stream needs --checkpoint", file=sys.stderr)
        return 2
    if args.stream and not args.errors:
        print("skipfilter route: --stream needs --errors", file=sys.stderr)
        return 2
    try:
        message_columns = _columns(args.message_column, "--message-column")
        subscription_columns = _columns(args.subscription_column, "--subscription-column")
        carry = [name.strip() for name in (args.carry or "").split(",") if name.strip()]
    except ValueError as error:
        print(f"skipfilter route: {error}", file=sys.stderr)
        return 2
    if args.stream and (message_columns or carry):
        print(
            "skipfilter route: --message-column and --carry are for batch inputs; a stream's "
            "updates have the contract's columns (id, topics, private)",
            file=sys.stderr,
        )
        return 2
    if args.trigger is not None and not args.stream:
        print("skipfilter route: --trigger is for --stream", file=sys.stderr)
        return 2
    if args.stream:
        from skipfilter.spark.streaming import check_trigger

        try:
            check_trigger(args.trigger, args.once)
        except ValueError as error:
            print(f"skipfilter route: --trigger: {error}", file=sys.stderr)
            return 2
    try:
        spark = _session(args.master, remote, args.log_level)
        subscriptions = read_subscriptions(
            spark,
            args.subscriptions,
            args.syntax,
            fmt=args.input_format,
            columns=subscription_columns,
        )
        if args.stream:
            fmt = args.format or "json"
            return _stream(spark, args, subscriptions.valid, subscriptions.errors, fmt)
        if not args.overwrite:
            _refuse_existing(spark, [args.out, args.errors])
        input_format = args.input_format or detect_format(spark, args.messages)
        fmt = args.format or input_format
        messages = read_messages(
            spark, args.messages, fmt=input_format, columns=message_columns, carry=carry
        )
        errors = messages.errors.unionByName(subscriptions.errors)
        bad = _report(errors, args.errors, fmt, args.overwrite)
        if bad and args.errors is None:
            return 1
        strategy = args.strategy
        if strategy == "auto":
            strategy = _auto(subscriptions.valid)
        deliveries = route(
            messages.valid,
            subscriptions.valid,
            strategy,
            syntax=args.syntax,
            shards=args.shards,
            carry=carry,
            check_ids=False,  # read_messages reported every row of a duplicated id
        )
        with malformed_rows():  # a bad row met on an executor: MalformedInput, any strategy
            _write(deliveries, args.out, fmt, args.overwrite)
        count = _count(spark, args.out, fmt, DELIVERIES)
        print(f"skipfilter route: {count} deliveries written to {args.out} ({fmt})")
        return 0
    except (
        MalformedInput,
        AnalysisException,
        StreamingQueryException,
        ValueError,
        OSError,
    ) as error:
        print(f"skipfilter route: {error}", file=sys.stderr)
        return 1
    except PySparkException as error:
        if _MISSING not in str(error):
            raise
        print(
            "skipfilter route: the executors' Python has no skipfilter; install it there or "
            "set PYSPARK_PYTHON to a Python that has it (see docs/spark.md, On a cluster)",
            file=sys.stderr,
        )
        return 1


def _columns(pairs: list[str] | None, flag: str) -> dict[str, str]:
    """``FIELD=COLUMN`` values of a repeated flag as a dict; ValueError naming a bad one."""
    columns: dict[str, str] = {}
    for pair in pairs or ():
        field, equals, column = pair.partition("=")
        if not equals or not field.strip() or not column.strip():
            raise ValueError(f"{flag} takes FIELD=COLUMN (id=event_id), got {pair!r}")
        columns[field.strip()] = column.strip()
    return columns


def _auto(subscriptions: DataFrame) -> str:
    """The strategy ``auto`` picks, said on stdout with the estimate that picked it."""
    from skipfilter.spark.sizing import AUTO_BROADCAST_BYTES, auto_strategy, estimated_bytes

    size = estimated_bytes(subscriptions)
    strategy = auto_strategy(subscriptions)
    estimate = "no size estimate" if size is None else f"an estimated {size / 2**20:.1f} MiB"
    print(
        f"skipfilter route: strategy {strategy} (auto: subscriptions of {estimate}; "
        f"broadcast up to {AUTO_BROADCAST_BYTES >> 20} MiB)"
    )
    return strategy


def _stream(
    spark: SparkSession,
    args: argparse.Namespace,
    subscriptions: DataFrame,
    subscription_errors: DataFrame,
    fmt: str,
) -> int:
    from skipfilter.spark.sources import FileDirectory
    from skipfilter.spark.streaming import start_routing_stream

    # a snapshot per start: a restart from the checkpoint replaces it
    bad = _report(subscription_errors, os.path.join(args.errors, "subscriptions"), fmt, True)
    messages: MessageSource
    if args.messages.startswith(_REDIS):
        from skipfilter.spark.redis_source import RedisStreamSource

        messages = RedisStreamSource(args.messages)
    else:  # a stream's directory may be empty yet: its format is named, else JSON lines
        messages = FileDirectory(args.messages, args.input_format or "json")
    stream = start_routing_stream(
        spark,
        messages,
        subscriptions,
        args.out,
        os.path.join(args.errors, "messages"),
        args.checkpoint,
        fmt=fmt,
        syntax=args.syntax,
        strategy=args.strategy,
        shards=args.shards,
        trigger=args.trigger,
        once=args.once,
    )
    try:
        stream.await_termination()
    except KeyboardInterrupt:
        stream.stop()
    count = _count(spark, os.path.join(args.errors, "messages"), fmt, ERRORS)
    print(
        f"skipfilter route: stream stopped; {bad} malformed subscription row(s), "
        f"{count} malformed update(s) so far in {args.errors}",
        file=sys.stderr,
    )
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point for spark-submit: the ``route`` options without the subcommand."""
    parser = argparse.ArgumentParser(
        prog="skipfilter route",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_arguments(parser)
    return run(parser.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
