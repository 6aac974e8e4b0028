"""Topic syntax of the Ctrie: which words are wildcards, and brute-force matching.

Home of :class:`Config`, the presets :data:`AMQP` and :data:`MQTT`, and
:func:`matches`; import them from :mod:`skipfilter.baselines.ctrie`.
"""

from __future__ import annotations

from dataclasses import dataclass

from skipfilter.selectors import WORD_SYNTAXES, WordSyntax

__all__ = ["AMQP", "MQTT", "Config", "matches"]


@dataclass(frozen=True, slots=True)
class Config:
    """Which words are wildcards and what separates words, as in matchbox.

    ``single`` matches exactly one word, ``multi`` zero or more words.
    """

    single: str = "*"
    multi: str = "#"
    delimiter: str = "."

    def __post_init__(self) -> None:
        for name in ("single", "multi", "delimiter"):
            if not getattr(self, name):
                raise ValueError(f"Config.{name} must be a non-empty string")
        if self.single == self.multi:
            raise ValueError(f"Config.single and Config.multi are both {self.single!r}")
        for name in ("single", "multi"):
            if self.delimiter in getattr(self, name):
                raise ValueError(
                    f"Config.{name} {getattr(self, name)!r} contains the delimiter "
                    f"{self.delimiter!r}"
                )

    @classmethod
    def of(cls, syntax: WordSyntax) -> Config:
        """The wildcards and delimiter of a word syntax (its other rules are not the Ctrie's)."""
        return cls(syntax.single, syntax.multi, syntax.delimiter)

    @classmethod
    def amqp(cls) -> Config:
        """AMQP 0-9-1 topic exchanges: ``*`` one word, ``#`` zero or more, ``.`` between."""
        return cls.of(WORD_SYNTAXES["amqp"])

    @classmethod
    def mqtt(cls) -> Config:
        """MQTT-ish: ``+`` one level, ``#`` zero or more, ``/`` between.

        Unlike MQTT proper, ``#`` may appear anywhere and ``$`` topics are not special.
        """
        return cls.of(WORD_SYNTAXES["mqtt"])

    def split_pattern(self, pattern: str) -> tuple[str, ...]:
        """The words of ``pattern`` with runs of ``multi`` collapsed to one."""
        words: list[str] = []
        multi = self.multi
        for word in pattern.split(self.delimiter):
            if word != multi or not words or words[-1] != multi:
                words.append(word)
        return tuple(words)


#: AMQP 0-9-1 topic syntax, the default.
AMQP = Config.amqp()
#: MQTT-like topic syntax (``+``, ``#``, ``/``).
MQTT = Config.mqtt()


def matches(pattern: str, topic: str, config: Config = AMQP) -> bool:
    """Whether ``pattern`` matches ``topic`` -- exactly the trie's semantics, by brute force.

    Runtime complexity: O(p * t) for p pattern words and t topic words.

    >>> matches("a.#.c", "a.c"), matches("a.*.c", "a.c"), matches("#", "")
    (True, False, True)
    """
    words = config.split_pattern(pattern)
    multi, single = config.multi, config.single
    n = len(words)

    def closure(states: set[int]) -> set[int]:
        # A multi-wildcard may match zero words: step over it for free.
        for i in sorted(states):
            while i < n and words[i] == multi:
                i += 1
                states.add(i)
        return states

    states = closure({0})
    for word in topic.split(config.delimiter):
        following: set[int] = set()
        for i in states:
            if i < n:
                if words[i] == multi:
                    following.add(i)
                elif words[i] == single or words[i] == word:
                    following.add(i + 1)
        states = closure(following)
        if not states:
            return False
    return n in states
