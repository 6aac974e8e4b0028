"""Hub counters and their Prometheus text exposition (no client library needed).

Counters are plain ints bumped from the event loop; rendering reads them at scrape time.
"""

from __future__ import annotations

from bisect import bisect_left
from collections import Counter
from dataclasses import dataclass, field

#: Upper bounds (seconds) of the match-time histogram buckets.
MATCH_BUCKETS = (1e-6, 5e-6, 1e-5, 5e-5, 1e-4, 5e-4, 1e-3, 5e-3, 1e-2, 0.1)


@dataclass(slots=True)
class Metrics:
    """What the hub counts; ``disconnects`` and ``rejected`` are keyed by reason/status."""

    updates: int = 0
    deliveries: int = 0
    subscribes: int = 0
    replayed: int = 0
    match_seconds_sum: float = 0.0
    match_buckets: list[int] = field(default_factory=lambda: [0] * (len(MATCH_BUCKETS) + 1))
    disconnects: Counter[str] = field(default_factory=Counter)
    rejected: Counter[tuple[str, int]] = field(default_factory=Counter)

    def observe_match(self, seconds: float, recipients: int) -> None:
        """Record one publish: its recipients and the time the index took to find them."""
        self.updates += 1
        self.deliveries += recipients
        self.match_seconds_sum += seconds
        self.match_buckets[bisect_left(MATCH_BUCKETS, seconds)] += 1

    def render(self, subscribers: int, indexed: int, history_head: int, commits: int) -> str:
        """The Prometheus text format (version 0.0.4)."""
        p = "skipfilter_hub_"
        lines = [
            f"# HELP {p}subscribers Connected SSE subscribers.",
            f"# TYPE {p}subscribers gauge",
            f"{p}subscribers {subscribers}",
            f"# HELP {p}index_subscriptions Subscribers held by the topic index.",
            f"# TYPE {p}index_subscriptions gauge",
            f"{p}index_subscriptions {indexed}",
            f"# HELP {p}subscribes_total Subscriptions accepted since start.",
            f"# TYPE {p}subscribes_total counter",
            f"{p}subscribes_total {self.subscribes}",
            f"# HELP {p}updates_total Updates published since start.",
            f"# TYPE {p}updates_total counter",
            f"{p}updates_total {self.updates}",
            f"# HELP {p}deliveries_total Update deliveries (recipients summed over updates).",
            f"# TYPE {p}deliveries_total counter",
            f"{p}deliveries_total {self.deliveries}",
            f"# HELP {p}replayed_total Stored updates sent to reconnecting subscribers.",
            f"# TYPE {p}replayed_total counter",
            f"{p}replayed_total {self.replayed}",
            f"# HELP {p}history_commits_total Transactions committed (publishes share them).",
            f"# TYPE {p}history_commits_total counter",
            f"{p}history_commits_total {commits}",
            f"# HELP {p}history_sequence Sequence number of the newest stored update.",
            f"# TYPE {p}history_sequence gauge",
            f"{p}history_sequence {history_head}",
            f"# HELP {p}match_seconds Time to compute the recipients of one update.",
            f"# TYPE {p}match_seconds histogram",
        ]
        running = 0
        for bound, count in zip(MATCH_BUCKETS, self.match_buckets, strict=False):
            running += count
            lines.append(f'{p}match_seconds_bucket{{le="{bound:g}"}} {running}')
        running += self.match_buckets[-1]
        lines.append(f'{p}match_seconds_bucket{{le="+Inf"}} {running}')
        lines.append(f"{p}match_seconds_sum {self.match_seconds_sum:.9f}")
        lines.append(f"{p}match_seconds_count {running}")
        lines += [
            f"# HELP {p}disconnects_total Subscriber streams closed, by reason.",
            f"# TYPE {p}disconnects_total counter",
        ]
        lines += [
            f'{p}disconnects_total{{reason="{r}"}} {n}' for r, n in sorted(self.disconnects.items())
        ]
        lines += [
            f"# HELP {p}rejected_total Requests refused, by endpoint and status.",
            f"# TYPE {p}rejected_total counter",
        ]
        for (endpoint, status), count in sorted(self.rejected.items()):
            lines.append(f'{p}rejected_total{{endpoint="{endpoint}",status="{status}"}} {count}')
        return "\n".join(lines) + "\n"
