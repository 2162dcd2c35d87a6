"""The console of a run: Snakemake's logger plugin ``hybrid-ir`` (``--logger hybrid-ir``, the
default of the workflow's profiles).

Snakemake's own console prints an 8-line block per job and, before the run's end, the inputs
of ``rule all`` (19 KB in the default configuration), while the progress of a long job goes
only to its log. This one prints, in plain lines that read the same in a terminal, a CI log or
a SLURM controller's output file (colours only on a terminal):

- the planned jobs per rule (Snakemake's ``Job stats:`` table) when the run starts;
- one line per job started (its rule and first output) and one per job finished, with its time,
  the count done and, from earlier runs' timings (:mod:`hybrid_ir.monitor.estimates`), the time
  left;
- every :data:`hybrid_ir.joblog.progress.PROGRESS_EVERY_ENV` seconds (``--logger-hybrid-ir-
  progress-every``, 30 by default; it sets that variable for the jobs too), for each job
  running that long, its latest progress line (what it does, done/total, rate), read from its
  log, with its time against its ``runtime`` request;
- for a failed job, its log's path and last lines (all of them with ``--show-failed-logs``);
- Snakemake's other messages as they are, but for its scheduling chatter.

A dry run prints exactly what Snakemake's own console prints: it is read for its job list.
Snakemake finds the plugin as the package ``snakemake_logger_plugin_hybrid_ir`` (in src/), which
only names the classes here; it imports every logger plugin at each start, so this module
imports nothing heavy.
"""

from __future__ import annotations

import logging
import os
import sys
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from snakemake_interface_logger_plugins.base import LogHandlerBase
from snakemake_interface_logger_plugins.common import LogEvent
from snakemake_interface_logger_plugins.settings import LogHandlerSettingsBase

from hybrid_ir.joblog.configure import log_tail, strip_escapes
from hybrid_ir.joblog.progress import (
    DEFAULT_EVERY_S,
    PROGRESS_EVERY_ENV,
    ProgressLine,
    clock,
    latest_progress,
)
from hybrid_ir.monitor.estimates import Durations, earlier_durations, remaining, time_left
from hybrid_ir.monitor.snakemake_log import job_label

FAILED_LOG_LINES = 20
"""Lines of a failed job's log shown without ``--show-failed-logs`` (all of them with it)."""
HEARTBEAT_TIMES = 10
"""A job with no new progress line is still named every this many progress intervals."""
SCHEDULING_CHATTER = (
    "Select jobs to execute",
    "Using shell:",
    "Rules claiming more threads will be scaled down",
    "Conda environments: ignored",
    "Singularity containers: ignored",
    "Assuming unrestricted shared filesystem usage",
    "host: ",
)
_GREEN, _RED, _YELLOW, _RESET = "\x1b[32m", "\x1b[31m", "\x1b[33m", "\x1b[0m"


@dataclass
class ConsoleSettings(LogHandlerSettingsBase):
    progress_every: float = field(
        default=DEFAULT_EVERY_S,
        metadata={
            "help": "seconds between a running job's progress lines (on the console and in "
            "its log)",
            "type": float,
        },
    )


@dataclass
class _Job:
    jobid: int
    rule: str
    label: str
    logs: list[str]
    benchmark: str | None
    runtime_min: float | None
    began: float = field(default_factory=time.monotonic)
    said: float = field(default_factory=time.monotonic)
    progress: ProgressLine | None = None
    expected: float | None = None
    estimated: bool = False


class RunConsole(LogHandlerBase):
    """The handler Snakemake's logging hands each record of the run to."""

    def __post_init__(self) -> None:
        from snakemake.logging import ColorizingTextHandler, DefaultFormatter

        settings = self.settings if isinstance(self.settings, ConsoleSettings) else None
        self.every = settings.progress_every if settings else DEFAULT_EVERY_S
        common = self.common_settings
        self.stream = sys.stdout if common.stdout else sys.stderr
        self.dryrun = bool(common.dryrun)
        self.show_failed_logs = bool(common.show_failed_logs)
        terminal = bool(getattr(self.stream, "isatty", lambda: False)())
        self.colour = terminal and not common.nocolor and os.environ.get("TERM") != "dumb"
        self.snakemake_console = ColorizingTextHandler(
            nocolor=not self.colour,
            stream=self.stream,
            formatter=DefaultFormatter(common.quiet, common.show_failed_logs),
        )
        self.writing = threading.RLock()
        self.jobs: dict[int, _Job] = {}
        self.planned: dict[str, int] = {}
        self.started = Counter[str]()
        self.done = self.total = 0
        self.slots = 1
        self.workdir = Path.cwd()
        self.durations: Durations | None = None
        self.stopping = threading.Event()
        self.poller: threading.Thread | None = None
        self.handlers = {
            LogEvent.WORKFLOW_STARTED: self._workflow_started,
            LogEvent.RUN_INFO: self._run_info,
            LogEvent.RESOURCES_INFO: self._resources,
            LogEvent.JOB_INFO: self._job_started,
            LogEvent.JOB_STARTED: lambda _: None,  # "Execute N jobs...": the jobs say it
            LogEvent.JOB_FINISHED: self._job_finished,
            LogEvent.PROGRESS: self._progress,
            LogEvent.JOB_ERROR: self._job_failed,
        }
        # The jobs write their progress lines as often as this console shows them.
        os.environ.setdefault(PROGRESS_EVERY_ENV, f"{self.every:g}")

    @property
    def writes_to_stream(self) -> bool:
        return True

    @property
    def writes_to_file(self) -> bool:
        return False

    @property
    def has_filter(self) -> bool:
        return False  # Snakemake's own (--quiet, --printshellcmds, --debug-dag) applies

    @property
    def has_formatter(self) -> bool:
        return True

    @property
    def needs_rulegraph(self) -> bool:
        return False

    def emit(self, record: logging.LogRecord) -> None:
        try:
            with self.writing:
                if self.dryrun:
                    self.snakemake_console.emit(record)
                else:
                    self._handle(record)
        except Exception:  # noqa: BLE001 - a console bug must not stop the run
            self.handleError(record)

    def close(self) -> None:
        self.stopping.set()
        super().close()

    # -- records -------------------------------------------------------------------------

    def _handle(self, record: logging.LogRecord) -> None:
        event = getattr(record, "event", None)
        handler = self.handlers.get(event) if isinstance(event, LogEvent) else None
        if handler is not None:
            handler(record)
        elif event is None and str(record.msg or "").startswith(SCHEDULING_CHATTER):
            return
        else:
            self.snakemake_console.emit(record)

    def _workflow_started(self, record: logging.LogRecord) -> None:
        info = record.__dict__
        self.workdir = Path(info.get("cwd") or Path.cwd())
        self._say(
            f"Snakemake {info.get('snakemake_version', '')} runs {info.get('snakefile_main', '')}"
            f" in {self.workdir}"
        )

    def _run_info(self, record: logging.LogRecord) -> None:
        stats = dict(getattr(record, "stats", {}) or {})
        self.total = int(stats.pop("total", sum(stats.values())))
        self.planned = {rule: int(count) for rule, count in stats.items()}
        self._say(str(record.msg).rstrip("\n"))
        if self.poller is None:
            self.poller = threading.Thread(target=self._poll, name="run-console", daemon=True)
            self.poller.start()

    def _resources(self, record: logging.LogRecord) -> None:
        cores = getattr(record, "cores", None)
        nodes = getattr(record, "nodes", None)
        if isinstance(cores, int):
            self.slots = cores
        elif isinstance(nodes, int):
            self.slots = nodes
        if not str(record.msg).startswith(SCHEDULING_CHATTER):
            self._say(str(record.msg))

    def _job_started(self, record: logging.LogRecord) -> None:
        info = record.__dict__
        rule = str(info.get("rule_name", "?"))
        jobid = int(info.get("jobid", -1))
        resources: Any = info.get("resources")
        runtime = resources.get("runtime") if hasattr(resources, "get") else None
        job = _Job(
            jobid=jobid,
            rule=rule,
            label=job_label(rule, list(info.get("output") or ()), _named(info.get("wildcards"))),
            logs=list(info.get("log") or ()),
            benchmark=info.get("benchmark"),
            runtime_min=float(runtime) if isinstance(runtime, int | float) else None,
        )
        self.jobs[jobid] = job
        self.started[rule] += 1
        message = f" ({info['rule_msg']})" if info.get("rule_msg") else ""
        self._say(f"{self._now()} start  {job.label}{message}")

    def _job_finished(self, record: logging.LogRecord) -> None:
        job = self.jobs.pop(int(getattr(record, "job_id", -1)), None)
        self.done += 1
        if job is None:
            return
        took = clock(time.monotonic() - job.began)
        state = f"{self.done}/{self.total} done" if self.total else f"{self.done} done"
        if self.jobs:
            state += f", {len(self.jobs)} running"
        left = self._time_left()
        if left:
            state += f"; {left}"
        self._say(f"{self._now()} done   {job.label} in {took} [{state}]", _GREEN)

    def _progress(self, record: logging.LogRecord) -> None:
        done, total = int(getattr(record, "done", 0)), int(getattr(record, "total", 0))
        self.done, self.total = done, total or self.total
        if total and done == total:
            self._say(f"{done} of {total} steps (100%) done")

    def _job_failed(self, record: logging.LogRecord) -> None:
        info = record.__dict__
        job = self.jobs.pop(int(info.get("jobid", -1)), None)
        rule = str(info.get("rule_name", "?"))
        label = job.label if job else job_label(rule, list(info.get("output") or ()), "")
        took = f" after {clock(time.monotonic() - job.began)}" if job else ""
        self._say(f"{self._now()} FAILED {label}{took} (jobid {info.get('jobid')})", _RED)
        if info.get("rule_msg"):
            self._say(f"    message: {info['rule_msg']}")
        if info.get("shellcmd"):
            self._say(f"    shell: {' '.join(str(info['shellcmd']).split())}")
        for key, value in dict(info.get("aux") or {}).items():
            self._say(f"    {key}: {value}")
        for log in info.get("log") or ():
            self._say_log_tail(log)

    def _say_log_tail(self, log: str) -> None:
        lines, length = log_tail(
            self.workdir / log, None if self.show_failed_logs else FAILED_LOG_LINES
        )
        if not length:
            self._say(f"    log: {log} (empty or missing)")
            return
        shown = "all" if len(lines) == length else f"last {len(lines)} of"
        self._say(f"    log: {log} ({shown} {length} lines):")
        for line in lines:
            self._say(f"    | {line}")

    # -- running jobs ----------------------------------------------------------------------

    def _poll(self) -> None:
        """Every interval, say what each long-running job is doing."""
        self.durations = earlier_durations(self.workdir)
        while not self.stopping.wait(self.every):
            try:
                with self.writing:
                    self._say_running()
            except Exception:  # noqa: BLE001 - the next round tries again
                continue

    def _say_running(self) -> None:
        now = time.monotonic()
        for job in self.jobs.values():
            running = now - job.began
            if running < self.every:
                continue
            latest = latest_progress(self.workdir / job.logs[0]) if job.logs else None
            fresh = latest is not None and latest != job.progress
            if not fresh and now - job.said < HEARTBEAT_TIMES * self.every:
                continue
            job.progress, job.said = latest, now
            doing = f": {latest.describe()}" if latest is not None else ""
            self._say(
                f"{self._now()} ...    {job.label}{doing} [{self._running_for(job, running)}]"
            )

    def _running_for(self, job: _Job, seconds: float) -> str:
        said = f"running {clock(seconds)}"
        if job.runtime_min:
            said += f" of its {clock(job.runtime_min * 60)} runtime"
        return said

    def _time_left(self) -> str | None:
        if self.durations is None:
            return None
        now = time.monotonic()
        running = []
        for job in self.jobs.values():
            if not job.estimated:
                job.expected = self.durations.expected(job.rule, job.benchmark)
                job.estimated = True
            running.append(remaining(job.expected, now - job.began, job.progress))
        waiting = {rule: max(count - self.started[rule], 0) for rule, count in self.planned.items()}
        left = time_left(self.durations, waiting, running, self.slots)
        return left.describe() if left else None

    # -- output ----------------------------------------------------------------------------

    def _now(self) -> str:
        return time.strftime("%H:%M:%S")

    def _say(self, text: str, colour: str | None = None) -> None:
        if self.colour and colour:
            text = f"{colour}{text}{_RESET}"
        elif not self.colour:
            text = strip_escapes(text)
        self.stream.write(text + "\n")
        self.stream.flush()


def _named(wildcards: Any) -> str:
    items = wildcards.items() if hasattr(wildcards, "items") else ()
    return ", ".join(f"{key}={value}" for key, value in items)


def drain_console(timeout_s: float = 5.0) -> None:
    """Wait until the console has written every record logged so far: Snakemake hands records
    to logger plugins through a queue, which a print of the Snakefile's would overtake."""
    from snakemake.logging import logger

    deadline = time.monotonic() + timeout_s
    for handler in logger.handlers:
        queue = getattr(handler, "queue", None)
        while queue is not None and getattr(queue, "unfinished_tasks", 0) > 0:
            if time.monotonic() > deadline:
                return
            time.sleep(0.01)
