"""One workflow step as its job runs it: output into the rule's log, errors as one line, its
provenance record and the locked environment."""
