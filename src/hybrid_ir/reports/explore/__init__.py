"""Per-topic explorer pages: one self-contained HTML file per table, its data, script, statistics
and formulas."""
