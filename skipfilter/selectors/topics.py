"""Topics an update is published on, checked against what their syntax allows.

Brokers refuse to publish to some names: MQTT to a topic name with ``+`` or ``#`` or to
"", NATS to a subject with a ``*`` or ``>`` token, an empty token or whitespace. Every
:class:`~skipfilter.matcher.Matcher` refuses them alike, with an
:class:`~skipfilter.errors.InvalidTopic` naming the character and its column; AMQP
routing keys, Mercure topics and regex topics are plain strings.

- :func:`topic_problem` -- what is wrong with one topic, or None.
- :func:`check_topic` -- the same, raised as InvalidTopic.
- :func:`check_topics` -- the check every ``match`` runs on its list of topics.
- :func:`topics_type_error` -- what is not a list of strings in a ``match`` argument.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

from skipfilter.errors import InvalidTopic
from skipfilter.selectors.syntax import SYNTAXES, WORD_SYNTAXES, WordSyntax

__all__ = ["check_topic", "check_topics", "topic_checker", "topic_problem", "topics_type_error"]

_SHOWN = 60  # characters of a refused value a message quotes


def topics_type_error(topics: object) -> TypeError | None:
    """The TypeError naming what is not a list (or tuple) of ``str`` in ``topics``, or None
    when it is one: built on the error path only, so ``match`` checks nothing up front."""
    if isinstance(topics, (str, bytes)):
        return TypeError("topics must be a list of topics, not a single string")
    if not isinstance(topics, Sequence):
        return TypeError(f"topics must be a list of str, got {type(topics).__name__}")
    for i, topic in enumerate(topics):
        if not isinstance(topic, str):
            shown = repr(topic)[:_SHOWN]
            return TypeError(f"topics[{i}] must be a str, got {type(topic).__name__}: {shown}")
    return None


def _problems(words: WordSyntax) -> re.Pattern[str] | None:
    """A regex that finds something wrong in a non-empty topic, if anything can be."""
    d, wild = re.escape(words.delimiter), re.escape(words.single) + "|" + re.escape(words.multi)
    parts = []
    chars = words.forbidden  # refused characters, in one class (one set test per char)
    if words.name_wildcards == "character":
        chars += words.single + words.multi
    elif words.name_wildcards == "word":
        parts.append(f"(?:\\A|{d})(?:{wild})(?:{d}|\\Z)")
    if not words.empty_words:
        parts.append(f"\\A{d}|{d}{d}|{d}\\Z")
    if chars:
        parts.append(f"[{re.escape(chars)}]")
    return re.compile("|".join(parts)) if parts else None


#: Per syntax that restricts its topics, the regex that finds a problem (fast path).
_PROBLEMS = {
    name: problems
    for name, words in WORD_SYNTAXES.items()
    if (problems := _problems(words)) is not None
}
_WHAT = {"nats": "subject", "mqtt": "topic name"}


def topic_problem(syntax: str, topic: str) -> str | None:
    """What makes ``topic`` unpublishable in ``syntax`` (naming the part and its column),
    or None. Runtime: O(len(topic)).

    >>> topic_problem("mqtt", "sensors/+/temp")
    "'+' at column 9 in 'sensors/+/temp': a topic name has no wildcards"
    >>> topic_problem("nats", "orders..eu")
    "empty token at column 8 in 'orders..eu'"
    >>> topic_problem("amqp", "stock.*") is None
    True
    """
    found = _found(syntax, topic)
    return None if found is None else found[0]


def _found(syntax: str, topic: str) -> tuple[str, int] | None:
    """(message, 1-based column) of the first problem in ``topic``, or None."""
    if syntax not in SYNTAXES:
        raise ValueError(f"unknown syntax {syntax!r}; expected one of {', '.join(SYNTAXES)}")
    words = WORD_SYNTAXES.get(syntax)
    problem = None if words is None else _problem(words, topic)
    if problem is None:
        return None
    what, column, why = problem
    return f"{what} at column {column} in {topic!r}{why}", column


def _problem(words: WordSyntax, topic: str) -> tuple[str, int, str] | None:
    """(what, 1-based column, why) of the first problem in ``topic``, or None."""
    what = _WHAT.get(words.name, "topic")
    if not topic:
        return None if words.empty_names else (f"empty {what}", 1, "")
    column = 1
    for word in topic.split(words.delimiter):
        refused = words.refused_in(word)
        if refused is not None:
            return (refused[0], column + refused[1], "")
        if not word and not words.empty_words:
            return ("empty token" if words.name == "nats" else "empty word", column, "")
        wildcard = word in (words.single, words.multi)
        if words.name_wildcards == "word" and wildcard:
            return (f"{word!r} token", column, f": a {what} published to has no wildcards")
        if words.name_wildcards == "character":
            for i, char in enumerate(word):
                if char in (words.single, words.multi):
                    return (f"{char!r}", column + i, f": a {what} has no wildcards")
        column += len(word) + len(words.delimiter)
    return None


def check_topic(syntax: str, topic: str) -> None:
    """Raise :class:`~skipfilter.errors.InvalidTopic` if ``topic`` cannot be published to
    in ``syntax`` (see :func:`topic_problem`), or TypeError if it is no ``str``."""
    if not isinstance(topic, str):
        raise TypeError(f"a topic must be a str, got {type(topic).__name__}: {topic!r:.60}")
    found = _found(syntax, topic)
    if found is not None:
        raise InvalidTopic(found[0], topic, found[1])


def _refuse_other(topics: object) -> None:
    """Raise the TypeError for ``topics`` given as no list or tuple (a single string, a set,
    a generator that the check would consume), unless it is another sequence of str."""
    problem = topics_type_error(topics)
    if problem is not None:
        raise problem


def _refused_characters(syntax: str) -> str | None:
    """The characters a topic of ``syntax`` may not hold, if they are all it can get
    wrong besides being empty (MQTT: NUL, ``+``, ``#``); else None."""
    words = WORD_SYNTAXES.get(syntax)
    if words is None or words.name_wildcards != "character" or not words.empty_words:
        return None
    return words.forbidden + words.single + words.multi


def topic_checker(syntax: str) -> Callable[[Sequence[str]], None]:
    """:func:`check_topics` for one syntax, its test built once: for a matcher's
    per-message path, where the lookup and the extra call were a tenth of a lookup.

    A syntax's few refused characters are found with ``in``, one scan each in C: MQTT's
    three cost a third of a regex search (on 100k IoT filters, a tenth of a lookup:
    benchmarks/index/word_level_index.py)."""
    chars = _refused_characters(syntax)
    if chars is not None and len(chars) == 3:
        a, b, c = chars[0], chars[1], chars[2]

        def check_characters(topics: Sequence[str]) -> None:
            kind = topics.__class__
            if kind is not list and kind is not tuple:
                _refuse_other(topics)
            for topic in topics:
                if not topic or a in topic or b in topic or c in topic:
                    check_topic(syntax, topic)

        return check_characters
    problems = _PROBLEMS.get(syntax)
    search = problems.search if problems is not None else None

    def check(topics: Sequence[str]) -> None:
        kind = topics.__class__
        if kind is not list and kind is not tuple:  # two identity tests: the usual case
            _refuse_other(topics)
        if search is None:  # nothing to refuse in a str: one type test each (a bytes
            for topic in topics:  # topic would otherwise match nothing, silently)
                if topic.__class__ is not str and not isinstance(topic, str):
                    check_topic(syntax, topic)
            return
        for topic in topics:
            if not topic or search(topic) is not None:
                check_topic(syntax, topic)

    return check


def check_topics(topics: Sequence[str], syntax: str) -> None:
    """Refuse a bare string where a list of topics is expected (it would iterate
    characters), and any topic ``syntax`` cannot publish to. O(total length) for NATS
    and MQTT, O(1) otherwise."""
    (_CHECKERS.get(syntax) or topic_checker(syntax))(topics)


_CHECKERS = {name: topic_checker(name) for name in SYNTAXES}
