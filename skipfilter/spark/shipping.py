"""Ship skipfilter to executors that lack it: the package as a zip, for ``--py-files``.

PySpark puts a ``.zip`` (or ``.egg``) given to ``--py-files`` or ``addPyFile`` on the
executors' ``sys.path``, and silently ignores a ``.whl``. skipfilter itself is pure Python,
so a zip of the package is all it needs; what it imports with C extensions (pyroaring,
pyarrow, urlpattern, numpy) cannot be imported from a zip and must be installed in the
executors' Python (or shipped as a packed environment with ``--archives``)::

    python -m skipfilter.spark.shipping skipfilter.zip
    spark-submit --py-files skipfilter.zip ...

Contents: :func:`package_zip`, :func:`executor_requirements`, :func:`main`.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import sys
import zipfile
from collections.abc import Sequence
from pathlib import Path

import skipfilter

__all__ = ["executor_requirements", "main", "package_zip"]

_LEFT_OUT = ("__pycache__",)


def package_zip(path: str | Path) -> Path:
    """Write the installed skipfilter package (sources and package data) to the zip ``path``.

    The archive holds ``skipfilter/...`` at its root, as ``--py-files`` wants; compiled
    caches are left out. Returns ``path`` as a :class:`~pathlib.Path`.
    """
    package = Path(skipfilter.__file__).resolve().parent
    target = Path(path)
    with zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED) as archive:
        for file in sorted(package.rglob("*")):
            relative = file.relative_to(package.parent)
            if file.is_file() and not set(relative.parts) & set(_LEFT_OUT):
                archive.write(file, relative.as_posix())
    return target


def executor_requirements() -> list[str]:
    """What the executors' Python must have besides skipfilter: its dependencies and the
    ``spark`` extra's, less pyspark (Spark ships its own to every executor).

    >>> "pyroaring>=1.0" in executor_requirements()
    True
    """
    wanted = []
    for requirement in importlib.metadata.requires("skipfilter") or []:
        name, _, marker = requirement.partition(";")
        if marker.strip() in ("", 'extra == "spark"') and not name.startswith("pyspark"):
            wanted.append(name.strip())
    return wanted


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m skipfilter.spark.shipping [ZIP]``: write the zip, say how to use it."""
    parser = argparse.ArgumentParser(
        prog="python -m skipfilter.spark.shipping",
        description="Write skipfilter as a zip for spark-submit --py-files.",
    )
    parser.add_argument("zip", nargs="?", default="skipfilter.zip", help="default: %(default)s")
    path = package_zip(parser.parse_args(argv).zip)
    needs = " ".join(f"'{r}'" for r in executor_requirements())
    print(
        f"{path}: skipfilter {skipfilter.__version__} for spark-submit --py-files {path}; "
        f"the executors' Python needs: pip install {needs}",
        file=sys.stderr,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
