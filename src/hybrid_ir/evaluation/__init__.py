"""Runs scored as trec_eval scores them, paired significance tests, expected-score bands, and
reproducibility measures."""
