"""Compilers of the word syntaxes: AMQP bindings, NATS subjects, MQTT topic filters.

Wildcards and delimiters come from :data:`~skipfilter.selectors.syntax.WORD_SYNTAXES`.
A selector compiles to one ``re`` pattern that cannot backtrack badly (at most one
variable-length wildcard), written and built on its first test (the indexes prove word
matches without it), or, for AMQP bindings with several ``#``, to a word-by-word glob matcher
that runs in O(words x pattern).
"""

from __future__ import annotations

import re
from collections.abc import Callable

from skipfilter.selectors.selector import (
    Selector,
    exact_selector,
    invalid_selector,
    match_all_selector,
    regex_selector,
)
from skipfilter.selectors.syntax import WORD_SYNTAXES

__all__ = ["compile_amqp", "compile_mqtt", "compile_nats"]

_ANY = r"[\s\S]*"  # any string, newlines included, without needing re.DOTALL
_AMQP, _NATS, _MQTT = WORD_SYNTAXES["amqp"], WORD_SYNTAXES["nats"], WORD_SYNTAXES["mqtt"]


def _columns(parts: list[str]) -> list[int]:
    """1-based column where each separator-delimited part starts."""
    cols, col = [], 1
    for part in parts:
        cols.append(col)
        col += len(part) + 1
    return cols


def _word_regex(words: list[str], sep: str, one: str) -> str:
    """Regex for a run of literal words and one-word wildcards ``one``, joined by ``sep``."""
    not_sep = f"[^{re.escape(sep)}]*"
    return re.escape(sep).join(not_sep if w == one else re.escape(w) for w in words)


def _literal_head(words: list[str], wildcards: tuple[str, ...]) -> list[str]:
    """The literal words before the first wildcard."""
    for i, word in enumerate(words):
        if word in wildcards:
            return words[:i]
    return words


# -- amqp ---------------------------------------------------------------------------------


def compile_amqp(text: str) -> Selector:
    """AMQP topic binding: ``*`` one word, ``#`` zero or more; never invalid.

    Words are ``str.split(".")``, except that "" has no words, as in RabbitMQ: a binding
    with a ``*`` or a literal word never matches the routing key "" (only "", ``#``,
    ``#.#``... do), while ``a..b`` has three words, the middle one empty.
    """
    sep, one, many = _AMQP.delimiter, _AMQP.single, _AMQP.multi
    words = _amqp_words(text)
    if one not in words and many not in words:
        return exact_selector(text, "amqp", text)
    if words == [many]:
        return match_all_selector(text, "amqp")
    head = _literal_head(words, (one, many))
    tail_hash = words[len(head)] == many and len(words) == len(head) + 1
    prefix = sep.join(head) + ("" if tail_hash or not head else sep)
    if words.count(many) > 1:
        return Selector(text, "amqp", None, prefix, False, _glob_words(tuple(words)))
    return regex_selector(text, "amqp", prefix, _amqp_regex)


def _amqp_words(text: str) -> list[str]:
    """A binding's words, runs of ``#`` collapsed (``a.#.#.b`` is ``a.#.b``)."""
    many = _AMQP.multi
    words: list[str] = []
    for word in text.split(_AMQP.delimiter):
        if not (word == many and words and words[-1] == many):
            words.append(word)
    return words


def _amqp_regex(text: str) -> str:
    """The full-match regex of an AMQP binding with a wildcard and at most one ``#``:
    written on its first test only (the index proves most matches by word)."""
    sep, one, many = _AMQP.delimiter, _AMQP.single, _AMQP.multi
    words = _amqp_words(text)
    if many not in words:
        body = _word_regex(words, sep, one)
    else:
        i, s = words.index(many), re.escape(sep)
        before, after = _word_regex(words[:i], sep, one), _word_regex(words[i + 1 :], sep, one)
        if i == 0:
            body = rf"(?:{_ANY}{s})?{after}"
        elif i == len(words) - 1:
            body = rf"{before}(?:{s}{_ANY})?"
        else:
            body = rf"{before}{s}(?:{_ANY}{s})?{after}"
    # A word other than '#' needs a word, and "" has none.
    return r"(?!\Z)" + body


def _glob_words(pattern: tuple[str, ...]) -> Callable[[str], bool]:
    """Word-level glob matcher for bindings with several ``#``: O(words x pattern), no blow-up.

    Greedy scan that, on a mismatch, lets the most recent ``#`` swallow one more word.
    """
    n = len(pattern)
    one, many = _AMQP.single, _AMQP.multi

    def match(topic: str) -> bool:
        words = _AMQP.words(topic)
        p = t = 0
        star_p, star_t = -1, 0
        while t < len(words):
            if p < n and pattern[p] == many:
                star_p, star_t = p, t
                p += 1
            elif p < n and (pattern[p] == one or pattern[p] == words[t]):
                p += 1
                t += 1
            elif star_p >= 0:
                star_t += 1
                p, t = star_p + 1, star_t
            else:
                return False
        while p < n and pattern[p] == many:
            p += 1
        return p == n

    return match


# -- nats ---------------------------------------------------------------------------------


def compile_nats(text: str) -> Selector:
    """NATS subject: ``*`` one token, ``>`` one or more trailing tokens."""
    sep, one, many = _NATS.delimiter, _NATS.single, _NATS.multi
    if not text:
        raise invalid_selector("empty subject", text, 1)
    tokens = text.split(sep)
    for i, (token, col) in enumerate(zip(tokens, _columns(tokens), strict=True)):
        if not token:
            raise invalid_selector("empty token", text, col)
        refused = _NATS.refused_in(token)
        if refused is not None:
            raise invalid_selector(refused[0], text, col + refused[1])
        if token == many and i != len(tokens) - 1:
            raise invalid_selector(f"{many!r} must be the last token", text, col)
    if one not in tokens and tokens[-1] != many:
        return exact_selector(text, "nats", text)
    if tokens == [many]:  # every string splits into at least one token
        return match_all_selector(text, "nats")
    head = _literal_head(tokens, (one, many))
    prefix = sep.join(head) + sep if head else ""
    return regex_selector(text, "nats", prefix, _nats_regex)


def _nats_regex(text: str) -> str:
    """The full-match regex of a valid NATS subject with a wildcard: written on its first
    test only (the index proves most matches by word)."""
    sep, one, many = _NATS.delimiter, _NATS.single, _NATS.multi
    tokens = text.split(sep)
    if tokens[-1] == many:
        return _word_regex(tokens[:-1], sep, one) + re.escape(sep) + _ANY
    return _word_regex(tokens, sep, one)


# -- mqtt ---------------------------------------------------------------------------------


def compile_mqtt(text: str) -> Selector:
    """MQTT topic filter: ``+`` one level, ``#`` the rest; wildcards first skip ``$`` topics."""
    sep, one, many = _MQTT.delimiter, _MQTT.single, _MQTT.multi
    if not text:
        raise invalid_selector("empty topic filter", text, 1)
    refused = _MQTT.refused_in(text)
    if refused is not None:
        raise invalid_selector(refused[0], text, refused[1] + 1)
    levels = text.split(sep)
    for i, (level, col) in enumerate(zip(levels, _columns(levels), strict=True)):
        for char in (one, many):
            if char in level and level != char:
                raise invalid_selector(
                    f"{char!r} must be a whole level", text, col + level.index(char)
                )
        if level == many and i != len(levels) - 1:
            raise invalid_selector(f"{many!r} must be the last level", text, col)
    if one not in levels and levels[-1] != many:
        return exact_selector(text, "mqtt", text)
    head = _literal_head(levels, (one, many))
    prefix = ""
    if head:  # "a/+" needs the separator; "a/#" also matches "a"
        prefix = sep.join(head) + (sep if levels[len(head)] == one else "")
    return regex_selector(text, "mqtt", prefix, _mqtt_regex)


def _mqtt_regex(text: str) -> str:
    """The full-match regex of a valid MQTT filter with a wildcard: written on its first
    test only (the index proves most matches by word)."""
    sep, one, many = _MQTT.delimiter, _MQTT.single, _MQTT.multi
    levels = text.split(sep)
    if levels == [many]:
        body = _ANY
    elif levels[-1] == many:
        body = _word_regex(levels[:-1], sep, one) + f"(?:{re.escape(sep)}{_ANY})?"
    else:
        body = _word_regex(levels, sep, one)
    if _MQTT.dollar_rule and levels[0] in (one, many):  # MQTT 4.7.2: never a '$' topic
        body = r"(?!\$)" + body
    return body
