"""A job's log as a reader can judge it: a header naming the job, every line timestamped and
free of terminal escape codes, and the third-party warnings that are expected here said once,
in a line of the project's own, instead of as alarms.

What :func:`configure_job_log` sets up in a job (:func:`hybrid_ir.jobs.run.run_step` calls it):

- the root logger's handler, whose formatter drops escape codes and carriage returns and names
  a third-party logger (``transformers: ...``) in front of its message;
- Python warnings go through logging (``py.warnings``), so they are timestamped too;
- transformers logs through that handler instead of its own (which wrote ``[transformers]``
  lines without a time, and its loading report with colour codes), and
  :class:`ExpectedNotes` turns what it reports about a checkpoint's pre-training heads
  (``cls.``, ``lm_head.``: an encoder checkpoint has none, which pretraining expects, as it
  trains them) into one line that says when that is right, once per job; a report naming any
  other tensor is kept whole.
"""

from __future__ import annotations

import logging
import os
import re
import socket
from collections.abc import Iterable, Mapping
from datetime import datetime
from pathlib import Path
from types import ModuleType
from typing import Any, TextIO

from hybrid_ir.joblog.import_hooks import after_import

ESCAPES = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[@-_]")
"""Terminal control sequences: CSI (colours, cursor moves), OSC (titles, links), and others."""
HEAD_PREFIXES = ("cls.", "lm_head.")
"""The pre-training heads of BERT (masked LM, next sentence) and RoBERTa (masked LM): an
encoder checkpoint lacks them, which pretraining here expects (it trains them), and an encoder
loaded from a checkpoint with them leaves them aside. A report naming anything else (a pooler,
a classifier, an encoder layer) is kept whole."""
FORMAT = "%(asctime)s %(levelname)s %(message)s"
_REPORT_HEAD = re.compile(r"^(?P<model>\w+) LOAD REPORT from: (?P<source>.*)$")
_REPORT_ROW = re.compile(r"^(?P<key>\S+)\s*\|\s*(?P<status>[A-Z]+)\s*\|")
_CORRUPTED_TIE = re.compile(r"^This checkpoint seem corrupted\. .* to tie (\S+) to (\S+), but both")


def strip_escapes(text: str) -> str:
    """``text`` without terminal escape sequences and carriage returns."""
    return ESCAPES.sub("", text).replace("\r", "") if "\x1b" in text or "\r" in text else text


class CleanFormatter(logging.Formatter):
    """:data:`FORMAT`, escape codes dropped, a third-party logger's name before its message."""

    def formatMessage(self, record: logging.LogRecord) -> str:  # noqa: N802 (logging's name)
        top = record.name.partition(".")[0]
        record.message = record.message.rstrip()  # a warning's text ends in a line break
        if top not in ("root", "hybrid_ir", "py"):
            record.message = f"{top}: {record.message}"
        return strip_escapes(super().formatMessage(record))


class ExpectedNotes(logging.Filter):
    """transformers' notes about missing or unused task heads, said once as one line."""

    def __init__(self) -> None:
        super().__init__()
        self._said: set[str] = set()

    def filter(self, record: logging.LogRecord) -> bool:
        if not record.name.startswith("transformers"):
            return True
        explanation = expected_note(strip_escapes(record.getMessage()))
        if explanation is None:
            return True
        if explanation in self._said:
            return False
        self._said.add(explanation)
        record.name, record.msg, record.args = "hybrid_ir.joblog.configure", explanation, None
        if "unused by this model" in explanation:  # harmless whatever the job does
            record.levelno, record.levelname = logging.INFO, "INFO"
        return True


def expected_note(message: str) -> str | None:
    """The project's line for a transformers message about task heads, or None if the message
    is about anything else (and is then kept as it is)."""
    tie = _CORRUPTED_TIE.match(message)
    if tie:
        if not all(_is_head(key) for key in tie.groups()):
            return None
        return (
            f"note: the checkpoint has no {_groups(tie.groups())} head, so transformers "
            "initialises the tied pair anew (its 'checkpoint seem corrupted'): as it should "
            "where this job trains the head (pretraining), not where it uses the model as it is"
        )
    lines = message.splitlines()
    head = _REPORT_HEAD.match(lines[0]) if lines else None
    if head is None:
        return None
    rows = [row.groupdict() for row in map(_REPORT_ROW.match, lines[1:]) if row]
    if not rows or not all(_is_head(row["key"]) for row in rows):
        return None
    statuses = {row["status"] for row in rows}
    if not statuses <= {"MISSING", "UNEXPECTED"}:
        return None
    said = []
    for status, meaning in (
        ("MISSING", "not in the checkpoint, newly initialised: as they should be where this job "
         "trains them (pretraining), not where it uses the model as it is"),
        ("UNEXPECTED", "in the checkpoint, unused by this model (an encoder leaves them aside)"),
    ):  # fmt: skip
        keys = [row["key"] for row in rows if row["status"] == status]
        if keys:
            said.append(f"{len(keys)} head tensor(s) {_groups(keys)} {meaning}")
    return f"note: {head['model']} from {head['source']}: " + "; ".join(said)


def _is_head(key: str) -> bool:
    return key.startswith(HEAD_PREFIXES)


def _groups(keys: Iterable[str]) -> str:
    """``cls.predictions.*, cls.seq_relationship.*`` for a list of tensor names."""
    return ", ".join(sorted({".".join(key.split(".")[:2]) + ".*" for key in keys}))


def _route_transformers(module: ModuleType) -> None:
    """transformers' records through the root logger's handler, not its own."""
    module.disable_default_handler()
    module.enable_propagation()


def configure_job_log(stream: TextIO) -> None:
    """Log to ``stream`` as the module's docstring says."""
    handler = logging.StreamHandler(stream)
    handler.setFormatter(CleanFormatter(FORMAT))
    handler.addFilter(ExpectedNotes())
    logging.basicConfig(level=logging.INFO, handlers=[handler], force=True)
    logging.captureWarnings(True)
    after_import("transformers.utils.logging", _route_transformers)


def header(job: Any, server: str | None, environ: Mapping[str, str] = os.environ) -> str:
    """The first line of a job's log: rule, wildcards, threads, device, start, host, and its
    process (``server``: the job server it was forked from, if any)."""
    wildcards: Any = getattr(job, "wildcards", None)
    items = wildcards.items() if hasattr(wildcards, "items") else ()
    named = ", ".join(f"{key}={value}" for key, value in items)
    threads = getattr(job, "threads", 1)
    resources = getattr(job, "resources", {}) or {}
    gpus = resources.get("gpu", 0) if hasattr(resources, "get") else 0
    visible = environ.get("CUDA_VISIBLE_DEVICES")
    device = "cpu"
    if gpus:
        device = f"{gpus} GPU(s) requested" + (
            f", CUDA_VISIBLE_DEVICES={visible}" if visible else ""
        )
    origin = f"forked from job server {server}" if server else "a fresh interpreter"
    started = datetime.now().isoformat(sep=" ", timespec="seconds")
    return (
        f"job {job.rule}" + (f" ({named})" if named else "") + f": {threads} thread(s), "
        f"device {device}, started {started} on {socket.gethostname()}, "
        f"process {os.getpid()}: {origin}"
    )


def log_tail(path: str | Path, lines: int | None) -> tuple[list[str], int]:
    """The last ``lines`` lines of a log (all: None), escape codes dropped, and its length."""
    try:
        text = Path(path).read_text(encoding="utf-8", errors="replace")
    except OSError:
        return [], 0
    every = strip_escapes(text).splitlines()
    return (every if lines is None else every[len(every) - lines :]), len(every)
