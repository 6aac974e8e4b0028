"""Side-by-side report of every implementation on one seeded workload.

The same as ``skipfilter bench``; the logic lives in :mod:`skipfilter.bench`.
Run ``python benchmarks/index/compare.py --help`` for the options.
"""

from __future__ import annotations

import sys

from skipfilter.bench.cli import main

if __name__ == "__main__":
    sys.exit(main())
