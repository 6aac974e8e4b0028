"""The table of word-syntax facts says what the compilers do (and so what every
implementation reading it must do)."""

from __future__ import annotations

import pytest

from skipfilter.errors import InvalidSelector
from skipfilter.selectors import DELIMITERS, SYNTAXES, WORD_SYNTAXES, compile_selector


@pytest.mark.parametrize("name", sorted(WORD_SYNTAXES))
def test_facts_agree_with_the_compiler(name: str) -> None:
    words = WORD_SYNTAXES[name]
    d, one, many = words.delimiter, words.single, words.multi
    assert words.name == name and DELIMITERS[name] == d
    single = compile_selector(f"a{d}{one}", name)
    assert single.matches(f"a{d}x") and not single.matches(f"a{d}x{d}y")
    assert not single.matches("a")
    tail = compile_selector(f"a{d}{many}", name)
    assert tail.matches(f"a{d}x{d}y")
    assert tail.matches("a") is (words.multi_min == 0)
    if words.multi_last:
        with pytest.raises(InvalidSelector, match="must be the last"):
            compile_selector(f"{many}{d}a", name)
    else:
        assert compile_selector(f"{many}{d}a", name).matches(f"x{d}y{d}a")
    assert compile_selector(one, name).matches("$x") is not words.dollar_rule
    assert compile_selector(f"$x{d}{one}", name).matches(f"$x{d}y")


def test_every_syntax_is_listed_once() -> None:
    assert len(set(SYNTAXES)) == len(SYNTAXES)
    assert set(WORD_SYNTAXES) < set(SYNTAXES)
    assert set(DELIMITERS) == {"mercure", *WORD_SYNTAXES}
