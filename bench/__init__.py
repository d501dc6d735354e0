"""Benchmarks and, later, the papers' benchmark suites. Run a perf benchmark with ``python -m bench.NAME``."""
