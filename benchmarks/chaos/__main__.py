"""``python -m benchmarks.chaos`` runs the soak, :mod:`benchmarks.chaos.chaos`, as its ``__main__``
(the command it had as one file)."""

import runpy

runpy.run_module("benchmarks.chaos.chaos", run_name="__main__", alter_sys=True)
