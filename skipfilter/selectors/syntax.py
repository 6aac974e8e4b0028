"""The selector syntaxes, and the facts of the word syntaxes in one table everything reads.

The word syntaxes (AMQP, NATS, MQTT) differ only in a few facts: what separates words,
which words are wildcards, how many words the multi-word wildcard takes at least, where
it may stand, MQTT's ``$`` rule, and what a topic published to may contain. The
compilers, the topic checks, TopicIndex's word indexes, the baselines and the Ctrie
adapter all read them from :data:`WORD_SYNTAXES`, so the implementations the benchmark
compares cannot drift apart.

- :data:`SYNTAXES` -- every selector syntax name.
- :class:`WordSyntax`, :data:`WORD_SYNTAXES` -- the facts, per word syntax.
- :data:`DELIMITERS` -- the character between a topic's segments, per syntax.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

__all__ = ["DELIMITERS", "SYNTAXES", "WORD_SYNTAXES", "NameWildcards", "WordSyntax"]

#: Every selector syntax, in the order the docs list them.
SYNTAXES: tuple[str, ...] = ("mercure", "amqp", "nats", "mqtt", "regex", "urlpattern")


#: How a topic published to may hold the wildcard characters: as ordinary words
#: ("literal", AMQP routing keys), not as whole words ("word", NATS subjects: ``a.*`` is
#: refused, ``a*`` is a literal token), or not at all ("character", MQTT topic names).
NameWildcards = Literal["literal", "word", "character"]


@dataclass(frozen=True, slots=True)
class WordSyntax:
    """How one word syntax splits topics into words, what its wildcards mean, and which
    topics may be published to.

    A wildcard is a wildcard only as a whole word (``a*`` is a literal word).
    """

    name: str
    delimiter: str  # between words: "a.b" has the words "a" and "b"
    single: str  # matches exactly one word
    multi: str  # matches the remaining words (at least ``multi_min`` of them)
    multi_min: int  # AMQP and MQTT '#' match zero words or more, NATS '>' one or more
    multi_last: bool  # the multi wildcard may only be the last word (NATS, MQTT)
    dollar_rule: bool  # MQTT: a filter whose first word is a wildcard skips '$' topics
    empty_is_no_words: bool  # AMQP (RabbitMQ): "" has no words, so '*' does not match it
    name_wildcards: NameWildcards  # what a published topic may do with the wildcards
    empty_names: bool  # whether "" may be published to
    empty_words: bool  # whether a published topic may have empty words ("a..b")
    forbidden: str  # characters refused in topics and selectors (NATS whitespace, MQTT NUL)

    def refused_in(self, text: str) -> tuple[str, int] | None:
        """The first forbidden character of ``text``, named for an error (``whitespace ' '``,
        ``NUL character``), and its index; None if there is none."""
        if not any(char in text for char in self.forbidden):  # the usual case: a scan each
            return None
        for i, char in enumerate(text):
            if char in self.forbidden:
                if char == "\x00":
                    return "NUL character", i
                return (f"whitespace {char!r}" if char.isspace() else f"character {char!r}"), i
        return None

    def words(self, text: str) -> list[str]:
        """``text`` split into words: "" is no word under AMQP, one empty word otherwise."""
        if not text and self.empty_is_no_words:
            return []
        return text.split(self.delimiter)


#: The word syntaxes' facts, by syntax name.
WORD_SYNTAXES: dict[str, WordSyntax] = {
    # RabbitMQ's topic exchange: routing keys are literal; "" has no words.
    "amqp": WordSyntax(
        "amqp",
        ".",
        "*",
        "#",
        multi_min=0,
        multi_last=False,
        dollar_rule=False,
        empty_is_no_words=True,
        name_wildcards="literal",
        empty_names=True,
        empty_words=True,
        forbidden="",
    ),
    # The NATS server: no wildcard tokens, empty tokens or whitespace in a published subject.
    "nats": WordSyntax(
        "nats",
        ".",
        "*",
        ">",
        multi_min=1,
        multi_last=True,
        dollar_rule=False,
        empty_is_no_words=False,
        name_wildcards="word",
        empty_names=False,
        empty_words=False,
        forbidden=" \t\n\r\f",
    ),
    # MQTT 3.1.1 and 5 (4.7): no wildcard characters in a topic name, at least one
    # character, no NUL; empty levels are levels.
    "mqtt": WordSyntax(
        "mqtt",
        "/",
        "+",
        "#",
        multi_min=0,
        multi_last=True,
        dollar_rule=True,
        empty_is_no_words=False,
        name_wildcards="character",
        empty_names=False,
        empty_words=True,
        forbidden="\x00",
    ),
}

#: The character that separates a topic's segments, per syntax (regex: none). Mercure
#: topics are URLs: their segments are path segments.
DELIMITERS: dict[str, str] = {
    "mercure": "/",
    **{name: syntax.delimiter for name, syntax in WORD_SYNTAXES.items()},
}
