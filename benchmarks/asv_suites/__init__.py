"""The asv suites (asv.conf.json's benchmark_dir): only these are imported by asv."""
