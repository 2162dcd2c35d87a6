"""Raw files fetched and checked, collections converted into the canonical formats once, and runs
and qrels held in memory."""
