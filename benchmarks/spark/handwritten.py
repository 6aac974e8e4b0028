"""The routing a Spark user writes by hand, without skipfilter: the honest baseline.

Two queries in plain Spark SQL over temporary views, for URI templates whose expressions
are simple ``{var}`` (no ``{/var}``, ``{?var}``, ...), exact topics and ``*``, and one
subscription row per subscriber id (the pairing of ``topics`` and ``allowed`` hits uses it):

- :func:`plain` -- what one writes first: exact selectors by an equi-join, every template
  or ``*`` turned into a regex (``{var}`` -> ``[^/?#]*``, the rest quoted) and joined to
  every message topic with ``RLIKE`` (a nested loop over pattern rows x topic rows).
- :func:`tuned` -- what one writes after reading the plans: the exact join broadcast
  (hint), ``*`` holders crossed with messages without a regex, ``RLIKE`` only between
  distinct topics and distinct templates, behind a literal-prefix test (``startswith``),
  with the templates broadcast; template hits joined back to their holders; the private
  rule and the distinct pairs in one aggregation (``GROUP BY ... HAVING``).

Private updates need an ``allowed`` hit of the same row (plain: ``EXISTS``; tuned: in the
``HAVING``); deliveries are distinct pairs. spark_routing.py checks both against the
single-process index.
"""

from __future__ import annotations

import uuid
from typing import Any

__all__ = ["plain", "tuned"]

# A selector as a Java regex, in Spark SQL: the text quoted (\Q...\E), each {var} -> [^/?#]*
_REGEX = r"concat('^\\Q', regexp_replace(selector, '\\{[^}]*\\}', '\\\\E[^/?#]*\\\\Q'), '\\E$')"

_INPUTS = """
msg_topics AS (
  SELECT id AS message_id, coalesce(private, false) AS private,
         explode(array_distinct(topics)) AS topic
  FROM {messages}
),
selectors AS (
  SELECT subscriber_id, false AS auth, explode(topics) AS selector FROM {subscriptions}
  UNION ALL
  SELECT subscriber_id, true AS auth, explode(allowed) AS selector FROM {subscriptions}
)"""

_DELIVERIES = """
SELECT DISTINCT message_id, subscriber_id FROM hits h
WHERE NOT auth AND (NOT private OR EXISTS (
  SELECT 1 FROM hits a
  WHERE a.auth AND a.message_id = h.message_id AND a.subscriber_id = h.subscriber_id))
"""

PLAIN = f"""
WITH {_INPUTS},
patterns AS (
  SELECT subscriber_id, auth, CASE WHEN selector = '*' THEN '.*' ELSE {_REGEX} END AS regex
  FROM selectors WHERE selector = '*' OR selector LIKE '%{{%'
),
hits AS (
  SELECT t.message_id, t.private, s.subscriber_id, s.auth
  FROM msg_topics t JOIN selectors s ON t.topic = s.selector
  UNION ALL
  SELECT t.message_id, t.private, p.subscriber_id, p.auth
  FROM msg_topics t JOIN patterns p ON t.topic RLIKE p.regex
)
{_DELIVERIES}"""

TUNED = f"""
WITH {_INPUTS},
templates AS (
  SELECT DISTINCT selector, substring_index(selector, '{{', 1) AS prefix, {_REGEX} AS regex
  FROM selectors WHERE selector LIKE '%{{%'
),
template_hits AS (
  SELECT /*+ BROADCAST(p) */ t.topic, p.selector
  FROM (SELECT DISTINCT topic FROM msg_topics) t
  JOIN templates p ON startswith(t.topic, p.prefix) AND t.topic RLIKE p.regex
),
hits AS (
  SELECT /*+ BROADCAST(s) */ t.message_id, t.private, s.subscriber_id, s.auth
  FROM msg_topics t JOIN selectors s ON t.topic = s.selector
  UNION ALL
  SELECT t.message_id, t.private, s.subscriber_id, s.auth
  FROM msg_topics t
  JOIN template_hits th ON t.topic = th.topic
  JOIN selectors s ON s.selector = th.selector
  UNION ALL
  SELECT /*+ BROADCAST(s) */ m.message_id, m.private, s.subscriber_id, s.auth
  FROM (SELECT DISTINCT message_id, private FROM msg_topics) m
  CROSS JOIN (SELECT * FROM selectors WHERE selector = '*') s
)
SELECT message_id, subscriber_id FROM hits
GROUP BY message_id, subscriber_id, private
HAVING bool_or(NOT auth) AND (NOT private OR bool_or(auth))
"""


def _run(query: str, messages: Any, subscriptions: Any) -> Any:
    spark = messages.sparkSession
    tag = uuid.uuid4().hex[:8]
    names = {"messages": f"messages_{tag}", "subscriptions": f"subscriptions_{tag}"}
    messages.createOrReplaceTempView(names["messages"])
    subscriptions.createOrReplaceTempView(names["subscriptions"])
    for name, view in names.items():
        query = query.replace(f"{{{name}}}", view)
    return spark.sql(query)


def plain(messages: Any, subscriptions: Any) -> Any:
    """Deliveries by an equi-join for exact selectors and a per-row RLIKE join for the rest."""
    return _run(PLAIN, messages, subscriptions)


def tuned(messages: Any, subscriptions: Any) -> Any:
    """Deliveries by a broadcast equi-join, ``*`` apart, and prefix-filtered distinct RLIKE."""
    return _run(TUNED, messages, subscriptions)
