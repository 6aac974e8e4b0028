"""What routing with Spark costs: the broadcast index against SQL and joins; the Redis source."""
