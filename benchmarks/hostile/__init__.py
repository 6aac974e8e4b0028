"""What one hostile request costs a real hub: URL Patterns built to be slow, heads and bodies."""
