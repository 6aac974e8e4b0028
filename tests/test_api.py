"""The public API is stated once: what ``skipfilter`` exports is pinned here and documented
in docs/api.md; every error raised on purpose is a SkipFilterError."""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import re
from importlib.metadata import version
from pathlib import Path

import skipfilter

ROOT = Path(__file__).resolve().parent.parent

PUBLIC = [
    "SYNTAXES",
    "Bitmap",
    "InvalidSelector",
    "InvalidTopic",
    "Matcher",
    "MissingExtra",
    "PatternTooCostly",
    "Selector",
    "SkipFilter",
    "SkipFilterError",
    "Subscription",
    "TopicIndex",
    "Tuning",
    "TypedSelector",
    "compile_selector",
    "matches",
    "uritemplate",
]


def test_exported_names_are_pinned() -> None:
    assert sorted(skipfilter.__all__) == sorted(PUBLIC)
    for name in PUBLIC:
        assert getattr(skipfilter, name) is not None


def test_docs_api_documents_exactly_the_exported_names() -> None:
    page = (ROOT / "docs" / "api.md").read_text(encoding="utf-8")
    documented = set(re.findall(r"^::: skipfilter\.(\w+)$", page, flags=re.M))
    harness = {"bench", "baselines", "hub", "spark"}  # documented, but not the public API
    assert documented - harness == set(PUBLIC)


def test_version_is_the_installed_distribution_version() -> None:
    assert skipfilter.__version__ == version("skipfilter")


def _library_modules() -> list[str]:
    """Every module but the hub's and Spark's, whose extras bring their own checks."""
    return [
        m.name
        for m in pkgutil.walk_packages(skipfilter.__path__, "skipfilter.")
        if not m.name.startswith(("skipfilter.hub", "skipfilter.spark"))
        and not m.name.endswith(".__main__")
    ]


def test_every_public_exception_is_a_skipfilter_error() -> None:
    checked = 0
    for name in _library_modules():
        module = importlib.import_module(name)
        for attr, value in vars(module).items():
            if (
                inspect.isclass(value)
                and issubclass(value, BaseException)
                and value.__module__ == name
                and not attr.startswith("_")
            ):
                assert issubclass(value, skipfilter.SkipFilterError), f"{name}.{attr}"
                checked += 1
    assert checked >= 5  # SkipFilterError, InvalidSelector, MissingExtra, ReadOnlyError, ...
