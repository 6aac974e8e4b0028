"""PySpark routing: which subscribers get which messages, for message sets beyond one machine.

Needs the ``skipfilter[spark]`` extra. See docs/spark.md for the data contract, the
strategies, the CLI and the streaming job.

- :func:`route` -- deliveries of messages to subscriptions (broadcast, sharded or naive).
- :func:`fanout_by_subscriber`, :func:`fanout_by_topic` -- capacity-planning aggregates.
- :func:`check_messages`, :func:`check_subscriptions`, :func:`read_messages`,
  :func:`read_subscriptions` -- inputs split into valid rows and error reports.
- :func:`start_routing_stream` -- the same routing as an exactly-once streaming job.
"""

from skipfilter.spark.contract import (
    Checked,
    MalformedInput,
    check_messages,
    check_subscriptions,
    read_messages,
    read_subscriptions,
)
from skipfilter.spark.routing import STRATEGIES, fanout_by_subscriber, fanout_by_topic, route

__all__ = [
    "STRATEGIES",
    "Checked",
    "MalformedInput",
    "check_messages",
    "check_subscriptions",
    "fanout_by_subscriber",
    "fanout_by_topic",
    "read_messages",
    "read_subscriptions",
    "route",
]
