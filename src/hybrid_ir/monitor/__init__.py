"""A run as a person follows it: the console, where a run stands, how long its remaining jobs will
take, and Snakemake's own log read back."""
