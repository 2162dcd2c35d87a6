"""Run one workflow step with its output in the rule's log and errors on the console as one line.

Java (Lucene) writes to the process's file descriptors, not to Python's streams, so both are
redirected at the descriptor level. A :class:`HybridIRError` ends the step with exit status 1
after printing its one-line message to the log and to the console; so does any other
exception, with its traceback in the log only.

Fault injection, for tests of retries on a cluster (tests/slurm/): with
``HYBRID_IR_FAULT=fail:<rule>`` (or ``hang:<rule>``; several entries separated by commas) and
``HYBRID_IR_FAULT_DIR=<dir>``, the first job of that rule to start fails with exit status 1 (or
sleeps until it is killed), and every later attempt runs normally. "First" is a marker file
``<dir>/<rule>.<fail|hang>`` that the faulty attempt creates; delete it to arm the fault again.
``slow:<rule>`` makes the first attempt wait ``HYBRID_IR_FAULT_SLOW_S`` seconds (default 20)
before its step, counting them on a progress bar, as a long job would (the console's tests).
Unset, the variables cost one dictionary lookup per step.

The log starts with a header naming the job (:func:`hybrid_ir.joblog.configure.header`), its lines
are kept clean (:mod:`hybrid_ir.joblog.configure`), its progress bars write plain progress lines
(:mod:`hybrid_ir.joblog.progress`), and the process takes the job's rule and wildcards as its
title (:mod:`hybrid_ir.joblog.process_title`).
"""

from __future__ import annotations

import logging
import os
import sys
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from hybrid_ir.config.sources import attributed_message, read_layers
from hybrid_ir.data.formats import line_limit, relevance_limit
from hybrid_ir.data.hub_access import set_hub_access
from hybrid_ir.data.raw_check import check_raw_inputs
from hybrid_ir.errors import HybridIRError, printable, quoted
from hybrid_ir.joblog.configure import configure_job_log, header
from hybrid_ir.joblog.process_title import name_job
from hybrid_ir.joblog.progress import report_bars_as_lines
from hybrid_ir.jobs.provenance import write_records
from hybrid_ir.paths import MANIFEST

FAULT_ENV = "HYBRID_IR_FAULT"
FAULT_DIR_ENV = "HYBRID_IR_FAULT_DIR"
FAULT_SLOW_ENV = "HYBRID_IR_FAULT_SLOW_S"
FAULT_MODES = ("fail", "hang", "slow")
DEFAULT_SLOW_S = 20


class InjectedFault(HybridIRError):
    """The failure that ``HYBRID_IR_FAULT=fail:<rule>`` asked for."""


def armed_faults(setting: str) -> dict[str, str]:
    """Rule -> ``fail`` or ``hang``, from the value of ``HYBRID_IR_FAULT``."""
    faults: dict[str, str] = {}
    for entry in filter(None, (part.strip() for part in setting.split(","))):
        mode, _, rule = entry.partition(":")
        if mode not in FAULT_MODES or not rule:
            raise HybridIRError(
                f"{FAULT_ENV}: {quoted(entry)} is not fail:<rule>, hang:<rule> or slow:<rule>"
            )
        faults[rule] = mode
    return faults


def inject_fault(rule: str, environ: Mapping[str, str] = os.environ) -> None:
    """Fail or hang the first attempt of ``rule`` when ``HYBRID_IR_FAULT`` names it."""
    setting = environ.get(FAULT_ENV)
    if not setting:
        return
    mode = armed_faults(setting).get(rule)
    if mode is None:
        return
    directory = environ.get(FAULT_DIR_ENV)
    if not directory:
        raise HybridIRError(f"{FAULT_ENV} is set but {FAULT_DIR_ENV} (its marker directory) is not")
    marker = Path(directory) / f"{rule}.{mode}"
    marker.parent.mkdir(parents=True, exist_ok=True)
    try:
        # Exclusive creation: of several jobs of the rule, or attempts of one, only one faults.
        os.close(os.open(marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY))
    except FileExistsError:
        return
    if mode == "fail":
        raise InjectedFault(f"{FAULT_ENV}: first attempt of rule {rule} fails on purpose")
    if mode == "slow":
        from tqdm import tqdm

        seconds = _slow_seconds(environ.get(FAULT_SLOW_ENV))
        for _ in tqdm(range(seconds), desc=f"{FAULT_ENV} slow start", unit="second"):
            time.sleep(1)
        return
    logging.warning("%s: first attempt of rule %s hangs on purpose until killed", FAULT_ENV, rule)
    while True:
        time.sleep(60)


def _slow_seconds(value: str | None) -> int:
    if not value:
        return DEFAULT_SLOW_S
    if not value.isdigit():
        raise HybridIRError(f"{FAULT_SLOW_ENV}: {quoted(value)} is not a whole number of seconds")
    return int(value)


JOB_SERVER_PID_ENV = "HYBRID_IR_JOB_SERVER_PID"
"""Set in a job forked from a job server (its pid); named here rather than imported from the
server's module, so that the server's code is not part of every job's code digest."""


def run_step(
    job: Any,
    step: Callable[[], object],
    raw: Mapping[str, str] | None = None,
    hub_access: bool = False,
) -> None:
    """Run ``step`` for the Snakemake ``job`` (the ``snakemake`` object of a script): logging
    to its log file, with the job's configured input limits in force, and then a provenance
    record per output (``raw``: the raw files, mirror path -> sha256, the job fetched; read
    after ``step``, which may fill it in).

    Only a step with ``hub_access`` (the fetch of a pinned hub model) may reach the model hub:
    every other job reads the models the workflow fetched into its cache, so compute nodes
    need no internet, and a model outside that cache fails the job instead of downloading.
    """
    set_hub_access(hub_access)
    name_job(job.rule, getattr(job, "wildcards", None))
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
    configure_job_log(sys.stderr)
    logging.info("%s", header(job, os.environ.get(JOB_SERVER_PID_ENV)))
    try:
        report_bars_as_lines()
        inject_fault(job.rule)
        if hasattr(job, "output"):  # a Snakemake job: its raw inputs as the manifest has them
            check_raw_inputs(getattr(job, "input", ()), job.config.get("manifest", MANIFEST))
        started = time.perf_counter()
        # Both filled in by validation.
        with relevance_limit(job.config["max_relevance"]), line_limit(job.config["max_line_chars"]):
            step()
        if hasattr(job, "output"):  # a Snakemake job, not a test's stand-in
            write_records(job, time.perf_counter() - started, raw)
    except HybridIRError as error:
        message = str(error)
        if hasattr(job, "output"):  # a workflow job: name the file that sets the key
            message = attributed_message(message, read_layers())
        logging.error("%s", printable(message))
        print(f"hybrid-ir error: {printable(message)}", file=console)
        sys.exit(1)
    except Exception as error:  # a bug, not bad input: keep the traceback for the report
        logging.exception("unexpected error")
        where = f" (traceback in {log_path})" if log_path else ""
        print(f"hybrid-ir error: {type(error).__name__}: {quoted(str(error))}{where}", file=console)
        sys.exit(1)
