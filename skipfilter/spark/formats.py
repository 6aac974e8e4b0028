"""Which format an input is in, asked of Spark itself: any path Spark reads, any Hadoop scheme.

A local listing cannot see ``s3a://``, ``hdfs://`` or even ``file://`` paths, and the files a
job writes are often named ``part-00000`` with no extension. So the readers hand every path to
Spark unchanged (local paths and URIs take the same code path) and, when no format is named,
:func:`detect_format` asks Spark which files the path holds (its own file listing, which skips
``_SUCCESS`` and dot files as its readers do) and reads a name's extension or, failing that,
the first line of the first file: Parquet files start with ``PAR1``, JSON lines
with ``{``. Works on classic and Spark Connect sessions alike (the paths are the server's).

Contents: :data:`INPUT_FORMATS`, :func:`format_of_name`, :func:`detect_format`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from skipfilter.errors import SkipFilterError

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = ["INPUT_FORMATS", "UnknownFormat", "detect_format", "format_of_name"]

#: The formats the batch readers take.
INPUT_FORMATS = ("parquet", "json")
_EXTENSIONS = {
    ".parquet": "parquet",
    ".json": "json",
    ".jsonl": "json",
    ".ndjson": "json",
}
#: Hadoop's codecs, chosen by extension when Spark reads text: ``x.jsonl.gz`` is JSON lines.
_CODECS = (".gz", ".bz2", ".deflate", ".zst", ".lz4", ".snappy")
_LISTED = 1000  # files looked at by name: enough to see the format, bounded for huge tables
_SHOWN = 40  # characters of an unrecognised first line quoted in the error
_PARQUET_MAGIC = "PAR1"


class UnknownFormat(SkipFilterError, ValueError):
    """No format named and none detectable; the message names the path and what was found."""


def format_of_name(name: str) -> str | None:
    """``"parquet"`` or ``"json"`` from a file name's extension (after a codec's), else None.

    >>> format_of_name("s3a://logs/part-00000-c000.snappy.parquet")
    'parquet'
    >>> format_of_name("updates.jsonl.gz"), format_of_name("part-00000")
    ('json', None)
    """
    lowered = name.lower()
    for codec in _CODECS:
        if lowered.endswith(codec):
            lowered = lowered.removesuffix(codec)
            break
    for extension, fmt in _EXTENSIONS.items():
        if lowered.endswith(extension):
            return fmt
    return None


def detect_format(spark: SparkSession, path: str) -> str:
    """The format of the files at ``path`` (a file, a directory, a glob; any scheme Spark reads).

    Costs one small Spark job to list the files (their contents are not read) and, when no
    name tells, a second that reads one line. Raises Spark's ``AnalysisException``
    (``PATH_NOT_FOUND``) for a missing path and :class:`UnknownFormat` when the files say
    nothing or disagree.
    """
    listing = spark.read.format("binaryFile").load(path).select("path")  # no empty files
    files = [str(row["path"]) for row in listing.limit(_LISTED).collect()]
    if not files:
        raise UnknownFormat(
            f"cannot tell the format of {path!r}: it holds no data files "
            "(empty files and names starting with _ or . are not data to Spark)"
        )
    named = {fmt: name for name in files if (fmt := format_of_name(name)) is not None}
    if len(named) > 1:
        clash = ", ".join(f"{name} ({fmt})" for fmt, name in sorted(named.items()))
        raise UnknownFormat(f"{path!r} mixes formats: {clash}; route each format on its own")
    if named:
        return next(iter(named))
    first = files[0]
    lines = spark.read.text(first).limit(1).collect()
    head = str(lines[0]["value"]) if lines else ""
    if head.startswith(_PARQUET_MAGIC):
        return "parquet"
    if head.lstrip("\ufeff \t").startswith("{"):
        return "json"
    raise UnknownFormat(
        f"cannot tell the format of {path!r}: {first} has no .parquet/.json/.jsonl/.ndjson "
        f"name and starts with {head[:_SHOWN]!r}, neither Parquet's {_PARQUET_MAGIC!r} nor a "
        f"JSON object; name it: --input-format {'|'.join(INPUT_FORMATS)} (fmt= in the API)"
    )
