"""Real processes and resources that tests and benchmarks share: loopback ports that survive
a restart, a self-signed certificate, the shipped proxies run for real, a Redis Sentinel set,
a process's resident memory. Tests import these from here, never from benchmarks/."""
