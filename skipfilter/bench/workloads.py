"""Seeded synthetic workloads shared by tests, benchmarks and the Spark job.

Each generator is deterministic in its arguments, so two implementations measured in
one run see exactly the same subscribers and messages.

- :func:`mercure` -- a Mercure hub: exact user/resource URLs, a few dozen shared
  templates, two topics per message, topics mostly never seen before.
- :func:`mercure1` -- the same hub in Mercure 1.0 terms: URL Patterns in place of the
  templates, the exact selectors typed exact (``urlpattern`` syntax).
- :func:`hot` -- the same subscribers, messages drawn Zipf-like from a small topic set
  (the cache-hit path).
- :func:`amqp` -- NATS-sublist style: token combinations up to 5 levels, with ``*``/``#``.
- :func:`iot`, :func:`iot_fleet`, :func:`industrial` -- MQTT filter sets of devices and
  sensors, topics never published before, answers of tens to a thousand subscribers.
- :func:`churn` -- subscribes and unsubscribes interleaved with publishes.
- :func:`threads` -- matchbox's concurrency mix: insert:lookup 1:1 or 1:3 per thread.
- :func:`respell` -- a word-syntax pattern or topic in another word syntax.
"""

from __future__ import annotations

import bisect
import itertools
import math
import random
from dataclasses import dataclass
from typing import Literal

from skipfilter.selectors import WORD_SYNTAXES, TypedSelector

__all__ = [
    "Message",
    "Op",
    "Subscriber",
    "Workload",
    "amqp",
    "churn",
    "hot",
    "industrial",
    "iot",
    "iot_fleet",
    "iot_hot",
    "mercure",
    "mercure1",
    "respell",
    "threads",
]

BASE = "https://example.com"
SECTIONS = ("books", "users", "orders", "reviews", "chat", "news", "albums")


@dataclass(frozen=True, slots=True)
class Subscriber:
    """One subscriber: its topic selectors and, for private updates, its allowed selectors
    (strings in the workload's syntax, or typed)."""

    selectors: tuple[str | TypedSelector, ...]
    allowed: tuple[str | TypedSelector, ...] | None = None


@dataclass(frozen=True, slots=True)
class Message:
    """One published update: its topics and whether it is private."""

    topics: tuple[str, ...]
    private: bool = False


@dataclass(frozen=True, slots=True)
class Workload:
    """Subscribers and messages in one selector syntax."""

    name: str
    syntax: str
    subscribers: list[Subscriber]
    messages: list[Message]


@dataclass(frozen=True, slots=True)
class Op:
    """One step of a churn or threads workload."""

    kind: Literal["subscribe", "unsubscribe", "publish"]
    subscriber: Subscriber | None = None  # for subscribe
    target: int = -1  # for unsubscribe: index of the subscribe op it undoes
    message: Message | None = None  # for publish


def _hex(rng: random.Random) -> str:
    """A 24-hex-digit id, like the object ids Mercure hubs see in topics."""
    return f"{rng.getrandbits(96):024x}"


#: The shapes of the selectors subscribers share: URI templates, and the same as URL Patterns.
_SHAPES = (
    ("{base}/{section}/{{id}}", "{base}/{section}/:id"),
    ("{base}/{section}/{{id}}/comments", "{base}/{section}/:id/comments"),
    ("{base}/{section}{{/id}}{{?lang}}", "{base}/{section}{{/:id}}?"),
    ("{base}/{section}/{{id}}/v{i}", "{base}/{section}/:id/v{i}"),
    ("{base}/{section}/{{owner}}/{{id}}/items", "{base}/{section}/:owner/:id/items"),
    ("{base}/{section}/archive/{{year}}/{{id}}", "{base}/{section}/archive/:year(\\d+)/:id"),
)


def shared_templates(count: int) -> list[str]:
    """``count`` distinct URI templates of the shapes hubs see, over a few sections."""
    return _shaped(0, count)


def shared_url_patterns(count: int) -> list[str]:
    """The :func:`shared_templates` as URL Patterns, in the same order (one for one)."""
    return _shaped(1, count)


def _shaped(column: int, count: int) -> list[str]:
    """The first ``count`` distinct shapes of ``column`` with a base, a section and a round."""
    out: list[str] = []
    for i in itertools.count():
        for shape in _SHAPES:
            for section in SECTIONS:
                selector = shape[column].format(base=BASE, section=section, i=i)
                if selector not in out:
                    out.append(selector)
                if len(out) == count:
                    return out
    raise AssertionError("unreachable")


def _mercure_subscribers(
    n: int, rng: random.Random, templates: list[str], template_share: float
) -> tuple[list[Subscriber], list[str]]:
    users = [_hex(rng) for _ in range(max(1, n // 2))]
    subscribers = []
    for _ in range(n):
        user = rng.choice(users)
        own = f"{BASE}/users/{user}"
        third = (
            rng.choice(templates)
            if rng.random() < template_share
            else f"{BASE}/{rng.choice(SECTIONS)}/{rng.randrange(4 * n)}/feed"
        )
        selectors = (own, f"{BASE}/books/{rng.randrange(2 * n)}", third)
        allowed = (own, rng.choice(templates)) if rng.random() < template_share else (own,)
        subscribers.append(Subscriber(selectors, allowed=allowed))
    return subscribers, users


def mercure(
    subscribers: int,
    messages: int,
    seed: int = 0,
    templates: int = 42,
    template_share: float = 0.1,
    private_share: float = 0.2,
) -> Workload:
    """A Mercure hub: 3 selectors per subscriber (mostly exact), 2 topics per message.

    A message names a book (half the time one somebody follows) and a user (usually a
    new one), so most topics are unique and a per-topic cache misses.
    """
    rng = random.Random(seed)
    shared = shared_templates(templates)
    subs, users = _mercure_subscribers(subscribers, rng, shared, template_share)
    msgs = []
    for _ in range(messages):
        user = rng.choice(users) if rng.random() < 0.2 else _hex(rng)
        topics = (f"{BASE}/books/{rng.randrange(4 * subscribers)}", f"{BASE}/users/{user}")
        msgs.append(Message(topics, private=rng.random() < private_share))
    return Workload("mercure", "mercure", subs, msgs)


def mercure1(
    subscribers: int,
    messages: int,
    seed: int = 0,
    templates: int = 42,
    template_share: float = 0.1,
    private_share: float = 0.2,
) -> Workload:
    """Mercure 1.0: the :func:`mercure` workload (same seed, same subscribers and topics)
    with a URL Pattern (``match_urlpattern``) in place of each URI template and every
    exact selector a ``TypedSelector(..., "exact")`` (``match``), in ``urlpattern`` syntax."""
    base = mercure(subscribers, messages, seed, templates, template_share, private_share)
    as_pattern = dict(zip(shared_templates(templates), shared_url_patterns(templates), strict=True))

    def convert(selectors: tuple[str | TypedSelector, ...]) -> tuple[str | TypedSelector, ...]:
        return tuple(
            as_pattern.get(s) or TypedSelector(s, "exact") if isinstance(s, str) else s
            for s in selectors
        )

    subs = [
        Subscriber(convert(s.selectors), None if s.allowed is None else convert(s.allowed))
        for s in base.subscribers
    ]
    return Workload("mercure1", "urlpattern", subs, base.messages)


def hot(
    subscribers: int, messages: int, seed: int = 0, topics: int = 200, skew: float = 1.1
) -> Workload:
    """The mercure subscribers, with messages drawn Zipf-like from ``topics`` hot topics."""
    return _hot("hot", mercure(subscribers, topics, seed=seed), messages, seed, skew)


def _hot(name: str, base: Workload, messages: int, seed: int, skew: float) -> Workload:
    """``base``'s subscribers, and ``messages`` drawn Zipf-like from its messages (rank r
    weighs 1 / (r + 1) ** skew): a few hot topics, as a cache sees them."""
    rng = random.Random(seed + 1)
    weights = [1 / (rank + 1) ** skew for rank in range(len(base.messages))]
    msgs = rng.choices(base.messages, weights=weights, k=messages)
    return Workload(name, base.syntax, base.subscribers, msgs)


AMQP_TOKENS = ("foo", "bar", "baz", "qux", "quux")


def _amqp_subject(rng: random.Random, depth: int) -> list[str]:
    return [rng.choice(AMQP_TOKENS) for _ in range(rng.randint(1, depth))]


def amqp_pattern(rng: random.Random, depth: int = 5, wildcard_share: float = 0.3) -> str:
    """A subscription pattern: a subject with some words ``*`` and maybe a ``#`` tail."""
    words = [w if rng.random() >= wildcard_share else "*" for w in _amqp_subject(rng, depth)]
    if rng.random() < wildcard_share / 2:
        words[rng.randrange(len(words)) :] = ["#"]
    return ".".join(words)


def amqp(subscribers: int, messages: int, seed: int = 0, depth: int = 5) -> Workload:
    """NATS-sublist style: one pattern per subscriber, one topic per message."""
    rng = random.Random(seed)
    subs = [Subscriber((amqp_pattern(rng, depth),)) for _ in range(subscribers)]
    msgs = [Message((".".join(_amqp_subject(rng, depth)),)) for _ in range(messages)]
    return Workload("amqp", "amqp", subs, msgs)


IOT_SENSORS = ("temp", "humidity", "co2", "power", "door", "motion", "light", "noise")


def _iot_topic(rng: random.Random, sites: int, devices: range) -> list[str]:
    """A device reading: ``site/device/sensor``, or ``site/building/device/sensor``."""
    site, device = f"site{rng.randrange(sites)}", f"dev{rng.choice(devices)}"
    if rng.random() < 0.5:
        return [site, device, rng.choice(IOT_SENSORS)]
    return [site, f"b{rng.randrange(10)}", device, rng.choice(IOT_SENSORS)]


def _iot_filter(rng: random.Random, sites: int, devices: range) -> str:
    """A subscription: 55% one device's sensor, the rest site, building or sensor wildcards."""
    words = _iot_topic(rng, sites, devices)
    if rng.random() < 0.55:
        return "/".join(words)
    site, sensor, device = words[0], words[-1], words[-2]
    building = words[1] if len(words) == 4 else f"b{rng.randrange(10)}"
    shapes = (
        f"{site}/+/{sensor}",
        f"{site}/#",
        f"{site}/{building}/#",
        f"{site}/+/+/{sensor}",
        f"{site}/{device}/+",
        f"+/{building}/+/{sensor}",
        f"{site}/{building}/{device}/#",
    )
    return rng.choice(shapes)


def iot(subscribers: int, messages: int, seed: int = 0, sites: int = 200) -> Workload:
    """MQTT, IoT-shaped: about 45% of the filters hold ``+`` or ``#``; every message is a
    three- or four-level topic never published before, from devices nobody subscribed to
    by name (so an index cannot have seen it and no result cache helps)."""
    rng = random.Random(seed)
    subscribed = range(subscribers)  # device numbers filters may name
    subs = [Subscriber((_iot_filter(rng, sites, subscribed),)) for _ in range(subscribers)]
    fresh = range(subscribers, subscribers + 10 * max(messages, 1))
    seen: set[str] = set()
    msgs: list[Message] = []
    while len(msgs) < messages:
        topic = "/".join(_iot_topic(rng, sites, fresh))
        if topic not in seen:
            seen.add(topic)
            msgs.append(Message((topic,)))
    return Workload("iot", "mqtt", subs, msgs)


def iot_hot(
    subscribers: int, messages: int, seed: int = 0, topics: int = 200, skew: float = 1.1
) -> Workload:
    """The iot subscribers, with messages drawn Zipf-like from ``topics`` hot topics."""
    return _hot("iot-hot", iot(subscribers, topics, seed=seed), messages, seed, skew)


FLEET_MEASUREMENTS = ("temp", "humidity", "power", "vibration", "status")


def iot_fleet(
    subscribers: int, messages: int, seed: int = 0, sites: int = 50, devices: int = 2_000
) -> Workload:
    """MQTT, a fleet of ``sites`` x ``devices`` x 5 measurements: 55% of the filters name one
    device's measurement (``site7/dev81/temp``), 20% a device (``site7/dev81/#``), 15% a
    measurement site-wide (``site7/+/temp``), 7% a device everywhere (``+/dev81/+``), 3% a site
    (``site7/#``). A message is a device's reading never published before, half of them with
    a fourth level no filter names (``site7/dev81/temp/3f9a02``): ~100 recipients each at 100k."""
    rng = random.Random(seed)
    if messages > sites * devices * len(FLEET_MEASUREMENTS) // 2:
        raise ValueError(f"{messages} never-published readings need more sites or devices")

    def reading() -> tuple[str, str, str]:
        site, device = f"site{rng.randrange(sites)}", f"dev{rng.randrange(devices)}"
        return site, device, rng.choice(FLEET_MEASUREMENTS)

    subs = []
    for _ in range(subscribers):
        site, device, measurement = reading()
        draw = rng.random()
        if draw < 0.55:
            text = f"{site}/{device}/{measurement}"
        elif draw < 0.75:
            text = f"{site}/{device}/#"
        elif draw < 0.90:
            text = f"{site}/+/{measurement}"
        elif draw < 0.97:
            text = f"+/{device}/+"
        else:
            text = f"{site}/#"
        subs.append(Subscriber((text,)))
    seen: set[tuple[str, str, str]] = set()
    msgs: list[Message] = []
    while len(msgs) < messages:
        words = reading()
        if words in seen:
            continue
        seen.add(words)
        topic = "/".join(words)
        if rng.random() < 0.5:
            topic += f"/{rng.getrandbits(24):06x}"
        msgs.append(Message((topic,)))
    return Workload("iot-fleet", "mqtt", subs, msgs)


#: The industrial workload's hierarchy, ISA-95 style: (level name, words per parent).
PLANT_LEVELS = (("plant", 4), ("area", 5), ("line", 10), ("cell", 10), ("dev", 20))
PLANT_MEASUREMENTS = ("temp", "pressure", "speed", "current", "vibration", "state")


def industrial(subscribers: int, messages: int, seed: int = 0) -> Workload:
    """MQTT, a plant hierarchy six levels deep (``plant1/area3/line7/cell2/dev14/temp``, 40,000
    devices): filters on a device, a cell, a line, an area, a plant, or one measurement across
    a plant or an area; messages are device readings never published before, reaching ~1,000
    subscribers each at 100k (through ~8 distinct filters)."""
    rng = random.Random(seed)
    if messages > math.prod(count for _, count in PLANT_LEVELS) * len(PLANT_MEASUREMENTS) // 2:
        raise ValueError(f"{messages} never-published readings need a bigger plant")

    def reading() -> list[str]:
        words = [f"{name}{rng.randrange(count)}" for name, count in PLANT_LEVELS]
        return [*words, rng.choice(PLANT_MEASUREMENTS)]

    shapes = (  # (share, the filter's words from a reading's)
        (0.30, lambda w: w),
        (0.20, lambda w: [*w[:5], "#"]),
        (0.12, lambda w: [*w[:4], "#"]),
        (0.15, lambda w: [*w[:3], "#"]),
        (0.05, lambda w: [*w[:2], "#"]),
        (0.01, lambda w: [w[0], "#"]),
        (0.10, lambda w: [*w[:2], "+", "+", "+", w[5]]),
        (0.06, lambda w: [w[0], "+", "+", "+", "+", w[5]]),
        (0.01, lambda w: ["+", "+", "+", "+", "+", w[5]]),
    )
    cumulative = list(itertools.accumulate(share for share, _ in shapes))
    subs = []
    for _ in range(subscribers):
        words = reading()
        index = min(bisect.bisect(cumulative, rng.random() * cumulative[-1]), len(shapes) - 1)
        subs.append(Subscriber(("/".join(shapes[index][1](words)),)))
    seen: set[str] = set()
    msgs: list[Message] = []
    while len(msgs) < messages:
        topic = "/".join(reading())
        if topic not in seen:
            seen.add(topic)
            msgs.append(Message((topic,)))
    return Workload("industrial", "mqtt", subs, msgs)


def churn(subscribers: int, operations: int, seed: int = 0, publish_share: float = 0.5) -> list[Op]:
    """Mercure-style subscribes/unsubscribes interleaved with publishes.

    Starts from ``subscribers`` subscribes; then each op publishes with probability
    ``publish_share``, else subscribes or unsubscribes a live subscriber at even odds.
    """
    rng = random.Random(seed)
    pool = mercure(subscribers * 2, operations, seed=seed)
    ops = [Op("subscribe", subscriber=s) for s in pool.subscribers[:subscribers]]
    live = list(range(subscribers))
    fresh = iter(pool.subscribers[subscribers:])
    messages = iter(pool.messages)
    for _ in range(operations):
        if rng.random() < publish_share:
            ops.append(Op("publish", message=next(messages)))
        elif live and rng.random() < 0.5:
            ops.append(Op("unsubscribe", target=live.pop(rng.randrange(len(live)))))
        else:
            subscriber = next(fresh, None) or pool.subscribers[rng.randrange(subscribers)]
            live.append(len(ops))
            ops.append(Op("subscribe", subscriber=subscriber))
    return ops


def threads(
    threads: int, operations: int = 1000, lookups_per_insert: int = 1, seed: int = 0
) -> list[list[Op]]:
    """Matchbox's benchmark: per thread, ``operations`` AMQP inserts and lookups mixed 1:k."""
    out = []
    for t in range(threads):
        rng = random.Random(seed * 1000 + t)
        ops = []
        for i in range(operations):
            if i % (lookups_per_insert + 1) == 0:
                ops.append(Op("subscribe", subscriber=Subscriber((amqp_pattern(rng),))))
            else:
                ops.append(Op("publish", message=Message((".".join(_amqp_subject(rng, 5)),))))
        out.append(ops)
    return out


def respell(text: str, source: str, target: str) -> str:
    """``text``, a pattern or topic of word syntax ``source``, in ``target``'s spelling:
    the same words, with the target's delimiter and wildcards.

    The meaning is kept where both syntaxes agree on the words used: the amqp workload
    puts ``#`` only last, where AMQP's and MQTT's both match zero or more trailing words.

    >>> respell("stock.*.#", "amqp", "mqtt")
    'stock/+/#'
    """
    old, new = WORD_SYNTAXES[source], WORD_SYNTAXES[target]
    spelled = {old.single: new.single, old.multi: new.multi}
    return new.delimiter.join(spelled.get(word, word) for word in old.words(text))
