"""What every baseline does to a subscribe call's selectors before storing them.

Each baseline validates selectors with :func:`~skipfilter.selectors.compile_selector`,
so every implementation refuses exactly the same input with the same
:class:`~skipfilter.errors.InvalidSelector`.
"""

from __future__ import annotations

from collections.abc import Iterable

from skipfilter.matcher import SelectorInput, check_selector_list
from skipfilter.selectors import EXACT, Selector, compile_selector, selector_type

__all__ = ["compiled", "validated_texts"]


def compiled(
    selectors: Iterable[SelectorInput], syntax: str, what: str, *, exact: bool = True
) -> tuple[Selector, ...]:
    """``selectors`` (strings in ``syntax`` or :class:`TypedSelector`) compiled, deduplicated;
    ``what`` names the list in errors. ``exact=False`` (a trie holds patterns only)
    refuses exact typed selectors with a ValueError."""
    check_selector_list(selectors, what)
    out: dict[Selector, None] = {}
    for item in selectors:
        text, kind = selector_type(item, syntax, what)
        if kind == EXACT and not exact:
            raise ValueError(f"{what}: this matcher holds {syntax} patterns, not exact topics")
        out[compile_selector(text, kind)] = None
    return tuple(out)


def validated_texts(selectors: Iterable[SelectorInput], syntax: str, what: str) -> tuple[str, ...]:
    """``selectors`` as texts, deduplicated, after checking that each compiles in ``syntax``
    (exact typed selectors refused: the tries hold patterns only)."""
    return tuple(s.text for s in compiled(selectors, syntax, what, exact=False))
