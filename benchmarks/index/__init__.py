"""What the index costs: each matcher side by side, a mixed index, word syntaxes, subscribes."""
