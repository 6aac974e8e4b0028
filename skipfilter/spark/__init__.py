"""PySpark routing: which subscribers get which messages, for message sets beyond one machine.

Needs the ``skipfilter[spark]`` extra. See docs/spark.md for the data contract, the
strategies, the CLI and the streaming job.

- :func:`route` -- deliveries of messages to subscriptions (broadcast, sharded or naive).
- :func:`fanout_by_subscriber`, :func:`fanout_by_topic` -- capacity-planning aggregates.
- :func:`check_messages`, :func:`check_subscriptions`, :func:`read_messages`,
  :func:`read_subscriptions` -- inputs split into valid rows and error reports.
- :class:`MalformedInput`, :func:`malformed_rows` -- one error for a bad row, whatever the
  strategy (wrap the action in ``with malformed_rows():``).
- :func:`~skipfilter.spark.streaming.start_routing_stream` -- the same routing, streaming.

Names load on first use, so ``skipfilter route --help`` (and every other subcommand,
which imports :mod:`skipfilter.spark.cli`) does not pay for pyarrow.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from skipfilter.spark.contract import (
        Checked,
        MalformedInput,
        check_messages,
        check_subscriptions,
        read_messages,
        read_subscriptions,
    )
    from skipfilter.spark.malformed import malformed_rows
    from skipfilter.spark.routing import (
        STRATEGIES,
        fanout_by_subscriber,
        fanout_by_topic,
        route,
    )

_HOMES = {
    "Checked": "contract",
    "MalformedInput": "contract",
    "check_messages": "contract",
    "check_subscriptions": "contract",
    "read_messages": "contract",
    "read_subscriptions": "contract",
    "malformed_rows": "malformed",
    "STRATEGIES": "routing",
    "fanout_by_subscriber": "routing",
    "fanout_by_topic": "routing",
    "route": "routing",
}

__all__ = [
    "STRATEGIES",
    "Checked",
    "MalformedInput",
    "check_messages",
    "check_subscriptions",
    "fanout_by_subscriber",
    "fanout_by_topic",
    "malformed_rows",
    "read_messages",
    "read_subscriptions",
    "route",
]


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'skipfilter.spark' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"skipfilter.spark.{home}"), name)
    globals()[name] = value
    return value
