"""Run one workflow step with its output in the rule's log and errors on the console as one line.

Java (Lucene) writes to the process's file descriptors, not to Python's streams, so both are
redirected at the descriptor level. A :class:`HybridIRError` ends the step with exit status 1
after printing its one-line message to the log and to the console.
"""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Callable

from hybrid_ir.errors import HybridIRError


def run_step(log_path: str | None, step: Callable[[], object]) -> None:
    console = os.fdopen(os.dup(2), "w", buffering=1)
    if log_path:
        os.makedirs(os.path.dirname(log_path) or ".", exist_ok=True)
        log = open(log_path, "w", buffering=1, encoding="utf-8")
        sys.stdout.flush()
        sys.stderr.flush()
        os.dup2(log.fileno(), 1)
        os.dup2(log.fileno(), 2)
        sys.stdout = sys.stderr = log
    logging.basicConfig(
        level=logging.INFO,
        stream=sys.stderr,
        format="%(asctime)s %(levelname)s %(message)s",
        force=True,
    )
    try:
        step()
    except HybridIRError as error:
        logging.error("%s", error)
        print(f"hybrid-ir error: {error}", file=console)
        sys.exit(1)
