"""Benchmarks: run from a checkout (``python -m benchmarks.bench``); not in the wheel."""
