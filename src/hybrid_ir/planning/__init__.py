"""What the workflow's rules ask of a validated configuration (the plan, each rule's params, the
kinds of output, code versions) and how Snakemake starts their jobs."""
