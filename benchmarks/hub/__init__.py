"""What the hub costs: load, publishes, replay and Redis, Sentinel acks, the Python client."""
