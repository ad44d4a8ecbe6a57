"""Experiments and benchmarks: scripts that measured something once (or measure the trainer
for a change), run from a checkout (``python -m experiments.distill ...``), never installed.
What each one showed: ``experiments/README.md``."""
