"""The examples in docstrings run (sortedcontainers style: every example is a test)."""

from __future__ import annotations

import doctest
import importlib
import pkgutil

import pytest

import skipfilter

MODULES = sorted(
    m.name
    for m in pkgutil.walk_packages(skipfilter.__path__, "skipfilter.")
    if not m.name.startswith(("skipfilter.hub", "skipfilter.spark"))
    and not m.name.endswith(".__main__")  # importing it runs the command
)


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name: str) -> None:
    module = importlib.import_module(name)
    failures, _ = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
    assert failures == 0
