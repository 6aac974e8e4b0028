"""Optional dependencies: imported only where used, and named with their extra when missing.

``import skipfilter`` needs only the core dependencies. The hub, Spark, the benchmark
report and the paho baseline need more; :func:`require` imports such a module and, when
it is not installed, raises :class:`~skipfilter.errors.MissingExtra` naming the extra and
the command that installs it where this copy came from (:func:`install_command`: the clone,
the wheel file, or the index) instead of a bare ModuleNotFoundError.
"""

from __future__ import annotations

import importlib
import importlib.util
import shlex
import sys
from pathlib import Path
from types import ModuleType
from urllib.parse import unquote, urlsplit

from skipfilter.errors import MissingExtra

__all__ = ["install_command", "installed", "missing", "require"]

_PACKAGE = Path(__file__).resolve().parent


def _pip(target: str, extra: str, editable: bool = False) -> str:
    """``python -m pip install`` of this interpreter (whichever ``pip`` PATH finds may
    install into another environment), ``target[extra]`` quoted for a POSIX shell."""
    return " ".join(
        [shlex.quote(sys.executable), "-m", "pip", "install"]
        + (["-e"] if editable else [])
        + [shlex.quote(f"{target}[{extra}]")]
    )


def _source_tree() -> Path | None:
    """The clone (or unpacked sdist) this package is imported from, if it is."""
    root = _PACKAGE.parent
    pyproject = root / "pyproject.toml"
    if pyproject.is_file() and 'name = "skipfilter"' in pyproject.read_text(encoding="utf-8"):
        return root
    return None


def install_command(extra: str) -> str:
    """The command that adds ``extra`` to this installation, as it was installed: from a
    clone (or sdist) ``pip install -e 'CLONE[extra]'``; from a wheel file (PEP 610's
    direct_url.json) ``pip install 'WHEEL[extra]'``; from a package index by name; else
    both forms, for the user to fill in the clone's or the wheel's path."""
    tree = _source_tree()
    if tree is not None:
        return _pip(str(tree), extra, editable=True)
    from importlib import metadata

    try:
        dist = metadata.distribution("skipfilter")
    except metadata.PackageNotFoundError:
        dist = None
    here = dist is not None and (
        Path(str(dist.locate_file("skipfilter/__init__.py"))).resolve() == _PACKAGE / "__init__.py"
    )
    if dist is not None and here:
        direct = dist.read_text("direct_url.json")
        if direct is None:  # PEP 610: installed by name from an index
            return _pip("skipfilter", extra)
        import json

        url = json.loads(direct).get("url", "")
        parts = urlsplit(url)
        path = Path(unquote(parts.path))
        if parts.scheme == "file" and path.exists():
            return _pip(str(path), extra)
    version = dist.version if dist is not None else "VERSION"
    wheel = f"skipfilter-{version}-py3-none-any.whl"
    return f"pip install -e 'CLONE[{extra}]' from a clone, or pip install '{wheel}[{extra}]'"


def missing(what: str, extra: str) -> str:
    """The one line that says ``what`` is missing and how to install it:
    ``'skipfilter.client needs httpx (the client extra): python -m pip install ...'``."""
    return f"{what} (the {extra} extra): {install_command(extra)}"


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
    skipfilter.errors.MissingExtra: the charts needs no_such_module (the bench extra): ...
    """
    try:
        return importlib.import_module(module)
    except ModuleNotFoundError as exc:
        if exc.name is None or not (module == exc.name or module.startswith(f"{exc.name}.")):
            raise
        raise MissingExtra(missing(f"{feature} needs {exc.name}", extra), extra) from exc
