"""The comparison harness: every implementation side by side on seeded workloads.

Dependencies point one way, each module using only those above it:

- :mod:`~skipfilter.bench.registry` -- every implementation, what it supports and needs.
- :mod:`~skipfilter.bench.model` -- what a run is asked and what it found (plain data).
- :mod:`~skipfilter.bench.workloads` -- seeded synthetic subscribers and messages.
- :mod:`~skipfilter.bench.scenarios` -- one workload at one size, ready to run.
- :mod:`~skipfilter.bench.measure` -- timing, memory and the recipients check.
- :mod:`~skipfilter.bench.report` -- tables, JSON, markdown and charts.
- :mod:`~skipfilter.bench.cli` -- ``skipfilter bench``.
"""
