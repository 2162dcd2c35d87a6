"""What people read: result tables, figures, claim verdicts, per-topic explorer pages, comparisons,
and the HTML report's entries."""
