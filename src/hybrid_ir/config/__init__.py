"""The workflow's configuration: validated, merged from its layers, cross-checked before any job,
and read by rules and scripts."""
