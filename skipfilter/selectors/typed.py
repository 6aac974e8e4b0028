"""A selector that carries its own type: :class:`TypedSelector`.

Mercure 1.0 gives every topic matcher a type (``match=`` is exact, ``match_urlpattern=``
a URL Pattern; ``authorization_details`` topics say ``match_type``), and one subscriber
holds both kinds. A plain string is a selector in its index's syntax; a TypedSelector
says which syntax it is in, or that it is an exact topic.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from skipfilter.selectors.syntax import SYNTAXES

__all__ = ["EXACT", "SELECTOR_TYPES", "TypedSelector", "selector_type"]

#: The type of a selector that matches only the topic equal to it, byte for byte.
EXACT: Final = "exact"

#: Every type a TypedSelector may have.
SELECTOR_TYPES: Final = (EXACT, *SYNTAXES)


@dataclass(frozen=True, slots=True)
class TypedSelector:
    """A selector and its type: ``"exact"`` or a syntax of :data:`SYNTAXES`.

    Immutable and hashable. Mercure 1.0's ``{"match": m, "match_type": t}`` is
    ``TypedSelector(m, t)`` (``t`` defaulting to ``"exact"``).

    >>> TypedSelector("https://example.com/books/:id", "urlpattern").syntax
    'urlpattern'
    >>> TypedSelector("https://example.com/books/1", "uri")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
      ...
    ValueError: unknown selector type 'uri'; expected one of exact, mercure, ..., urlpattern
    """

    text: str
    syntax: str = EXACT

    def __post_init__(self) -> None:
        if not isinstance(self.text, str):
            raise TypeError(f"a selector must be a string, got {type(self.text).__name__}")
        if self.syntax not in SELECTOR_TYPES:
            expected = ", ".join(SELECTOR_TYPES)
            raise ValueError(f"unknown selector type {self.syntax!r}; expected one of {expected}")


#: Syntaxes where ``*`` is Mercure's reserved matcher of every topic, whatever its type.
RESERVED_STAR: Final = ("mercure", "urlpattern")


def selector_type(
    item: object, syntax: str, what: str, extra: tuple[str, ...] = ()
) -> tuple[str, str]:
    """``(text, type)`` of one selector given to a matcher in ``syntax``.

    A string is in ``syntax``; a :class:`TypedSelector` is ``"exact"``, in ``syntax`` or in
    one of the ``extra`` syntaxes the matcher also holds (else ValueError naming it); an
    exact ``*`` is ``syntax``'s match-all in :data:`RESERVED_STAR`. ``what`` names the
    list in errors (TypeError for anything else).
    """
    if isinstance(item, str):
        return item, syntax
    if not isinstance(item, TypedSelector):
        raise TypeError(
            f"{what} must be strings or TypedSelectors, got {type(item).__name__}: {item!r}"
        )
    if item.syntax == EXACT:
        if item.text == "*" and syntax in RESERVED_STAR:
            return item.text, syntax
        return item.text, EXACT
    if item.syntax != syntax:
        if item.syntax in extra:
            return item.text, item.syntax
        held = ", ".join((syntax, *extra))
        raise ValueError(
            f"{what}: a {syntax} matcher holds {held} and exact selectors, "
            f"not {item.syntax} ({item.text!r})"
        )
    return item.text, syntax
