"""What every baseline does to a subscribe call's selectors before storing them.

Each baseline validates selectors with :func:`~skipfilter.selectors.compile_selector`,
so every implementation refuses exactly the same input with the same
:class:`~skipfilter.errors.InvalidSelector`.
"""

from __future__ import annotations

from collections.abc import Iterable

from skipfilter.matcher import check_selector_list
from skipfilter.selectors import Selector, TypedSelector, compile_selector, selector_type

__all__ = ["compiled", "validated_texts"]


def compiled(
    selectors: Iterable[str | TypedSelector], syntax: str, what: str
) -> tuple[Selector, ...]:
    """``selectors`` (strings in ``syntax`` or :class:`TypedSelector`) compiled, deduplicated;
    ``what`` names the list in errors."""
    check_selector_list(selectors, what)
    typed = (selector_type(item, syntax, what) for item in selectors)
    return tuple(dict.fromkeys(compile_selector(text, kind) for text, kind in typed))


def validated_texts(selectors: Iterable[str], syntax: str, what: str) -> tuple[str, ...]:
    """``selectors`` as texts, deduplicated, after checking that each compiles in ``syntax``."""
    check_selector_list(selectors, what)
    texts = tuple(dict.fromkeys(selectors))
    for text in texts:
        compile_selector(text, syntax)
    return texts
