"""Hypothesis strategies the TopicIndex state machines share."""

from __future__ import annotations

from hypothesis import strategies as st

from skipfilter.index import Tuning

#: Memo knobs at their extremes, so memos and per-group caches are emptied and rebuilt often.
tunings = st.builds(
    Tuning,
    memo_min_bitmaps=st.sampled_from([1, 3]),
    memo_eager_bitmaps=st.sampled_from([2, 8]),
    seen_window=st.sampled_from([1, 4096]),
    group_cache_threshold=st.sampled_from([0, 1, 8]),
)
