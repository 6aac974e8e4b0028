"""Optional dependencies: imported only where used, and named with their extra when missing.

``import skipfilter`` needs only the core dependencies. The hub, Spark, the benchmark
report and the paho baseline need more; :func:`require` imports such a module and, when
it is not installed, raises :class:`~skipfilter.errors.MissingExtra` saying which extra
installs it (``pip install 'skipfilter[bench]'``) instead of a bare ModuleNotFoundError.
"""

from __future__ import annotations

import importlib
import importlib.util
from types import ModuleType

from skipfilter.errors import MissingExtra

__all__ = ["installed", "require"]


def installed(module: str) -> bool:
    """Whether ``module`` (and its parent packages) can be imported, without importing it."""
    try:
        return importlib.util.find_spec(module) is not None
    except ModuleNotFoundError:  # a parent package is missing
        return False


def require(module: str, extra: str, feature: str) -> ModuleType:
    """Import ``module``, which ``feature`` needs; MissingExtra naming ``extra`` if absent.

    Only the absence of ``module`` itself (or a parent) becomes MissingExtra: an
    ImportError raised from inside an installed module propagates as it is.

    >>> require("json", "core", "JSON output").__name__
    'json'
    >>> require("no_such_module", "bench", "the charts")
    Traceback (most recent call last):
      ...
    skipfilter.errors.MissingExtra: the charts needs no_such_module: pip install 'skipfilter[bench]'
    """
    try:
        return importlib.import_module(module)
    except ModuleNotFoundError as exc:
        if exc.name is None or not (module == exc.name or module.startswith(f"{exc.name}.")):
            raise
        raise MissingExtra(
            f"{feature} needs {exc.name}: pip install 'skipfilter[{extra}]'", extra
        ) from exc
