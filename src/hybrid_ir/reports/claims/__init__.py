"""The papers' claims: their files, the statistical verdicts on this workflow's per-topic scores,
and the pages that show them."""
