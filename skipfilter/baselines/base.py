"""What every baseline does to a subscribe call's selectors before storing them.

Each baseline validates selectors with :func:`~skipfilter.selectors.compile_selector`,
so every implementation refuses exactly the same input with the same
:class:`~skipfilter.errors.InvalidSelector`.
"""

from __future__ import annotations

from collections.abc import Iterable

from skipfilter.matcher import check_selector_list
from skipfilter.selectors import Selector, compile_selector

__all__ = ["compiled", "validated_texts"]


def compiled(selectors: Iterable[str], syntax: str, what: str) -> tuple[Selector, ...]:
    """``selectors`` compiled in ``syntax``, deduplicated; ``what`` names the list in errors."""
    check_selector_list(selectors, what)
    return tuple(dict.fromkeys(compile_selector(text, syntax) for text in selectors))


def validated_texts(selectors: Iterable[str], syntax: str, what: str) -> tuple[str, ...]:
    """``selectors`` as texts, deduplicated, after checking that each compiles in ``syntax``."""
    check_selector_list(selectors, what)
    texts = tuple(dict.fromkeys(selectors))
    for text in texts:
        compile_selector(text, syntax)
    return texts
