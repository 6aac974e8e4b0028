"""The selector syntaxes, and the facts of the word syntaxes in one table everything reads.

The word syntaxes (AMQP, NATS, MQTT) differ only in a few facts: what separates words,
which words are wildcards, how many words the multi-word wildcard takes at least, where
it may stand, and MQTT's ``$`` rule. The compilers, TopicIndex's word trie, the
baselines and the Ctrie adapter all read them from :data:`WORD_SYNTAXES`, so the
implementations the benchmark compares cannot drift apart.

- :data:`SYNTAXES` -- every selector syntax name.
- :class:`WordSyntax`, :data:`WORD_SYNTAXES` -- the facts, per word syntax.
- :data:`DELIMITERS` -- the character between a topic's segments, per syntax.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["DELIMITERS", "SYNTAXES", "WORD_SYNTAXES", "WordSyntax"]

#: Every selector syntax, in the order the docs list them.
SYNTAXES: tuple[str, ...] = ("mercure", "amqp", "nats", "mqtt", "regex")


@dataclass(frozen=True, slots=True)
class WordSyntax:
    """How one word syntax splits topics into words and what its wildcards mean.

    A wildcard is a wildcard only as a whole word (``a*`` is a literal word).
    """

    name: str
    delimiter: str  # between words: "a.b" has the words "a" and "b"
    single: str  # matches exactly one word
    multi: str  # matches the remaining words (at least ``multi_min`` of them)
    multi_min: int  # AMQP and MQTT '#' match zero words or more, NATS '>' one or more
    multi_last: bool  # the multi wildcard may only be the last word (NATS, MQTT)
    dollar_rule: bool  # MQTT: a filter whose first word is a wildcard skips '$' topics

    def words(self, text: str) -> list[str]:
        """``text`` split into words; "" is one empty word."""
        return text.split(self.delimiter)


#: The word syntaxes' facts, by syntax name.
WORD_SYNTAXES: dict[str, WordSyntax] = {
    "amqp": WordSyntax("amqp", ".", "*", "#", multi_min=0, multi_last=False, dollar_rule=False),
    "nats": WordSyntax("nats", ".", "*", ">", multi_min=1, multi_last=True, dollar_rule=False),
    "mqtt": WordSyntax("mqtt", "/", "+", "#", multi_min=0, multi_last=True, dollar_rule=True),
}

#: The character that separates a topic's segments, per syntax (regex: none). Mercure
#: topics are URLs: their segments are path segments.
DELIMITERS: dict[str, str] = {
    "mercure": "/",
    **{name: syntax.delimiter for name, syntax in WORD_SYNTAXES.items()},
}
