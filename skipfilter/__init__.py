"""skipfilter: which subscribers want this message? An inverted roaring-bitmap index."""
from skipfilter.core import SkipFilter
from skipfilter.errors import InvalidSelector, SkipFilterError

__all__ = ["InvalidSelector", "SkipFilter", "SkipFilterError"]
