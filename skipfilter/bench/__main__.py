"""``python -m skipfilter.bench``: the same as ``skipfilter bench``."""

import sys

from skipfilter.bench.cli import main

sys.exit(main())
