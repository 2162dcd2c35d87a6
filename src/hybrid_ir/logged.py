"""Run one workflow step with its output in the rule's log and errors on the console as one line.

Java (Lucene) writes to the process's file descriptors, not to Python's streams, so both are
redirected at the descriptor level. A :class:`HybridIRError` ends the step with exit status 1
after printing its one-line message to the log and to the console; so does any other
exception, with its traceback in the log only.
"""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Callable
from typing import Any

from hybrid_ir.errors import HybridIRError, quoted
from hybrid_ir.formats import relevance_limit


def run_step(job: Any, step: Callable[[], object]) -> None:
    """Run ``step`` for the Snakemake ``job`` (the ``snakemake`` object of a script): logging
    to its log file, and with the job's configured input limits in force."""
    log_path = job.log[0] if job.log else None
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
        with relevance_limit(job.config["max_relevance"]):  # filled in by validation
            step()
    except HybridIRError as error:
        logging.error("%s", error)
        print(f"hybrid-ir error: {error}", file=console)
        sys.exit(1)
    except Exception as error:  # a bug, not bad input: keep the traceback for the report
        logging.exception("unexpected error")
        where = f" (traceback in {log_path})" if log_path else ""
        print(f"hybrid-ir error: {type(error).__name__}: {quoted(str(error))}{where}", file=console)
        sys.exit(1)
