"""Reproducible hybrid retrieval experiments: readers, indexes, runs, evaluation and tables."""

__version__ = "0.1.0"
