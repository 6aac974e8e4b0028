"""Patterns of a word syntax (AMQP, NATS, MQTT) in a word trie: the word candidate index.

Literal-prefix groups suit Mercure URLs, not wildcard-first patterns: on the amqp
workload over a quarter of the distinct patterns start with ``*`` or ``#`` and share the
empty prefix, so a new topic tested them all. The trie walks only the branches a topic's
words fit (docs/topic-index.md has the figures).

Where the trie's walk alone proves a match, no test runs; a pattern whose syntax adds a
rule the trie leaves out is tested (see :func:`needs_test`).
"""

from __future__ import annotations

from skipfilter.index.pattern import Pattern
from skipfilter.index.wordtrie import WordTrie
from skipfilter.selectors import WORD_SYNTAXES, WordSyntax

__all__ = ["WordIndex", "needs_test"]


def needs_test(words: list[str], syntax: WordSyntax) -> bool:
    """Whether a pattern's trie candidacy may be a false positive.

    The trie matches a single wildcard against any one word (as the selectors do:
    ``[^sep]*``) and a multi wildcard against zero or more words, ignoring what
    follows it. So it is exact unless words follow the multi wildcard (AMQP
    ``a.#.b``), the multi wildcard needs a word (NATS ``>``) or the ``$`` rule applies
    (MQTT filters starting with a wildcard).
    """
    multi = syntax.multi
    if multi in words[:-1]:
        return True
    if syntax.multi_min and words[-1] == multi:
        return True
    return syntax.dollar_rule and words[0] in (syntax.single, multi)


class WordIndex:
    """Distinct word-syntax patterns; :meth:`collect` appends those matching a topic."""

    __slots__ = ("_candidates", "_delimiter", "_syntax", "_tested", "_trie")

    def __init__(self, syntax: str) -> None:
        words = WORD_SYNTAXES[syntax]
        self._syntax = words
        self._delimiter = words.delimiter
        self._trie: WordTrie[Pattern] = WordTrie(words.delimiter, words.single, words.multi)
        self._candidates = self._trie.candidates
        self._tested = 0  # patterns whose candidacy needs a test

    def _words(self, pattern: Pattern) -> list[str]:
        assert pattern.selector is not None
        return pattern.selector.text.split(self._delimiter)

    def add(self, pattern: Pattern) -> None:
        """File a new distinct pattern."""
        words = self._words(pattern)
        pattern.tested = needs_test(words, self._syntax)
        self._trie.add(words, pattern)
        self._tested += pattern.tested

    def remove(self, pattern: Pattern) -> None:
        """Unfile a pattern no subscriber holds any more."""
        self._trie.remove(self._words(pattern), pattern)
        self._tested -= pattern.tested

    def collect(self, topic: str, out: list[Pattern]) -> None:
        """Append every filed pattern that matches ``topic``."""
        if not self._trie:  # every pattern is in the level index: nothing to walk
            return
        start = len(out)
        self._candidates(topic, out)
        # The trie reads "" as one empty word; an AMQP routing key "" has none: test all.
        every = not topic and self._syntax.empty_is_no_words
        if (self._tested or every) and len(out) > start:
            out[start:] = [
                p
                for p in out[start:]
                if (not p.tested and not every)
                or (p.selector is not None and p.selector.test(topic))
            ]

    def stats(self) -> dict[str, int]:
        """Sizes, for metrics and tuning."""
        return {"trie_patterns": len(self._trie), "tested_patterns": self._tested}
