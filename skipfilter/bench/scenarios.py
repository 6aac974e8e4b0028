"""One workload at one size, ready to run: :class:`Scenario` and :func:`scenario`."""

from __future__ import annotations

from dataclasses import dataclass

from skipfilter.bench import workloads
from skipfilter.bench.model import WORKLOADS
from skipfilter.bench.workloads import Op, Subscriber
from skipfilter.selectors import TypedSelector

__all__ = ["Scenario", "scenario"]


@dataclass(frozen=True, slots=True)
class Scenario:
    """One workload at one size: subscribers to load first, then ops to time."""

    workload: str
    syntax: str
    subscribers: list[Subscriber]
    ops: list[Op]  # an unsubscribe's target is a subscriber position (see _positions)
    extras: list[Subscriber]  # fresh subscribers for the marginal subscribe/unsubscribe cost


def scenario(workload: str, size: int, messages: int, seed: int) -> Scenario:
    """Generate ``workload`` at ``size`` subscribers with ``messages`` timed operations."""
    extras_n = min(size, 1_000)
    if workload in ("amqp", "mqtt"):
        w = workloads.amqp(size, messages, seed=seed)
        extra = workloads.amqp(extras_n, 0, seed=seed + 1).subscribers
        if workload == "mqtt":
            w, extra = _as_mqtt(w), _as_mqtt(workloads.Workload("", "", extra, [])).subscribers
        return Scenario(workload, w.syntax, w.subscribers, _publishes(w), extra)
    if workload in ("iot", "iot-hot"):
        make = workloads.iot if workload == "iot" else workloads.iot_hot
        w = make(size, messages, seed=seed)
        extra = workloads.iot(extras_n, 0, seed=seed + 1).subscribers
        return Scenario(workload, "mqtt", w.subscribers, _publishes(w), extra)
    if workload in ("iot-fleet", "industrial"):
        build = workloads.iot_fleet if workload == "iot-fleet" else workloads.industrial
        w = build(size, messages, seed=seed)
        extra = build(extras_n, 0, seed=seed + 1).subscribers
        return Scenario(workload, "mqtt", w.subscribers, _publishes(w), extra)
    if workload == "mercure1":
        w = workloads.mercure1(size, messages, seed)
        extra = workloads.mercure1(extras_n, 0, seed=seed + 1).subscribers
        return Scenario(workload, "urlpattern", *_split(w), extra)
    extra = workloads.mercure(extras_n, 0, seed=seed + 1).subscribers
    if workload == "mercure":
        return Scenario(
            workload, "mercure", *_split(workloads.mercure(size, messages, seed)), extra
        )
    if workload == "hot":
        return Scenario(workload, "mercure", *_split(workloads.hot(size, messages, seed)), extra)
    if workload == "churn":
        ops = workloads.churn(size, messages, seed=seed)
        subs = [op.subscriber for op in ops[:size] if op.subscriber is not None]
        return Scenario(workload, "mercure", subs, ops[size:], extra)
    raise ValueError(f"unknown workload {workload!r}; expected one of {', '.join(WORKLOADS)}")


def _as_mqtt(w: workloads.Workload) -> workloads.Workload:
    """The amqp workload in MQTT spelling: ``/`` levels, ``+`` for ``*``.

    Same matches: the generator puts ``#`` only last, where both mean "zero or more
    trailing words", and no topic starts with ``$``. Lets Paho join the comparison.
    """

    def convert(text: str) -> str:
        return workloads.respell(text, "amqp", "mqtt")

    def converted(selectors: tuple[str | TypedSelector, ...]) -> tuple[str, ...]:
        return tuple(convert(s) for s in selectors if isinstance(s, str))

    subs = [Subscriber(converted(s.selectors)) for s in w.subscribers]
    msgs = [workloads.Message(tuple(map(convert, m.topics)), m.private) for m in w.messages]
    return workloads.Workload("mqtt", "mqtt", subs, msgs)


def _publishes(w: workloads.Workload) -> list[Op]:
    return [Op("publish", message=m) for m in w.messages]


def _split(w: workloads.Workload) -> tuple[list[Subscriber], list[Op]]:
    return w.subscribers, _publishes(w)
