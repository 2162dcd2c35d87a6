"""The ``hybrid-ir`` command: its parser, its subcommands, shell completion, and the reference pages
generated from them."""
