"""The chaos soak: hub nodes as real processes, faults injected while they work, and every
publish and delivery checked against the store (``python -m benchmarks.chaos``)."""
