"""Which routing strategies run inside one streaming query, and why the others cannot.

``route()`` on a streaming DataFrame builds one plan for the whole stream, and Structured
Streaming refuses some of the operators the strategies use. Those strategies still route
a stream, one micro-batch at a time (:func:`skipfilter.spark.streaming.route_each_batch`,
Spark's ``foreachBatch``), where each batch is a plain DataFrame.

Contents: :data:`IN_STREAM`, :func:`stream_refusal`.
"""

from __future__ import annotations

__all__ = ["IN_STREAM", "stream_refusal"]

#: Strategies ``route()`` runs on a streaming DataFrame, inside the stream's own plan.
IN_STREAM = ("broadcast",)
_WHY = {
    "sharded": "it unions the stream with the subscription table (each shard's "
    "subscriptions meet its messages), and Structured Streaming cannot union a stream "
    "with a table",
    "sql": "it joins the stream with itself (a private update's topic hits with its "
    "allowed hits), which Structured Streaming does only between watermarked streams",
    "naive": "it numbers rows with monotonically_increasing_id and joins the stream with "
    "itself, both refused in a streaming query",
}


def stream_refusal(strategy: str) -> str | None:
    """Why ``strategy`` cannot run inside a streaming query, as a sentence; None if it can.

    >>> stream_refusal("broadcast") is None
    True
    >>> stream_refusal("sharded").startswith("strategy 'sharded' cannot run inside a stream")
    True
    """
    why = _WHY.get(strategy)
    if why is None:
        return None
    return (
        f"strategy {strategy!r} cannot run inside a streaming query: {why}; route the "
        "stream one micro-batch at a time with skipfilter.spark.streaming.route_each_batch "
        "(foreachBatch), or use strategy 'broadcast'"
    )
